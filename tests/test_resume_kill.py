"""kill -9 at random moments, then resume: nothing lost, nothing completed done twice, no
non-idempotent call started twice (bench/resume_kill.py runs more trials)."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
resume_kill: Any = importlib.import_module("resume_kill")


@pytest.mark.parametrize("planner", ["react", "graph"])
def test_killed_runs_resume_without_loss_or_repeats(planner: str, tmp_path: Path) -> None:
    span = resume_kill.calibrate(planner)
    rng = random.Random(7)
    kills = 0
    for n in range(3):
        folder = tmp_path / str(n)
        folder.mkdir()
        row = resume_kill.trial(planner, folder, rng, span)
        assert row["status"] == "ok", row
        assert row["completed_calls"] == 2 * resume_kill.ITEMS, row
        assert (row["lost"], row["repeated"], row["charged_twice"]) == (0, 0, 0), row
        kills += row["kills"]
    assert kills >= 2  # the runs really were killed
