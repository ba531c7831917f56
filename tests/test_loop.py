from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from bigloop import (
    Budget,
    FunctionModel,
    Loop,
    Message,
    ScriptedModel,
    ToolSpec,
    TraceStore,
    UserError,
    tool,
)
from bigloop.atoms.builtin import calculator


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


@tool
def lookup(city: str) -> str:
    """Weather in a city."""
    return {"Oslo": "cold", "Rome": "warm"}[city]


def test_tool_call_then_answer_transcript() -> None:
    model = ScriptedModel([call("calculator", expression="(45 + 12) / 3"), answer("19")])
    result = Loop(model, [calculator]).run_sync("What is (45 + 12) / 3?")
    assert result.status == "ok"
    assert result.answer == "19"
    assert [(s.kind, s.name, s.output, s.error) for s in result.steps] == [
        ("model", "scripted", call("calculator", expression="(45 + 12) / 3"), None),
        ("tool", "calculator", "19", None),
        ("model", "scripted", answer("19"), None),
    ]


def test_model_sees_tools_and_results() -> None:
    seen: list[tuple[list[Message], list[ToolSpec]]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append((list(messages), tools))
        return call("lookup", city="Rome") if len(seen) == 1 else answer("warm")

    Loop(FunctionModel(reply), [calculator, lookup], system="Be brief.").run_sync(
        "Weather in Rome?"
    )
    first_messages, first_tools = seen[0]
    assert [m.role for m in first_messages] == ["system", "user"]
    assert {t.name for t in first_tools} == {"calculator", "lookup"}
    assert first_tools[0].name == "lookup", "the tool relevant to the task comes first"
    last_messages, _ = seen[1]
    assert (last_messages[-1].role, last_messages[-1].content) == ("tool", "warm")


def test_parallel_calls_in_one_turn() -> None:
    both = json.dumps(
        {
            "tool_calls": [
                {"name": "lookup", "arguments": {"city": "Oslo"}},
                {"name": "lookup", "arguments": {"city": "Rome"}},
            ]
        }
    )
    loop = Loop(ScriptedModel([both, answer("cold, warm")]), [lookup], planner="react")
    result = loop.run_sync("Oslo and Rome?")
    # Steps are recorded as calls complete; the conversation lists results in call order.
    assert sorted(s.output for s in result.tool_steps) == ["cold", "warm"]
    assert [m.content for m in result.messages if m.role == "tool"] == ["cold", "warm"]


def test_invalid_calls_are_repaired_by_feedback() -> None:
    transcript: list[str] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        transcript.append(messages[-1].content)
        script = [
            '{"name": "calculator", "arguments": {"expression": 3 * 4}}',  # broken JSON
            call("calc", expression="3*4"),  # unknown tool
            call("calculator", expr="3*4"),  # bad argument name
            call("calculator", expression="3*4"),
            answer("12"),
        ]
        return script[len(transcript) - 1]

    result = Loop(FunctionModel(reply), [calculator]).run_sync("3 times 4?")
    assert result.status == "ok" and result.answer == "12"
    assert "not valid JSON" in transcript[1]
    assert "There is no tool named 'calc'. Available tools: calculator." in transcript[2]
    assert "expression: Field required; expr: not a parameter" in transcript[3]
    errors = [s.error for s in result.steps if s.error]
    assert errors == ["malformed_reply", "unknown_tool", "invalid_arguments"]


def test_repairs_are_bounded() -> None:
    model = ScriptedModel([call("nope")] * 10)
    result = Loop(model, [calculator], budget=Budget(max_repairs=2)).run_sync("x")
    assert result.status == "budget_exceeded"
    assert "3 invalid calls" in (result.error or "")
    assert len(result.tool_steps) == 3


def test_the_same_malformed_reply_after_its_correction_ends_the_run() -> None:
    cut = '{"tool_calls": [{"name": "calculator", "arguments": {"expression": "5941' + "0" * 40
    replies = [cut, cut, cut]
    model = ScriptedModel(replies)
    result = Loop(model, [calculator]).run_sync("How many atoms?")
    assert result.status == "failed"
    assert "same malformed reply after a correction" in (result.error or "")
    assert sum(s.kind == "model" for s in result.steps) == 2  # not the third
    changed = ScriptedModel(['{"answer": 1', '{"answer": 12', answer("12")])
    assert Loop(changed, [calculator]).run_sync("Say 12.").answer == "12"  # repaired


def test_step_token_and_time_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    endless = FunctionModel(lambda m, t: call("lookup", city="Oslo" if len(m) % 4 else "Rome"))
    by_steps = Loop(endless, [lookup], budget=Budget(max_steps=3, max_repairs=99)).run_sync("x")
    assert by_steps.status == "budget_exceeded" and by_steps.error == "No answer within 3 steps."
    assert sum(s.kind == "model" for s in by_steps.steps) == 3

    by_tokens = Loop(endless, [lookup], budget=Budget(max_tokens=1, max_repairs=99)).run_sync("x")
    assert by_tokens.error == "Token budget of 1 used up."

    clock = [1000.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def slow(messages: list[Message], tools: list[ToolSpec]) -> str:
        clock[0] += 1.0  # each turn takes a second of the (fake) clock
        return call("lookup", city="Oslo" if len(messages) % 4 else "Rome")

    by_time = Loop(
        FunctionModel(slow),
        [lookup],
        budget=Budget(max_seconds=2.5, max_steps=100, max_repairs=99),
    ).run_sync("x")
    assert by_time.error == "Time budget of 2.5 s used up."
    assert sum(s.kind == "model" for s in by_time.steps) == 3


def test_tool_errors_and_timeouts_become_observations() -> None:
    @tool(timeout_s=0.05)
    async def hang() -> str:
        """Never returns in time."""
        await asyncio.sleep(10)
        return "late"

    result = Loop(
        ScriptedModel([call("hang"), call("lookup", city="Paris"), answer("sorry")]), [hang, lookup]
    ).run_sync("x")
    assert result.status == "ok"
    assert [s.output for s in result.tool_steps] == [
        "Error: Tool 'hang' timed out after 0.05 s.",
        "Error: Tool 'lookup' failed: KeyError: 'Paris'",
    ]


def test_repeated_call_is_answered_from_memory_then_answer_is_asked_for() -> None:
    calls: list[str] = []

    @tool
    def counted(x: int) -> int:
        """Counts its calls."""
        calls.append("x")
        return x * 2

    seen_tools: list[int] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen_tools.append(len(tools))
        return call("counted", x=2) if tools else answer("4")

    result = Loop(FunctionModel(reply), [counted]).run_sync("double 2")
    assert result.answer == "4"
    assert calls == ["x"], "the repeated call is not run again"
    assert seen_tools == [1, 1, 0], "after a repeat the model is asked for the answer only"
    assert [s.error for s in result.tool_steps] == [None, "repeated"]


def test_model_failure_ends_the_run_with_its_message() -> None:
    result = Loop(ScriptedModel([]), [calculator]).run_sync("x")
    assert result.status == "failed"
    assert result.error == "scripted: the script has no more replies."


def test_an_empty_task_fails_fast(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    for task in ("", "  \n "):
        with pytest.raises(UserError, match="The task is empty"):
            Loop(ScriptedModel([answer("?")]), [calculator], store=store).run_sync(task)
    assert store.runs() == []  # nothing recorded


def test_duplicate_tool_names_fail_fast() -> None:
    with pytest.raises(UserError, match="share the name"):
        Loop(ScriptedModel([]), [calculator, calculator])


def test_trace_written_and_resume_skips_completed_calls(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    runs: list[str] = []

    @tool(idempotent=False, effect="write")
    def charge(amount: int) -> str:
        """Charge a card."""
        runs.append(f"charge {amount}")
        return "charged"

    two = json.dumps(
        {
            "tool_calls": [
                {"name": "charge", "arguments": {"amount": 5}},
                {"name": "lookup", "arguments": {"city": "Oslo"}},
            ]
        }
    )
    crash = ScriptedModel([two])  # then the model "dies"
    first = Loop(crash, [charge, lookup], store=store).run_sync("pay and check weather")
    assert first.status == "failed"
    stored = store.steps(first.run_id)
    assert (stored[0].kind, stored[0].output) == ("model", two)
    assert sorted((s.kind, s.name, s.output) for s in stored[1:]) == [
        ("tool", "charge", "charged"),
        ("tool", "lookup", "cold"),
    ]
    resumed = Loop(ScriptedModel([answer("done")]), [charge, lookup], store=store).resume(
        first.run_id[:6]
    )
    result = asyncio.run(resumed)
    assert result.status == "ok" and result.answer == "done"
    assert runs == ["charge 5"], "a completed call is never repeated by a resume"
    summary = store.run(first.run_id)
    assert (summary.status, summary.answer, summary.steps, summary.tool_calls) == (
        "ok",
        "done",
        4,
        2,
    )


def test_resume_runs_calls_the_crash_left_pending(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    two = json.dumps(
        {
            "tool_calls": [
                {"name": "lookup", "arguments": {"city": "Oslo"}},
                {"name": "lookup", "arguments": {"city": "Rome"}},
            ]
        }
    )
    first = Loop(ScriptedModel([two]), [lookup], store=store).run_sync("both")
    # Simulate a kill after the model step and the first tool step were committed.
    store._db.execute("DELETE FROM steps WHERE run_id = ? AND idx = 2", (first.run_id,))
    result = asyncio.run(
        Loop(ScriptedModel([answer("ok")]), [lookup], store=store).resume(first.run_id)
    )
    assert [(s.index, s.name, s.output) for s in result.steps if s.kind == "tool"] == [
        (1, "lookup", "cold"),
        (2, "lookup", "warm"),
    ]


def test_values_copied_from_the_tool_docs_are_sent_back() -> None:
    @tool
    def weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city, e.g. "San Francisco, CA".
        """
        return f"sunny in {city}"

    result = Loop(
        ScriptedModel(
            [
                call("weather", city="San Francisco, CA"),
                call("weather", city="Moscow"),
                answer("sunny"),
            ]
        ),
        [weather],
    ).run_sync("Weather in Moscow?")
    assert [(s.input, s.error) for s in result.tool_steps] == [
        ({"city": "San Francisco, CA"}, "invalid_arguments"),
        ({"city": "Moscow"}, None),
    ]
    assert "is the example from the tool's description" in str(result.tool_steps[0].output)
    # The same value is fine when the user asked for it.
    ok = Loop(
        ScriptedModel([call("weather", city="San Francisco, CA"), answer("sunny")]),
        [weather],
        planner="react",  # auto reads "San Francisco, CA" as two items: a graph
    ).run_sync("Weather in San Francisco, CA?")
    assert [s.error for s in ok.tool_steps] == [None]


def test_top_k_offers_only_the_most_relevant_tools() -> None:
    seen: list[list[str]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append([t.name for t in tools])
        return answer("ok")

    Loop(FunctionModel(reply), [calculator, lookup], top_k=1).run_sync("weather in Oslo")
    assert seen == [["lookup"]]
