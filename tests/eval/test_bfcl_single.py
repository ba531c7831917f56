"""Single-turn cases through the real `Loop`, driven by scripted models."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_single import run_case

from bigloop import FunctionModel, Message, ScriptedModel, ToolSpec, UserError

TRIANGLE = "calculate_triangle_area"


def call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_loop_mode_adapts_types_and_repairs() -> None:
    case = load_cases("simple_python", 1)[0]
    seen: list[str] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        if len(seen) == 1:
            return call(TRIANGLE, base=10)
        return call(TRIANGLE, base="10", height=5)

    result = asyncio.run(run_case(case, FunctionModel(reply), "loop"))
    assert "'height' is a required property" in seen[1]
    assert result.valid and result.repairs == 1 and result.valid_calls
    assert result.calls == [[TRIANGLE, {"base": 10, "height": 5}]]


def test_loop_mode_feeds_the_loops_error_back_as_a_tool_result() -> None:
    case = load_cases("simple_python", 1)[0]
    turns: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        turns.append(list(messages))
        if len(turns) == 1:
            return call(TRIANGLE, base=10, height="five")
        return call(TRIANGLE, base=10, height=5)

    result = asyncio.run(run_case(case, FunctionModel(reply), "loop"))
    first, second = turns
    assert [m.role for m in first] == ["user"]
    assert first[0].content == case.messages[-1]["content"]
    assert [m.role for m in second] == ["user", "assistant", "tool"]
    assert second[1].tool_calls[0].arguments == {"base": 10, "height": "five"}
    assert second[2].name == TRIANGLE and second[2].content.startswith("Error: ")
    assert "height" in second[2].content
    assert (result.valid, result.repairs) == (True, 1)
    assert result.calls == [[TRIANGLE, {"base": 10, "height": 5}]]
    assert len(result.raw) == 2


def test_a_run_stops_after_the_first_turn_whose_calls_were_all_made() -> None:
    case = load_cases("simple_python", 1)[0]
    model = ScriptedModel([call(TRIANGLE, base=10, height=5), call(TRIANGLE, base=1, height=1)])
    result = asyncio.run(run_case(case, model, "loop"))
    assert result.valid and result.repairs == 0 and result.error is None
    assert result.calls == [[TRIANGLE, {"base": 10, "height": 5}]]
    assert result.raw == [call(TRIANGLE, base=10, height=5)]  # the second reply never asked
    assert result.prompt_tokens > 0 and result.completion_tokens > 0


def test_an_unknown_function_is_corrected_and_only_made_calls_are_scored() -> None:
    case = load_cases("simple_python", 1)[0]
    replies = [
        json.dumps({"tool_calls": [{"name": "triangle_area", "arguments": {"base": 10}}]}),
        call(TRIANGLE, base=10, height=5),
    ]
    result = asyncio.run(run_case(case, ScriptedModel(replies), "loop"))
    assert (result.valid, result.repairs) == (True, 1)
    assert result.calls == [[TRIANGLE, {"base": 10, "height": 5}]]


def test_identical_calls_are_scored_once() -> None:
    case = load_cases("simple_python", 1)[0]
    twice = {"name": TRIANGLE, "arguments": {"base": 10, "height": 5}}
    model = ScriptedModel([json.dumps({"tool_calls": [twice, twice]})])
    result = asyncio.run(run_case(case, model, "loop"))
    assert result.valid
    assert result.calls == [[TRIANGLE, {"base": 10, "height": 5}]]


def test_a_model_that_stays_wrong_gets_max_repairs_corrections() -> None:
    case = load_cases("simple_python", 1)[0]
    asked: list[int] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        asked.append(len(messages))
        return call(TRIANGLE, base=10)

    result = asyncio.run(run_case(case, FunctionModel(reply), "loop", max_repairs=2))
    assert len(asked) == 3 and result.repairs == 3
    assert result.calls == [] and not result.valid
    assert result.error is None and result.error_type == "simple_function_checker:wrong_count"


def test_a_reply_without_calls_answers_an_irrelevant_request() -> None:
    case = load_cases("irrelevance", 1)[0]
    model = ScriptedModel([json.dumps({"answer": "None of the functions can do that."})])
    result = asyncio.run(run_case(case, model, "loop"))
    assert result.valid and result.calls == [] and result.repairs == 0


def test_earlier_messages_are_the_loops_history() -> None:
    case = load_cases("simple_python", 1)[0]
    system = {"role": "system", "content": "You are a geometry assistant."}
    case = dataclasses.replace(case, messages=[system, *case.messages])
    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        return call(TRIANGLE, base=10, height=5)

    result = asyncio.run(run_case(case, FunctionModel(reply), "loop"))
    assert [(m.role, m.content) for m in seen[0]] == [
        (m["role"], m["content"]) for m in case.messages
    ]
    assert result.valid


def test_raw_mode_scores_the_single_reply() -> None:
    case = load_cases("simple_python", 1)[0]
    model = ScriptedModel([call(TRIANGLE, base="10", height=5)])
    result = asyncio.run(run_case(case, model, "raw"))
    assert result.calls == [[TRIANGLE, {"base": "10", "height": 5}]]
    assert not result.valid_calls and result.repairs == 0


def test_graph_mode_is_for_multi_turn() -> None:
    case = load_cases("simple_python", 1)[0]
    with pytest.raises(UserError, match="--mode graph is for the multi-turn categories"):
        asyncio.run(run_case(case, ScriptedModel([]), "graph"))
