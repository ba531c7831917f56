"""The graph planner's plumbing, driven by scripted models (quality is measured in
bench/parallel.py on the embedded model)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bigloop import (
    AtomCard,
    Budget,
    FunctionModel,
    Loop,
    Message,
    ModelSettings,
    RunResult,
    ScriptedModel,
    ToolSpec,
    TraceStore,
    tool,
)
from bigloop.planners.graph import GraphPlanner

CALLS: list[str] = []


@tool
async def slow_price(city: str) -> float:
    """Price of a coffee in a city, from a slow remote API.

    Args:
        city: the city.
    """
    CALLS.append(city)
    await asyncio.sleep(0.3)
    if city == "Atlantis":
        raise KeyError(city)
    return {"Oslo": 5.0, "Rome": 2.0, "Lima": 1.5}[city]


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def plan(*steps: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"steps": [{"tool": t, "arguments": a} for t, a in steps]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def setup_function() -> None:
    CALLS.clear()


def test_independent_steps_run_concurrently_and_references_resolve() -> None:
    model = ScriptedModel(
        [
            plan(
                ("slow_price", {"city": "Oslo"}),
                ("slow_price", {"city": "Rome"}),
                ("add", {"a": "$1", "b": "$2"}),
            ),
            answer("7.0"),
        ]
    )
    result = Loop(model, [slow_price, add], planner="graph").run_sync("Oslo plus Rome coffee?")
    assert result.status == "ok" and result.answer == "7.0"
    first, second = result.tool_steps[:2]
    assert second.started_at < first.started_at + first.seconds  # ran at the same time
    tools = [(s.name, s.input, s.output) for s in result.tool_steps]
    assert sorted(tools[:2], key=str) == [
        ("slow_price", {"city": "Oslo"}, "5.0"),
        ("slow_price", {"city": "Rome"}, "2.0"),
    ]
    assert tools[2] == ("add", {"a": 5.0, "b": 2.0}, "7.0")
    assert result.planner == "graph"
    roles = [s.input["role"] for s in result.steps if s.kind == "model"]
    assert roles == ["plan", "join"]


def test_joiner_sees_results_and_the_task() -> None:
    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages)
        return plan(("slow_price", {"city": "Lima"})) if len(seen) == 1 else answer("1.5")

    Loop(FunctionModel(reply), [slow_price], planner="graph").run_sync("Coffee in Lima?")
    join = seen[1][-1].content
    assert "Answer my task from these results: Coffee in Lima?" in join
    assert '[1] slow_price({"city": "Lima"}) -> 1.5' in join


def test_invalid_plan_is_sent_back_and_replanned() -> None:
    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages)
        if len(seen) == 1:
            return plan(("add", {"a": "$5", "b": 1}))
        if len(seen) == 2:
            return plan(("slow_price", {"city": "Rome"}))
        return answer("2.0")

    planner = GraphPlanner(stream=False)
    result = Loop(FunctionModel(reply), [slow_price, add], planner=planner).run_sync("Rome?")
    assert result.answer == "2.0"
    assert "step 1 uses $5, but there is no such step" in seen[1][-1].content


def test_failed_step_triggers_a_replan_that_keeps_completed_work() -> None:
    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages)
        if len(seen) == 1:
            return plan(("slow_price", {"city": "Oslo"}), ("slow_price", {"city": "Atlantis"}))
        if len(seen) == 2:
            return plan(("slow_price", {"city": "Lima"}))
        return answer("Oslo 5.0, Lima 1.5")

    result = Loop(FunctionModel(reply), [slow_price], planner="graph").run_sync(
        "Coffee in Oslo and Atlantis?"
    )
    assert result.answer == "Oslo 5.0, Lima 1.5"
    assert CALLS.count("Oslo") == 1  # kept, not redone
    replan_prompt = seen[1][-1].content
    assert "Atlantis" in replan_prompt and "Error" in replan_prompt
    assert '"steps"' in seen[1][0].content  # the replanner may plan again


def test_streamed_plan_stops_when_the_model_repeats_itself() -> None:
    looping = plan(*[("slow_price", {"city": c}) for c in ["Oslo", "Rome", "Oslo", "Rome"]])
    model = ScriptedModel([looping[:-3], answer("ok")])  # truncated, as at max_tokens
    result = Loop(model, [slow_price], planner="graph").run_sync("Oslo and Rome?")
    assert result.status == "ok"
    assert sorted(CALLS) == ["Oslo", "Rome"]


def test_graph_run_resumes_without_redoing_completed_steps(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")

    joining = asyncio.Event()

    async def slow_joiner(messages: list[Message], tools: list[ToolSpec]) -> str:
        if messages[-1].content.startswith("Results of the steps"):
            joining.set()
            await asyncio.Event().wait()  # killed while the joiner thinks
        return plan(("slow_price", {"city": "Oslo"}), ("slow_price", {"city": "Lima"}))

    async def interrupted() -> str:
        loop = Loop(FunctionModel(slow_joiner), [slow_price], planner="graph", store=store)
        task = asyncio.ensure_future(loop.run("Coffee in Oslo and Lima?"))
        await joining.wait()  # both calls done and recorded; the joiner has not answered
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return store.runs()[0].run_id

    run_id = asyncio.run(interrupted())
    assert store.run(run_id).status == "interrupted"
    loop = Loop(ScriptedModel([answer("5.0 and 1.5")]), [slow_price], planner="graph", store=store)
    result = asyncio.run(loop.resume(run_id))
    assert result.status == "ok" and result.answer == "5.0 and 1.5"
    assert sorted(CALLS) == ["Lima", "Oslo"]  # nothing called twice


def test_structured_settings_reach_the_model() -> None:
    schemas: list[object] = []

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        schemas.append(settings.response_schema)
        return plan(("add", {"a": 1, "b": 2})) if len(schemas) == 1 else answer("3")

    Loop(FunctionModel(reply), [add], planner=GraphPlanner(stream=False)).run_sync("1+2?")
    assert schemas[0] is not None and "steps" in json.dumps(schemas[0])
    assert schemas[1] == {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }


def test_side_effects_keep_the_planned_order() -> None:
    log: list[str] = []

    @tool(idempotent=False, effect="write")
    async def cd(folder: str) -> str:
        """Change folder."""
        await asyncio.sleep(0.1)
        log.append(f"cd {folder}")
        return "ok"

    @tool
    async def ls(folder: str) -> str:
        """List a folder."""
        log.append(f"ls {folder}")
        return "a.txt"

    model = ScriptedModel(
        [
            plan(("ls", {"folder": "x"}), ("cd", {"folder": "docs"}), ("ls", {"folder": "y"})),
            answer("done"),
        ]
    )
    Loop(model, [cd, ls], planner="graph").run_sync("Go to docs and list it.")
    assert log == ["ls x", "cd docs", "ls y"]


def test_a_streamed_plan_is_held_to_the_cost_and_step_time_budgets() -> None:
    """The plan turn counts like any model turn, streamed or not (it once skipped the
    cost budget and the step time limit when streamed)."""
    card = AtomCard(name="paid", kind="model", cost=1.0)

    def run(stream: bool, budget: Budget | None = None) -> RunResult:
        model = ScriptedModel([plan(("add", {"a": 1, "b": 2})), answer("3")], card=card)
        planner = GraphPlanner(stream=stream)
        return Loop(model, [add], planner=planner, budget=budget).run_sync("1+2?")

    assert [run(stream).cost for stream in (True, False)] == [2.0, 2.0]
    for stream in (True, False):
        capped = run(stream, Budget(max_cost=1.0))
        assert (
            capped.status == "budget_exceeded" and capped.error == "Cost budget of 1 used up (1)."
        )

    async def never(messages: list[Message], tools: list[ToolSpec]) -> str:
        await asyncio.Event().wait()
        return answer("never")

    hung = Loop(
        FunctionModel(never), [add], planner="graph", budget=Budget(max_step_seconds=0.05)
    ).run_sync("1+2?")
    assert hung.status == "budget_exceeded"
    assert hung.error == "A model turn took longer than 0.05 s."


def test_steps_that_finish_together_are_recorded_in_plan_order() -> None:
    """Eight calls released at once finish in the same turn of the event loop; they are
    recorded (and numbered) in the order of the plan, not in the order of a set."""
    started: list[int] = []
    release = asyncio.Event()

    @tool
    async def together(n: int) -> int:
        """Wait for the others, then return n."""
        started.append(n)
        if len(started) == 8:
            release.set()
        await release.wait()
        return n

    steps = [("together", {"n": n}) for n in range(1, 9)]
    model = ScriptedModel([plan(*steps), answer("done")])
    result = Loop(model, [together], planner=GraphPlanner(stream=False)).run_sync("Eight at once.")
    assert result.status == "ok", result.error
    assert [(s.index, s.message.tool_call_id) for s in result.tool_steps if s.message] == [
        (n, f"${n}") for n in range(1, 9)
    ]


@tool
def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression."""
    return float(eval(expression, {"__builtins__": {}}))  # the test's own expressions


