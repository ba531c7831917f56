"""bench/cascade_replay.py over two tiny recorded runs: the escalated tasks take the strong
run's verdict and add its seconds; the oracle escalates exactly the tasks it would win."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "cascade_replay", ROOT / "bench/cascade_replay.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(id: str, passed: bool, seconds: float, *, asked: bool = False) -> dict[str, object]:
    return {
        "id": id,
        "split": "test",
        "passed": passed,
        "seconds": seconds,
        "asked": asked,
        "notes": [],
        "trace": [],
        "tool_calls": 1,
        "model_turns": 2,
    }


def test_escalated_tasks_take_the_strong_verdict_and_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cheap = [_row("a", True, 1), _row("b", False, 1, asked=True), _row("c", False, 2)]
    strong = [_row("a", False, 4), _row("b", True, 4), _row("c", True, 2)]
    for name, rows in (("cheap", cheap), ("strong", strong)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _replay().main(str(tmp_path / "cheap.jsonl"), str(tmp_path / "strong.jsonl"))
    lines = capsys.readouterr().out.splitlines()
    assert "| never (cheap alone) | 0 | - | 1/3 | 0.40x |" in lines
    assert "| asked the user | 1 | 1 | 2/3 | 0.80x |" in lines  # b: 4 s more, now right
    assert "| oracle | 2 | 2 | 3/3 | 1.00x |" in lines  # b and c
