"""BFCL on the real embedded model, a few cases: the eval path end to end, both modes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bigloop_eval.bfcl import run_category
from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_results import Mode, summarize

from bigloop import LocalModel

pytestmark = pytest.mark.real


def test_first_simple_python_cases_both_modes(tmp_path: Path) -> None:
    model = LocalModel()
    cases = load_cases("simple_python", 3)
    modes: tuple[Mode, ...] = ("raw", "loop")
    for mode in modes:
        results = asyncio.run(run_category(cases, model, mode, tmp_path / f"{mode}.jsonl"))
        summary = summarize(results)
        assert summary["cases"] == 3
        assert summary["valid_call_rate"] == 1.0
        assert results[0].valid, results[0].raw  # "triangle, base 10, height 5": both get it
        assert all(r.prompt_tokens > 0 for r in results)