def test_a_joined_answer_left_unevaluated_goes_back_and_may_replan() -> None:
    model = ScriptedModel(
        [
            plan(("slow_price", {"city": "Oslo"}), ("slow_price", {"city": "Rome"})),
            answer("5.0 + 2.0"),  # a calculation, while a calculator is offered: sent back
            plan(("calculate", {"expression": "5.0 + 2.0"})),
            answer("7.0"),
        ]
    )
    tools = [slow_price, calculate]
    result = Loop(model, tools, planner="graph").run_sync("Oslo plus Rome coffee?")
    assert result.status == "ok" and result.answer == "7.0"
    assert [s.name for s in result.tool_steps][-1] == "calculate"


def test_auto_hands_tasks_to_the_code_planner_only_where_it_scored_higher_on_dev() -> None:
    from bigloop.planners.auto import CODE_OR_NOT, AutoPlanner, DevScore, code_chosen
    from bigloop.planners.react import ReactPlanner

    assert not code_chosen()  # the recorded figures: code 11/57, react/graph 26/57
    root = Path(__file__).resolve().parents[2]
    assert all(s.source.endswith(".dev.md") and (root / s.source).is_file() for s in CODE_OR_NOT)
    coder = ReactPlanner()
    coder.name = "code"
    built: list[str] = []

    def build() -> ReactPlanner:
        built.append("code")
        return coder

    measured = AutoPlanner(code=build)
    assert measured.choose("What is 2 + 2?").name == "react" and built == []
    flipped = (DevScore("react/graph", 8, 57, "a"), DevScore("code", 26, 57, "b"))
    assert AutoPlanner(code=build, scores=flipped).choose("What is 2 + 2?") is coder
    tie = (DevScore("react/graph", 8, 57, "a"), DevScore("code", 8, 57, "b"))
    assert not code_chosen(tie)
