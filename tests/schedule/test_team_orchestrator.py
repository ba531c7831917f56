"""Orchestrator–workers with scripted models: the coordinator's plan, delegations as
message steps (concurrent when independent), the merge, tool workers through a semantic
adapter, and a resumed run that does not redo finished work."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from bigloop import FunctionModel, Message, ModelSettings, ToolSpec, TraceStore, UserError, tool
from bigloop.team import Agent, Orchestrator
from bigloop.team.prompts import WITH_REQUEST


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def plan(*subtasks: dict[str, Any]) -> str:
    return json.dumps({"subtasks": list(subtasks)})


class Coordinator:
    """A coordinator model: replies by role (the plan, then the merge), and records what
    it was asked."""

    def __init__(self, plans: list[str], merged: str = "merged") -> None:
        self.plans = plans
        self.merged = merged
        self.asked: list[tuple[str, list[Message], ModelSettings]] = []

    def __call__(self, messages: list[Message], tools: list[ToolSpec], s: ModelSettings) -> str:
        schema = s.response_schema or {}
        role = "plan" if "subtasks" in schema.get("properties", {}) else "other"
        if role == "other" and "answer" in schema.get("properties", {}):
            role = "merge"
        self.asked.append((role, messages, s))
        if role == "plan":
            return self.plans.pop(0)
        if role == "merge":
            return answer(self.merged)
        raise AssertionError(f"unexpected coordinator turn: {schema}")

    def roles(self) -> list[str]:
        return [role for role, _, _ in self.asked]


def worker(name: str, reply: str, *, delay: float = 0.0, tasks: list[str] | None = None) -> Agent:
    async def respond(messages: list[Message], tools: list[ToolSpec]) -> str:
        if tasks is not None:
            tasks.append(messages[-1].content)
        await asyncio.sleep(delay)
        return answer(reply)

    return Agent(name, FunctionModel(respond, name=f"{name}-model"), description=f"{name} worker.")


def shared(request: str, part: str) -> str:
    return WITH_REQUEST.format(request=request, part=part)


def test_subtasks_go_to_the_workers_the_coordinator_picks_and_are_merged() -> None:
    coordinator = Coordinator(
        [
            plan(
                {"task": "Weather in Oslo today", "worker": "weather"},
                {"task": "Convert 3 miles to km", "worker": "units"},
            )
        ],
        merged="Oslo is 6 °C; 3 miles is 4.83 km.",
    )
    team = Orchestrator(
        FunctionModel(coordinator, name="boss"),
        [worker("weather", "6 °C", delay=0.4), worker("units", "4.83 km", delay=0.4)],
    )
    start = time.perf_counter()
    result = team.run_sync("How warm is Oslo, and how many km are 3 miles?")
    assert time.perf_counter() - start < 0.75  # together: one after the other takes 0.8 s
    assert result.status == "ok" and result.answer == "Oslo is 6 °C; 3 miles is 4.83 km."
    assert result.planner == "orchestrator"
    trace = [(s.kind, s.name, (s.input or {}).get("text"), s.output) for s in result.steps]
    assert trace[0][:2] == ("model", "boss") and result.steps[0].input["role"] == "delegate"
    asked = "How warm is Oslo, and how many km are 3 miles?"
    assert sorted(trace[1:3]) == [
        ("message", "coordinator→units", shared(asked, "Convert 3 miles to km"), "4.83 km"),
        ("message", "coordinator→weather", shared(asked, "Weather in Oslo today"), "6 °C"),
    ]
    assert trace[3] == ("model", "boss", None, answer("Oslo is 6 °C; 3 miles is 4.83 km."))
    assert result.steps[3].input["role"] == "merge"
    assert coordinator.roles() == ["plan", "merge"]
    merge_prompt = coordinator.asked[1][1][-1].content
    assert "[1] Weather in Oslo today -> 6 °C" in merge_prompt
    assert "[2] Convert 3 miles to km -> 4.83 km" in merge_prompt
    plan_schema = coordinator.asked[0][2].response_schema or {}
    item = plan_schema["properties"]["subtasks"]["items"]
    assert item["properties"]["worker"] == {"enum": ["weather", "units"]}
    assert "weather: weather worker." in coordinator.asked[0][1][0].content


def test_a_subtask_that_needs_another_gets_its_result_and_waits_for_it() -> None:
    tasks: list[str] = []
    coordinator = Coordinator(
        [
            plan(
                {"task": "Price of the hotel in Paris", "worker": "prices"},
                {"task": "Convert the price to USD", "worker": "money", "needs": [1]},
            )
        ]
    )
    team = Orchestrator(
        FunctionModel(coordinator),
        [worker("prices", "120 EUR", delay=0.1), worker("money", "130 USD", tasks=tasks)],
    )
    result = team.run_sync("What does the Paris hotel cost in USD?")
    assert [s.name for s in result.steps if s.kind == "message"] == [
        "coordinator→prices",
        "coordinator→money",
    ]
    part = "Convert the price to USD\n\nResults you can use:\n[1] 120 EUR"
    assert tasks == [shared("What does the Paris hotel cost in USD?", part)]


def test_without_share_request_a_worker_sees_only_its_subtask() -> None:
    tasks: list[str] = []
    coordinator = Coordinator(
        [plan({"task": "Weather in Oslo", "worker": "a"}, {"task": "3 mi in km", "worker": "b"})]
    )
    workers = [worker("a", "6 °C", tasks=tasks), worker("b", "4.83 km", tasks=tasks)]
    team = Orchestrator(FunctionModel(coordinator), workers, share_request=False)
    team.run_sync("Oslo weather, and 3 miles in km?")
    assert sorted(tasks) == ["3 mi in km", "Weather in Oslo"]


def test_a_plan_of_one_subtask_hands_the_worker_the_users_own_words() -> None:
    tasks: list[str] = []
    coordinator = Coordinator(
        [plan({"task": "Get the area, perimeter and angles of a 3-4-5 triangle", "worker": "t"})]
    )
    team = Orchestrator(FunctionModel(coordinator), [worker("t", "6", tasks=tasks)])
    result = team.run_sync("Area of a triangle with sides 3, 4 and 5?")
    assert tasks == ["Area of a triangle with sides 3, 4 and 5?"]
    message = next(s for s in result.steps if s.kind == "message")
    assert message.input["text"] == "Area of a triangle with sides 3, 4 and 5?"


def test_one_subtask_is_answered_by_its_worker_without_a_merge() -> None:
    coordinator = Coordinator([plan({"task": "3 miles in km", "worker": "units"})])
    team = Orchestrator(FunctionModel(coordinator), [worker("units", "4.83 km")])
    result = team.run_sync("3 miles in km?")
    assert result.answer == "4.83 km"
    assert coordinator.roles() == ["plan"]


def test_no_subtasks_means_the_coordinator_answers_itself() -> None:
    coordinator = Coordinator([plan()], merged="Hello!")
    team = Orchestrator(FunctionModel(coordinator), [worker("units", "4.83 km")])
    result = team.run_sync("Say hello.")
    assert result.answer == "Hello!"
    assert "(no subtasks" in coordinator.asked[1][1][-1].content


def test_the_registry_picks_workers_by_their_cards() -> None:
    coordinator = Coordinator(
        [plan({"task": "Convert 3 miles to kilometres"}, {"task": "Forecast for Oslo weather"})]
    )
    units = Agent(
        "units",
        FunctionModel(lambda m, t: answer("4.83 km")),
        description="Converts units of length, weight and temperature.",
    )
    weather = Agent(
        "weather",
        FunctionModel(lambda m, t: answer("rain")),
        description="Weather forecasts for a city.",
    )
    team = Orchestrator(
        FunctionModel(coordinator), [weather, units], choose="registry", search="bm25"
    )
    result = team.run_sync("3 miles in km, and will it rain in Oslo?")
    assert [s.name for s in result.steps if s.kind == "message"] == [
        "coordinator→units",
        "coordinator→weather",
    ] or [s.name for s in result.steps if s.kind == "message"] == [
        "coordinator→weather",
        "coordinator→units",
    ]
    assert {(s.name, s.output) for s in result.steps if s.kind == "message"} == {
        ("coordinator→units", "4.83 km"),
        ("coordinator→weather", "rain"),
    }
    item = (coordinator.asked[0][2].response_schema or {})["properties"]["subtasks"]["items"]
    assert "worker" not in item["properties"]


@tool
def to_km(miles: float) -> str:
    """Convert miles to kilometres."""
    return f"{miles * 1.609344:.2f} km"


def test_a_tool_worker_gets_its_input_through_the_adapter() -> None:
    adapter_calls: list[ModelSettings] = []

    def model(messages: list[Message], tools: list[ToolSpec], s: ModelSettings) -> str:
        props = (s.response_schema or {}).get("properties", {})
        if "subtasks" in props:
            return plan({"task": "Convert 3 miles to kilometers", "worker": "to_km"})
        adapter_calls.append(s)
        assert messages[-1].content.endswith("Text:\n3 miles in km?")  # the user's words
        return json.dumps({"miles": 3})

    result = Orchestrator(FunctionModel(model, name="boss"), [to_km]).run_sync("3 miles in km?")
    assert result.answer == "4.83 km"
    assert [(s.kind, s.name) for s in result.steps] == [
        ("model", "boss"),
        ("adapt", "coordinator→to_km"),
        ("message", "coordinator→to_km"),
    ]
    assert result.steps[1].output == {"miles": 3.0}
    assert len(adapter_calls) == 1


def test_an_unreadable_plan_is_sent_back_once_then_the_whole_task_is_one_subtask() -> None:
    coordinator = Coordinator(
        [plan({"task": "x", "worker": "units", "needs": [1]}), "not json"],
    )
    tasks: list[str] = []
    team = Orchestrator(
        FunctionModel(coordinator),
        [worker("units", "4.83 km", tasks=tasks)],
        search="bm25",
    )
    result = team.run_sync("3 miles in km?")
    assert coordinator.roles() == ["plan", "plan"]
    assert "may only need earlier subtasks" in coordinator.asked[1][1][-1].content
    assert tasks == ["3 miles in km?"] and result.answer == "4.83 km"


def test_a_failing_worker_replies_with_its_error() -> None:
    def broken(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise RuntimeError("disk full")

    coordinator = Coordinator(
        [plan({"task": "a", "worker": "ok"}, {"task": "b", "worker": "broken"})], merged="partly"
    )
    team = Orchestrator(
        FunctionModel(coordinator),
        [worker("ok", "fine"), Agent("broken", FunctionModel(broken))],
    )
    result = team.run_sync("Do a and b.")
    assert result.status == "ok" and result.answer == "partly"
    failed = next(s for s in result.steps if s.name == "coordinator→broken")
    assert failed.error == "failed" and "disk full" in str(failed.output)


def test_a_resumed_run_does_not_redo_the_plan_or_finished_subtasks(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    calls: list[str] = []
    merges = {"n": 0}

    def boss(messages: list[Message], tools: list[ToolSpec], s: ModelSettings) -> str:
        if "subtasks" in (s.response_schema or {}).get("properties", {}):
            calls.append("plan")
            return plan({"task": "a", "worker": "first"}, {"task": "b", "worker": "second"})
        merges["n"] += 1
        if merges["n"] == 1:
            raise RuntimeError("power cut")
        calls.append("merge")
        return answer("a and b")

    def counting(name: str) -> Agent:
        def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
            calls.append(name)
            return answer(name.upper())

        return Agent(name, FunctionModel(reply))

    team = Orchestrator(FunctionModel(boss), [counting("first"), counting("second")], store=store)
    failed = team.run_sync("Do a and b.")
    assert failed.status == "failed" and "power cut" in (failed.error or "")
    assert sorted(calls) == ["first", "plan", "second"]
    calls.clear()
    resumed = asyncio.run(team.resume(failed.run_id))
    assert resumed.status == "ok" and resumed.answer == "a and b"
    assert calls == ["merge"]
    stored = store.result(failed.run_id)
    assert [(s.index, s.kind) for s in stored.steps] == [
        (0, "model"),
        (1, "message"),
        (2, "message"),
        (3, "model"),
    ]
    assert stored.answer == "a and b"
    # Each worker's own run is in the same store, named by its message.
    sub = stored.steps[1].input["run"]
    assert store.run(sub).answer in ("FIRST", "SECOND")
    again = asyncio.run(team.resume(failed.run_id))  # finished: nothing runs
    assert again.answer == "a and b" and calls == ["merge"]


def test_misconfigured_teams_fail_fast() -> None:
    model = FunctionModel(lambda m, t: answer("x"))
    with pytest.raises(UserError, match="at least one worker"):
        Orchestrator(model, [])
    with pytest.raises(UserError, match="share the name"):
        Orchestrator(model, [worker("a", "x"), worker("a", "y")])
    with pytest.raises(UserError, match="needs its TraceStore"):
        asyncio.run(Orchestrator(model, [worker("a", "x")]).resume("abc"))


def test_without_a_merge_the_answer_is_the_results() -> None:
    coordinator = Coordinator(
        [plan({"task": "a", "worker": "one"}, {"task": "b", "worker": "two"})]
    )
    team = Orchestrator(
        FunctionModel(coordinator), [worker("one", "A"), worker("two", "B")], merge=False
    )
    assert team.run_sync("a and b").answer == "A\nB"
    assert coordinator.roles() == ["plan"]


def test_with_choose_call_the_coordinator_calls_its_workers_as_tools() -> None:
    made: list[dict[str, Any]] = []

    @tool
    def area(width: float, height: float) -> float:
        """Area of a rectangle."""
        made.append({"width": width, "height": height})
        return width * height

    offered: list[list[ToolSpec]] = []

    def boss(messages: list[Message], tools: list[ToolSpec], s: ModelSettings) -> str:
        if not tools:  # the merge
            return answer("6 and 6 °C")
        offered.append(tools)
        calls = [
            {"name": "area", "arguments": {"width": 2, "height": 3}},
            {"name": "weather", "arguments": {"task": "Weather in Oslo"}},
            {"name": "nobody", "arguments": {}},  # not a worker: left out
        ]
        return json.dumps({"tool_calls": calls})

    tasks: list[str] = []
    team = Orchestrator(
        FunctionModel(boss, name="boss"),
        [area, worker("weather", "6 °C", tasks=tasks)],
        choose="call",
        share_request=False,
    )
    result = team.run_sync("Area of 2 by 3, and the weather in Oslo?")
    assert result.status == "ok" and result.answer == "6 and 6 °C"
    assert made == [{"width": 2, "height": 3}]  # the coordinator's own arguments
    assert tasks == ["Weather in Oslo"]
    (specs,) = offered
    assert [t.name for t in specs] == ["area", "weather"]
    assert specs[0].parameters == area.schema
    assert specs[1].parameters["required"] == ["task"]
    assert specs[1].description == "weather worker."
    assert not any(s.kind == "adapt" for s in result.steps)  # no adapter: calls as made
    delegated = [s.name for s in result.steps if s.kind == "message"]
    assert sorted(delegated) == ["coordinator→area", "coordinator→weather"]


def test_with_choose_call_a_coordinator_that_calls_nobody_answers_itself() -> None:
    def boss(messages: list[Message], tools: list[ToolSpec], s: ModelSettings) -> str:
        return answer("Hello!")

    team = Orchestrator(FunctionModel(boss), [worker("units", "x")], choose="call")
    result = team.run_sync("Say hello.")
    assert result.status == "ok" and result.answer == "Hello!"
    assert not any(s.kind == "message" for s in result.steps)
