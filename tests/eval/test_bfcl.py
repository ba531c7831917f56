from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import FunctionModel, Message, ModelUnavailable, ScriptedModel, ToolSpec, UserError
from bigloop.eval.bfcl import load_results, run_case, run_category, summarize
from bigloop.eval.bfcl_data import load_cases, to_json_schema
from bigloop.eval.bfcl_score import score


def test_bfcl_types_become_json_schema() -> None:
    doc = {
        "type": "dict",
        "properties": {
            "base": {"type": "integer", "description": "Base."},
            "ratio": {"type": "float"},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "anything": {"type": "any"},
            "options": {"type": "dict", "properties": {"fast": {"type": "boolean"}}},
            "mode": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["base", "ratio", "ghost"],
    }
    assert to_json_schema(doc) == {
        "type": "object",
        "properties": {
            "base": {"type": "integer", "description": "Base."},
            "ratio": {"type": "number"},
            "point": {"type": "array", "items": {"type": "number"}},
            "anything": {},
            "options": {"type": "object", "properties": {"fast": {"type": "boolean"}}},
            "mode": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["base", "ratio"],
    }
    java = to_json_schema({"type": "dict", "properties": {"n": {"type": "long"}}}, "java")
    assert java["properties"]["n"] == {"type": "string"}


def test_scoring_uses_bfcl_checker() -> None:
    case = load_cases("simple_python", 1)[0]
    assert case.id == "simple_python_0"
    good = score(case, [("calculate_triangle_area", {"base": 10, "height": 5})])
    assert good.valid and good.error_type is None
    wrong = score(case, [("calculate_triangle_area", {"base": 11, "height": 5})])
    assert not wrong.valid and wrong.error_type == "value_error:others"
    assert score(case, []).error_type == "simple_function_checker:wrong_count"
    irrelevant = load_cases("irrelevance", 1)[0]
    assert score(irrelevant, []).valid
    assert not score(irrelevant, [("f", {})]).valid


def test_loop_mode_adapts_types_and_repairs(tmp_path: Path) -> None:
    case = load_cases("simple_python", 1)[0]
    seen: list[str] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        if len(seen) == 1:
            return json.dumps({"name": "calculate_triangle_area", "arguments": {"base": 10}})
        return json.dumps(
            {"name": "calculate_triangle_area", "arguments": {"base": "10", "height": 5}}
        )

    result = asyncio.run(run_case(case, FunctionModel(reply), "loop"))
    assert "'height' is a required property" in seen[1]
    assert result.valid and result.repairs == 1 and result.valid_calls
    assert result.calls == [["calculate_triangle_area", {"base": 10, "height": 5}]]


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


def test_bad_category_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="Unknown or unsupported BFCL category 'simple_rust'"):
        load_cases("simple_rust")


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
