"""`bench/do_no_harm.py` in CI's smoke form: right calls pass the default loop unchanged.

The first 10 conversations of the test half (odd ids) of each BFCL multi-turn category,
replayed through `Loop.from_config(LoopConfig())` with the conversation carried as
history: at least 99% of their ground-truth calls are made exactly as written (the
whole benchmark's figure is in bench/results/do_no_harm/README.md).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
do_no_harm: Any = importlib.import_module("do_no_harm")


def test_right_calls_pass_the_default_loop_unchanged() -> None:
    from bigloop_eval.bfcl_multi import load_multi_cases

    rows = []
    for category in do_no_harm.CATEGORIES:
        test_half = load_multi_cases(category, 20)[1::2]
        for system in (None, do_no_harm.SYSTEM):
            rows += [asyncio.run(do_no_harm.replay_case(c, system)) for c in test_half]
    summary = do_no_harm.summarize(rows)
    assert summary["calls"] > 100
    assert summary["unchanged_pct"] >= 99.0, summary


def test_right_calls_pass_the_code_planner_unchanged(sandbox: None) -> None:
    """The same replay under `planner="code"`: each right call as a program of its own
    goes through the bridge and the loop's checks as written."""
    from bigloop_eval.bfcl_multi import load_multi_cases

    rows = []
    for category in do_no_harm.CATEGORIES:
        test_half = load_multi_cases(category, 6)[1::2]
        policies = {"planner": "code", "clarify": "missing", "off": []}
        rows += [
            asyncio.run(do_no_harm.replay_case(c, do_no_harm.SYSTEM, policies)) for c in test_half
        ]
    summary = do_no_harm.summarize(rows)
    assert summary["calls"] > 30
    assert summary["unchanged_pct"] >= 99.0, summary
