"""What the benchmarks that write a markdown report share: the revision they measured,
and writing the report beside printing it."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def revision() -> str:
    """The checkout's short commit id (what a result file names)."""
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    return done.stdout.strip()


def write_report(path: Path, lines: list[str]) -> None:
    """Write `lines` to `path` (its folder made) and print them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
