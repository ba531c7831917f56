"""The repository stays small: no tracked file over 5 MB outside the package's model
folder (weights come from registry packages; adapters ship in the package or not at all),
and `bench/results` under 10 MB (per-case results are committed gzipped)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 5_000_000
MODELS = "src/bigloop/atoms/models/"
RESULTS_LIMIT = 10_000_000


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_over_5_mb_outside_the_model_folder() -> None:
    big = [
        f"{p.relative_to(ROOT)} ({p.stat().st_size / 1e6:.1f} MB)"
        for p in _tracked()
        if p.is_file() and p.stat().st_size > LIMIT
        if not str(p.relative_to(ROOT)).startswith(MODELS)
    ]
    assert big == []


def test_bench_results_stay_under_10_mb() -> None:
    results = ROOT / "bench" / "results"
    size = sum(p.stat().st_size for p in _tracked() if p.is_file() and p.is_relative_to(results))
    assert size < RESULTS_LIMIT, f"bench/results holds {size / 1e6:.1f} MB; gzip per-case files"
