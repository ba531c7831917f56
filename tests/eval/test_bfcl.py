from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from bigloop_eval.bfcl import run_category
from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_results import load_results, summarize

from bigloop import FunctionModel, Message, ModelUnavailable, ScriptedModel, ToolSpec, UserError


def test_garbage_and_failing_models_fail_the_case_not_the_run(tmp_path: Path) -> None:
    cases = load_cases("simple_python", 3)

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if "factorial" in messages[-1].content:
            raise ModelUnavailable("timed out")
        return "I like turtles {{{"

    path = tmp_path / "r.jsonl"
    results = asyncio.run(run_category(cases, FunctionModel(reply), "loop", path))
    assert [r.valid for r in results] == [False, False, False]
    assert [r.error_type for r in results] == [
        "simple_function_checker:wrong_count",
        "model_error",
        "simple_function_checker:wrong_count",
    ]
    assert results[1].error == "timed out"
    summary = summarize(results)
    assert summary["cases"] == 3 and summary["accuracy"] == 0.0


def test_interrupted_eval_resumes_without_rescoring(tmp_path: Path) -> None:
    cases = load_cases("simple_python", 4)
    path = tmp_path / "r.jsonl"
    answer = json.dumps({"answer": "no idea"})
    asyncio.run(run_category(cases[:2], ScriptedModel([answer] * 2), "raw", path))
    # Only two replies left: a rerun over all four must not call the model for the first two.
    results = asyncio.run(run_category(cases, ScriptedModel([answer] * 2), "raw", path))
    assert [r.id for r in results] == [c.id for c in cases]
    assert len(path.read_text().splitlines()) == 4
    assert set(load_results(path)) == {c.id for c in cases}


def test_workers_run_cases_concurrently(tmp_path: Path) -> None:
    active = [0, 0]

    async def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        active[0] += 1
        active[1] = max(active[1], active[0])
        await asyncio.sleep(0.01)
        active[0] -= 1
        return json.dumps({"answer": "x"})

    cases = load_cases("simple_python", 6)
    results = asyncio.run(
        run_category(cases, FunctionModel(reply), "loop", tmp_path / "r.jsonl", workers=3)
    )
    assert len(results) == 6
    assert active[1] == 3


def test_two_runs_cannot_write_one_results_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    cases = load_cases("simple_python", 1)

    async def both() -> None:
        slow_started = asyncio.Event()

        async def slow(messages: list[Message], tools: list[ToolSpec]) -> str:
            slow_started.set()
            await asyncio.sleep(0.05)
            return json.dumps({"answer": "x"})

        first = asyncio.create_task(run_category(cases, FunctionModel(slow), "raw", path))
        await slow_started.wait()
        with pytest.raises(UserError, match="Another eval is writing"):
            await run_category(cases, FunctionModel(slow), "raw", path)
        await first

    asyncio.run(both())
    assert len(path.read_text().splitlines()) == 1
