from __future__ import annotations

import json

from bigloop import Budget, FunctionModel, Loop, Message, ModelSettings, ToolSpec, tool
from bigloop.planners.search import SearchPlanner

CALLS: list[str] = []


@tool
def find_file(name: str) -> str:
    """Find a file by name and return its contents."""
    CALLS.append(name)
    files = {"notes.txt": "code 4721"}
    if name not in files:
        raise FileNotFoundError(name)
    return files[name]


def call(tool_name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": tool_name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def model_that_guesses_wrong_first() -> FunctionModel:
    """Greedy: a wrong file name; sampled: the right one. After a result: answer it."""

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        last = messages[-1]
        if last.role == "tool":
            return answer(f"I found: {last.content}")
        return call("find_file", name="notes.md" if settings.temperature == 0 else "notes.txt")

    return FunctionModel(reply)


def test_search_backtracks_from_a_failing_branch() -> None:
    CALLS.clear()
    loop = Loop(
        model_that_guesses_wrong_first(),
        [find_file],
        planner=SearchPlanner(width=2, max_nodes=4),
        budget=Budget(max_steps=20),
    )
    result = loop.run_sync("What is the code in my notes file?")
    assert result.status == "ok"
    assert result.answer == "I found: code 4721"
    assert sorted(CALLS) == ["notes.md", "notes.txt"]  # each branch's call made once
    assert result.planner == "search"


def test_react_on_the_same_model_commits_to_the_wrong_branch() -> None:
    CALLS.clear()
    result = Loop(model_that_guesses_wrong_first(), [find_file]).run_sync("Code in my notes?")
    assert "4721" not in (result.answer or "")


def test_search_gives_up_within_its_node_budget() -> None:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        return call("find_file", name=f"f{len(messages)}.txt")

    loop = Loop(
        FunctionModel(reply),
        [find_file],
        planner=SearchPlanner(width=1, max_nodes=3),
        budget=Budget(max_steps=50, max_repairs=50),
    )
    result = loop.run_sync("Find it.")
    assert result.status == "budget_exceeded"
    assert "3 expansions" in (result.error or "")
