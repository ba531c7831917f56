from __future__ import annotations

import ast
import asyncio
import json
from typing import Any

from bigloop_eval.bfcl_data import to_json_schema
from bigloop_eval.bfcl_multi import call_string, load_multi_cases, run_multi_case

from bigloop import FunctionModel, Message, ToolSpec


def parse_call(text: str, tools: list[ToolSpec]) -> dict[str, Any]:
    """A ground-truth call string as a tool call; positional arguments get their names."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    names = next(
        (list(t.parameters.get("properties", {})) for t in tools if t.name == node.func.id), []
    )
    args = {names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args |= {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    return {"name": node.func.id, "arguments": args}


def oracle(answer: list[list[str]]) -> FunctionModel:
    """A model that makes each turn's ground-truth calls, then says it is done."""

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        turn = sum(1 for m in messages if m.role == "user" and m.name is None) - 1
        if messages[-1].role == "tool":
            return json.dumps({"answer": "done"})
        calls = [parse_call(c, tools) for c in answer[turn]]
        return json.dumps({"tool_calls": calls}) if calls else json.dumps({"answer": "cannot"})

    return FunctionModel(reply)


def test_call_string_is_python_call_syntax() -> None:
    assert call_string("mv", {"source": "a.pdf", "n": 2, "f": True}) == (
        "mv(source='a.pdf', n=2, f=True)"
    )


def test_ground_truth_calls_pass_through_the_simulation_and_checker() -> None:
    case = load_multi_cases("multi_turn_base", 1)[0]
    assert case.id == "multi_turn_base_0" and len(case.turns) == 4
    assert "cp" not in {d["name"] for d in case.functions(0)}, "excluded functions stay hidden"
    result = asyncio.run(run_multi_case(case, oracle(case.answer), "loop"))
    assert result.valid, (result.error_type, result.calls)
    assert json.loads(result.calls[0][0])[:2] == ["cd(folder='document')", "mkdir(dir_name='temp')"]


def test_wrong_calls_fail_the_state_check() -> None:
    case = load_multi_cases("multi_turn_base", 1)[0]
    wrong = [["mkdir(dir_name='elsewhere')"]] * len(case.answer)
    result = asyncio.run(run_multi_case(case, oracle(wrong), "loop"))
    assert not result.valid
    assert result.error_type is not None and result.error_type.startswith("multi_turn:")


def test_missed_functions_appear_at_their_turn() -> None:
    case = load_multi_cases("multi_turn_miss_func", 1)[0]
    assert "sort" not in {d["name"] for d in case.functions(0)}
    assert "sort" in {d["name"] for d in case.functions(3)}


def graph_oracle(case: Any) -> FunctionModel:
    """A planner that plans each turn's ground-truth calls, then answers when joining."""
    requests = ["\n".join(m["content"] for m in turn) for turn in case.turns]

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if messages[-1].content.startswith("Results of the steps"):
            return json.dumps({"answer": "done"})
        turn = requests.index(messages[-1].content)
        specs = [
            ToolSpec(name=d["name"], parameters=to_json_schema(d["parameters"]))
            for d in case.functions(turn)
        ]
        calls = [parse_call(c, specs) for c in case.answer[turn]]
        steps = [{"tool": c["name"], "arguments": c["arguments"]} for c in calls]
        return json.dumps({"steps": steps})

    return FunctionModel(reply)


def test_graph_planner_keeps_stateful_calls_in_order() -> None:
    case = load_multi_cases("multi_turn_base", 1)[0]
    result = asyncio.run(run_multi_case(case, graph_oracle(case), "graph"))
    assert result.valid, (result.error_type, result.calls)


def test_clarify_counts_turns_that_asked() -> None:
    case = load_multi_cases("multi_turn_base", 1)[0]

    def guesser(messages: list[Message], tools: list[ToolSpec]) -> str:
        told = messages[-1].content  # sent back once as not in the request: insists
        if messages[-1].role == "tool" and not told.startswith("Error: cd: folder="):
            return json.dumps({"answer": "done"})
        call = {"name": "cd", "arguments": {"folder": "zz_nowhere"}}
        return json.dumps({"tool_calls": [call]})

    result = asyncio.run(run_multi_case(case, FunctionModel(guesser), "loop", clarify=True))
    assert result.asked == len(case.turns)  # the folder was never mentioned: it asks
    assert not result.valid
