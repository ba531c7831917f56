"""The setup scripts: shellcheck-clean, written for macOS's bash 3.2 (no bash-4 syntax),
and their checks run first and fail with the fix."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "scripts" / "setup.sh", ROOT / "scripts" / "torch-cpu.sh"]

# Syntax that bash 3.2 (macOS's /bin/bash) does not have, or that breaks there under
# `set -u` (an empty array's "${a[@]}" is an unbound variable before bash 4.4).
BASH4 = {
    "associative array": r"\bdeclare\s+-A\b|\blocal\s+-A\b",
    "mapfile/readarray": r"\b(?:mapfile|readarray)\b",
    "case conversion": r"\$\{\w+(?:,,|\^\^|,|\^)\}",
    "array": r"\w+=\(|\$\{\w+\[[@*]\]",
    "|& or &>>": r"\|&|&>>",
    "coproc": r"\bcoproc\b",
    "case fall-through": r";;&|;&",
}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shellcheck_finds_nothing(script: Path) -> None:
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    if not Path(shellcheck).exists():
        pytest.skip("shellcheck is not installed (it comes with the dev extra)")
    out = subprocess.run([shellcheck, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_syntax_bash_3_2_lacks(script: Path) -> None:
    code = [line.split(" #")[0] for line in script.read_text().splitlines()]
    code = [line for line in code if not line.lstrip().startswith("#")]
    found = {
        what: [line for line in code if re.search(pattern, line)] for what, pattern in BASH4.items()
    }
    assert {what: lines for what, lines in found.items() if lines} == {}
    out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr


def _checks(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/setup.sh", "--check"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_checks_pass_here_before_anything_is_installed() -> None:
    out = _checks({})
    assert out.returncode == 0 and "checks passed" in out.stderr


def test_an_old_or_missing_python_fails_first_with_the_fix(tmp_path: Path) -> None:
    old = tmp_path / "python3"
    answers = 'case "$2" in *version_info*) exit 1;; *) echo 3.9.2;; esac'
    old.write_text(f'#!/bin/sh\nif [ "$1" = -c ]; then {answers}; fi\n')
    old.chmod(0o755)
    out = _checks({"PYTHON": str(old)})
    assert out.returncode == 1 and "needs Python 3.11 or newer" in out.stderr
    assert "3.9.2" in out.stderr
    missing = _checks({"PYTHON": "no-such-python"})
    assert missing.returncode == 1 and "PYTHON=python3.12" in missing.stderr


def test_an_unknown_option_is_refused_with_the_usage() -> None:
    out = subprocess.run(
        ["bash", "scripts/setup.sh", "--fast"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 2 and "usage:" in out.stderr
