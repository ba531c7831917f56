"""Decisions are data: refusals and questions are typed records, the wording is rendered
from them, and every policy has one name that switches it off."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from bigloop import Clarify, Loop, LoopConfig, ScriptedModel, TraceStore, UserError, tool
from bigloop.parts import NAMES, PARTS, Policies
from bigloop.planners.rules import call_fragment
from bigloop.policies import wording
from bigloop.trace.records import Reason

SRC = Path(__file__).resolve().parents[2] / "src" / "bigloop"


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


@tool
def weather(city: str) -> str:
    """Current weather of a city.

    Args:
        city: the city, e.g. San Francisco.
    """
    return f"sunny in {city}"


def test_no_module_decides_by_reading_text_another_wrote() -> None:
    # the old markers, and decisions made by searching a message's or an output's text
    banned = [
        r"\bNOWHERE\s+(?:not\s+)?in\b",
        r"(?<!Reason\.)\bSETTLE\b(?! = \"settle\")",
        r"\bLOOP_NOTE\b",
        r"\bin str\((?:s|step)\.output\)",
        r"\.content\.startswith\((?!system)",  # (a history led by the loop's own system prompt)
        r"\.startswith\(\"Error",
        r"note\.lower\(\) (?:not )?in",
    ]
    found = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in SRC.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if any(re.search(p, line) for p in banned)
    ]
    assert found == []


def test_a_refusal_is_a_typed_record_in_the_step_and_the_trace(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    script = [call("weather", city="San Francisco"), call("weather", city="Oslo"), answer("ok")]
    result = Loop(ScriptedModel(script), [weather], store=store).run_sync("Weather in Oslo?")
    refused = result.tool_steps[0]
    assert refused.refusal is not None
    assert refused.refusal.reason == Reason.COPIED_EXAMPLE
    assert refused.refusal.check == "reject_copied_examples"
    assert refused.refusal.values == {"city": "San Francisco"}
    stored = store.steps(result.run_id)[refused.index]
    assert stored.refusal == refused.refusal  # read back from the trace as data
    assert result.tool_steps[1].refusal is None and result.answer == "ok"


def test_the_wording_can_change_without_changing_what_the_loop_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @tool
    def send_message(receiver: str, text: str) -> str:
        """Send a message.

        Args:
            receiver: who gets the message.
            text: the message.
        """
        return "sent"

    guess = call("send_message", receiver="Bob", text="hi")

    def outcome() -> tuple[str, str | None, list[str]]:
        loop = Loop(ScriptedModel([guess, answer("Done.")]), [send_message], clarify=Clarify())
        result = loop.run_sync("Send hi to my colleague.")
        return result.status, result.question, [str(s.output) for s in result.tool_steps]

    status, question, outputs = outcome()
    assert status == "input_required"  # refused once, then the user is asked
    monkeypatch.setitem(wording.REFUSALS, Reason.UNGROUNDED, "Not from the request: {slip}.")
    again, asked_again, reworded = outcome()
    assert (again, asked_again) == (status, question)
    assert reworded != outputs and "Not from the request" in reworded[0]


def test_every_policy_name_switches_something_off() -> None:
    everything = Policies.build(tool_fits=True).active()  # tool_fits is opt-in
    assert set(NAMES) <= everything
    for name in NAMES:
        without = Policies.build([name], tool_fits=True).active()
        assert name not in without, name
        assert without == everything - {name} - ({"settle"} if name == "clarify" else set())


def test_every_name_builds_a_loop_and_an_unknown_one_lists_them() -> None:
    for name in NAMES:
        config = LoopConfig(off=[name])
        loop = Loop.from_config(config, tools=[weather], model=ScriptedModel([answer("x")]))
        assert loop.run_sync("hi").status == "ok"
    with pytest.raises(UserError, match="choose from tool_fits, coerce_types, "):
        Policies.build(["no_such_policy"])
    with pytest.raises(UserError, match=r"no_such_policy.*choose from"):
        LoopConfig.from_data({"off": ["no_such_policy"]}, source="test")
    assert [p.name for p in PARTS] == list(NAMES) and len(set(NAMES)) == len(NAMES)


def test_from_config_gives_a_program_the_loops_policies_around_its_own_tools() -> None:
    loop = Loop.from_config(
        LoopConfig(), tools=[weather], model=ScriptedModel([call("weather", city="Oslo")])
    )
    assert [t for t in loop.tools] == ["weather"]
    assert {c.name for c in loop.checks} >= {"clarify", "reject_copied_examples"}
    assert loop.planner.name == "auto"


def test_an_answer_that_is_a_call_is_retried_then_answered_from_the_results() -> None:
    assert call_fragment("weather({", {"weather"}) and call_fragment('{"name": "x"}', set())
    assert not call_fragment("f(x) = 2x, so 4.", {"weather"})
    assert not call_fragment("It is sunny in Oslo.", {"weather"})
    script = [call("weather", city="Oslo"), "weather({", "weather({", answer("Sunny.")]
    result = Loop(ScriptedModel(script), [weather]).run_sync("Weather in Oslo?")
    assert result.status == "ok" and result.answer == "Sunny."
    models = [s for s in result.steps if s.kind == "model"]
    assert len(models) == 4  # the call, a fragment retried with tools, one without, answer
    stubborn = [call("weather", city="Oslo"), *["weather({"] * 4]
    failed = Loop(ScriptedModel(stubborn), [weather]).run_sync("Weather in Oslo?")
    assert failed.status == "failed" and "was a tool call" in (failed.error or "")


def test_a_continuing_conversation_passes_right_calls_through_unchanged() -> None:
    from bigloop import Message, ToolCall

    @tool
    def cd(folder: str) -> str:
        """Change the current folder.

        Args:
            folder: the folder to go into.
        """
        return f"now in {folder}"

    @tool(effect="irreversible")
    def rm(file_name: str) -> str:
        """Delete a file.

        Args:
            file_name: the file.
        """
        return "deleted"

    earlier = [
        Message(role="user", content="Where am I?"),
        Message(
            role="assistant", tool_calls=[ToolCall(id="1", name="cd", arguments={"folder": "."})]
        ),
        Message(role="tool", content="now in workspace", tool_call_id="1", name="cd"),
        Message(role="assistant", content="In workspace."),
    ]
    go = call("cd", folder="documents")  # the model knows the layout; the request says less
    fresh = Loop(ScriptedModel([go, answer("ok")]), [cd], clarify=Clarify())
    assert fresh.run_sync("Go into the docs.").tool_steps[0].refusal is not None
    loop = Loop(ScriptedModel([go, answer("ok")]), [cd], clarify=Clarify())
    result = loop.run_sync("Now go into the docs.", history=earlier)
    assert [(s.input, s.error) for s in result.tool_steps] == [({"folder": "documents"}, None)]
    guess = call("rm", file_name="notes.txt")  # irreversible: the user must have said it
    gated = Loop(ScriptedModel([guess, answer("ok")]), [cd, rm], clarify=Clarify())
    refused = asyncio.run(gated.run("Delete the old file.", history=earlier))
    assert refused.tool_steps[0].refusal is not None
    assert refused.tool_steps[0].refusal.reason == Reason.UNGROUNDED
