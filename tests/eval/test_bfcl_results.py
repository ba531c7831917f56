from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from bigloop_eval.bfcl_results import CaseResult, load_results, results_path, summarize


def result(id: str, *, valid: bool, repairs: int = 0, seconds: float = 1.0) -> CaseResult:
    return CaseResult(
        id=id,
        category="simple_python",
        mode="loop",
        valid=valid,
        error_type=None if valid else "value_error:others",
        calls=[],
        valid_calls=True,
        repairs=repairs,
        seconds=seconds,
    )


def test_results_round_trip_through_their_file(tmp_path: Path) -> None:
    path = results_path(tmp_path, "org/model:q4", "loop", "simple_python")
    assert path == tmp_path / "org_model_q4" / "loop" / "simple_python.jsonl"
    assert load_results(path) == {}
    path.parent.mkdir(parents=True)
    rows = [result("a", valid=True), result("b", valid=False, repairs=2)]
    path.write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows))
    assert load_results(path) == {"a": rows[0], "b": rows[1]}


def test_summary_counts_accuracy_repairs_and_errors() -> None:
    assert summarize([]) == {"cases": 0}
    summary = summarize([result("a", valid=True), result("b", valid=False, repairs=2, seconds=3.0)])
    assert summary["cases"] == 2 and summary["accuracy"] == 0.5
    assert summary["repaired"] == 1 and summary["p50_s"] == 3.0
    assert summary["errors"] == {"value_error:others": 1}
