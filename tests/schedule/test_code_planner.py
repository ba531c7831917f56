"""The code planner: the model answers or writes a program that calls the tools as
functions; each call takes the loop's own path and is its own step (plumbing, with a
scripted model; the measurement is in bench/results/)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bigloop import FunctionModel, Loop, ScriptedModel, TraceStore, tool
from bigloop.atoms.models.base import Message, ModelSettings, ToolSpec
from bigloop.planners.code import PROGRAM, RESAMPLE, CodePlanner
from bigloop.trace.records import RunResult, Step

DELETED: list[str] = []


@pytest.fixture(autouse=True)
def _needs_sandbox(sandbox: None) -> None:
    DELETED.clear()


@tool
def add(a: float, b: float) -> str:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return str(a + b)


@tool(effect="irreversible")
def delete_file(name: str) -> str:
    """Delete a file for good.

    Args:
        name: the file.
    """
    DELETED.append(name)
    return f"deleted {name}"


def program(code: str) -> str:
    return f"I will compute it.\n```python\n{code}\n```"


def answer(text: str) -> str:
    return text


def calls(result: RunResult) -> list[Step]:
    """The tool calls the programs made (not the programs' own steps)."""
    return [s for s in result.steps if s.kind == "tool" and s.name != PROGRAM]


def test_a_program_calls_tools_and_its_output_leads_to_the_answer() -> None:
    script = ScriptedModel([program("x = add(a=2, b=3)\nprint(add(a=x, b=10))"), answer("15")])
    result = Loop(script, [add], planner=CodePlanner()).run_sync("What is 2 + 3 + 10?")
    assert result.status == "ok" and result.answer == "15"
    assert [(s.kind, s.name, s.input, s.error) for s in result.steps if s.kind == "tool"] == [
        ("tool", "add", {"a": 2, "b": 3}, None),
        ("tool", "add", {"a": 5.0, "b": 10}, None),
        ("tool", PROGRAM, {"code": "x = add(a=2, b=3)\nprint(add(a=x, b=10))\n"}, None),
    ]
    assert result.steps[-2].output == "15.0"  # the program's own step: what it printed
    observed = [m.content for m in result.messages if m.origin == "tool" and m.role == "user"]
    assert observed and "15.0" in observed[0]  # what the program printed: the tools' words


def test_a_refused_call_is_a_tool_error_in_the_program_and_a_step() -> None:
    code = (
        "try:\n    delete_file(name='a.txt')\n"
        "except ToolError as e:\n    print('refused:', e.reason)"
    )
    script = ScriptedModel([program(code), answer("It needs approval.")])
    loop = Loop(script, [delete_file], planner=CodePlanner(), approve=None)
    result = loop.run_sync("Delete a.txt")
    assert DELETED == [] and result.answer == "It needs approval."
    assert [s.error for s in calls(result)] == ["denied"]
    assert any("refused: refused" in m.content for m in result.messages)


def test_an_approval_stops_the_run_with_the_question() -> None:
    script = ScriptedModel([program("delete_file(name='a.txt')\nprint('done')")])
    result = Loop(script, [delete_file], planner=CodePlanner()).run_sync("Delete a.txt")
    assert DELETED == [] and result.status == "input_required"
    assert result.pending is not None and result.pending.kind == "approval"


def test_a_syntax_error_goes_back_without_running() -> None:
    script = ScriptedModel(
        [program("print(add(a=1, b=2)"), program("print(add(a=1, b=2))"), answer("3")]
    )
    result = Loop(script, [add], planner=CodePlanner()).run_sync("1 + 2?")
    assert result.answer == "3" and len(calls(result)) == 1
    assert any("SyntaxError" in m.content for m in result.messages if m.origin == "loop")


def test_an_answer_from_memory_goes_back_once_as_in_react() -> None:
    script = ScriptedModel([answer("3"), program("print(add(a=1, b=2))"), answer("3")])
    result = Loop(script, [add], planner=CodePlanner()).run_sync("1 + 2?")
    assert result.answer == "3" and len(calls(result)) == 1
    sent_back = [m.content for m in result.messages if m.origin == "loop"]
    assert any("without running a program" in m for m in sent_back)


def test_the_same_program_again_ends_the_run_with_what_it_printed() -> None:
    twice = program("print(add(a=1, b=2))")
    result = Loop(ScriptedModel([twice, twice]), [add], planner=CodePlanner()).run_sync("1 + 2?")
    assert result.status == "ok" and result.answer == "3.0" and len(calls(result)) == 1


def test_a_bare_expression_is_run_as_the_program_it_is() -> None:
    script = ScriptedModel(["2 ** 20", answer("1048576")])
    result = Loop(script, [add], planner=CodePlanner()).run_sync("What is 2 to the 20th?")
    assert result.answer == "1048576"
    assert [(s.name, s.output) for s in result.steps if s.kind == "tool"] == [(PROGRAM, "1048576")]


def test_the_same_silent_program_again_is_told_to_print() -> None:
    silent = program("x = add(a=1, b=2)")
    script = ScriptedModel([silent, silent, program("print(add(a=1, b=2))"), answer("3.0")])
    result = Loop(script, [add], planner=CodePlanner()).run_sync("1 + 2?")
    assert result.answer == "3.0"
    assert any("printed nothing" in m.content for m in result.messages if m.origin == "loop")


NOTED: list[str] = []


@tool(effect="write")
def note(text: str) -> str:
    """Append a line to the notes (not idempotent)."""
    NOTED.append(text)
    return f"noted {text}"


def test_a_resumed_program_gets_its_recorded_results_and_calls_nothing_twice(
    tmp_path: Path,
) -> None:
    """The model "dies" after a program made two calls; the resumed run's model writes the
    same program again: its calls get the recorded results, nothing is called twice."""
    NOTED.clear()
    store = TraceStore(tmp_path / "t.db")
    code = "print(note(text='one'))\nprint(note(text='two'))"
    dies = ScriptedModel([program(code)])  # no reply left after the program: it fails
    first = Loop(dies, [note], planner=CodePlanner(), store=store).run_sync("Note one and two.")
    assert first.status == "failed" and NOTED == ["one", "two"]
    again = ScriptedModel([program(code), answer("Noted one and two.")])
    loop = Loop(again, [note], planner=CodePlanner(), store=store)
    resumed = asyncio.run(loop.resume(first.run_id))
    assert resumed.status == "ok" and NOTED == ["one", "two"]  # none made again
    printed = [s.output for s in resumed.steps if s.name == PROGRAM]
    assert printed[-1] == "noted one\nnoted two"  # the recorded results, as the program saw


def test_a_program_that_defines_a_tool_s_function_is_sent_back_unrun() -> None:
    shadowing = "def add(a, b):\n    return a - b\n\nprint(add(a=2, b=3))"
    script = ScriptedModel(
        [
            program(shadowing),
            program("def twice(x):\n    return 2 * x\nprint(twice(add(a=2, b=3)))"),
            answer("10"),
        ]
    )
    result = Loop(script, [add], planner=CodePlanner()).run_sync("Twice 2 + 3?")
    assert result.status == "ok" and result.answer == "10"
    ran = [s.input["code"] for s in result.steps if s.name == PROGRAM]
    assert len(ran) == 1 and "twice" in ran[0]  # the shadowing program never ran
    notes = [m.content for m in result.messages if m.origin == "loop" and m.role == "user"]
    assert notes[0].startswith("add is already defined in the program: call it")
    assert [s.input for s in calls(result)] == [{"a": 2, "b": 3}]  # a helper of its own is fine


def test_a_program_using_a_name_it_never_defines_is_sent_back_unrun() -> None:
    invented = "orders = orders_in_date('2024-03-01')\nprint(len(orders), ACME)"
    fine = (
        "import math\nfrom datetime import date as d\n"
        "total = sum(x for x in [add(a=1, b=2)])\n"
        "try:\n    print(math.floor(total), d(2024, 1, 1).year)\n"
        "except ToolError as e:\n    print(e)"
    )
    script = ScriptedModel([program(invented), program(fine), answer("3 2024")])
    result = Loop(script, [add], planner=CodePlanner()).run_sync("1 + 2, and the year?")
    assert result.status == "ok" and result.answer == "3 2024"
    ran = [s.input["code"] for s in result.steps if s.name == PROGRAM]
    assert len(ran) == 1 and "math" in ran[0]  # the program with invented names never ran
    notes = [m.content for m in result.messages if m.origin == "loop" and m.role == "user"]
    assert notes[0].startswith("orders_in_date, ACME are not defined in the program")
    assert "(add)" in notes[0]


@pytest.mark.parametrize(
    "code",
    [
        "from math import *\nprint(floor(2.5))",  # anything may come from a star import
        "def f(x):\n    return y\ny = 2\nprint(f(1))",  # bound later: no flow analysis
        "with open('a') as fh:\n    print(fh)\nprint([v for v in range(2)], lambda z: z)",
    ],
)
def test_names_bound_anywhere_in_the_program_are_not_reported(code: str) -> None:
    from bigloop.atoms.builtin.bridge import Bridge
    from bigloop.planners.code import _undefined

    async def call(name: str, arguments: dict[str, object]) -> object:
        raise AssertionError

    bridge = Bridge(tools=[], call=call)  # type: ignore[arg-type]
    assert _undefined(code, bridge) == []


def test_a_failed_program_resent_unchanged_is_not_run_again_and_the_next_turn_samples() -> None:
    failing = program("print(add(a=1, b=2) / 0)")
    replies = iter([failing, failing, program("print(add(a=1, b=2))"), answer("3.0")])
    seen: list[ModelSettings] = []

    def model(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(settings)
        return next(replies)

    result = Loop(FunctionModel(model), [add], planner=CodePlanner()).run_sync("1 + 2?")
    assert result.status == "ok" and result.answer == "3.0"
    ran = [s for s in result.steps if s.name == PROGRAM]
    assert len(ran) == 2 and ran[0].error == "tool_error"  # the failing one ran once
    notes = [m.content for m in result.messages if m.origin == "loop" and m.role == "user"]
    assert any(n.startswith("That is the program that already stopped with") for n in notes)
    assert [s.temperature for s in seen] == [0.0, 0.0, RESAMPLE, 0.0]
    assert seen[2].seed is not None
