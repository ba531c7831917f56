"""Training turns for the code planner: a verified solution's calls become the programs
the model should write, recorded through the real loop in free text (plumbing; the
training run and its scores are in bench/results/finetune/code/)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bigloop_eval.suite import Workspace, split
from bigloop_eval.suite_teach import record_solution, teach_task

from bigloop import Loop, tool
from bigloop.atoms.models.base import ModelResponse, ToolCall
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.turns import Recorder, Turn, as_programs, load_turns, save_turns
from bigloop.planners.code import CodePlanner, _read, program_reply


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=name, name=name, arguments=arguments)


def test_calls_render_as_the_program_the_planner_reads() -> None:
    made = [call("convert_units", value=6, from_unit="ft", to_unit="cm"), call("math.hcf", a=4)]
    kind, code = _read(program_reply(made))
    assert kind == "program"
    assert code == (
        "print(convert_units(value=6, from_unit='ft', to_unit='cm'))\nprint(math_hcf(a=4))\n"
    )
    kind, code = _read(program_reply(made[:1], "round(r1 + 5.08)"))
    assert code == (
        "r1 = convert_units(value=6, from_unit='ft', to_unit='cm')\nprint(round(r1 + 5.08))\n"
    )


def test_a_call_that_needs_an_earlier_result_starts_a_new_program() -> None:
    request = "The exhibition is open from 2024-07-22 until 31 July 2024. How many hours?"
    days = call("days_between", start_date="2024-07-22", end_date="2024-07-31")
    hours = call("calculator", expression="9 * 24")  # 9: only the first call returned it
    programs = as_programs([(days, "9"), (hours, "216")], request)
    assert [_read(p.text)[1] for p in programs] == [
        "print(days_between(start_date='2024-07-22', end_date='2024-07-31'))\n",
        "print(calculator(expression='9 * 24'))\n",
    ]
    both = as_programs(
        [(call("weather", city="Rome"), "14"), (call("weather", city="Oslo"), "-3")],
        "Where is it colder, Rome or Oslo?",
    )
    assert len(both) == 1  # nothing the second call carries came from the first


def test_the_last_program_may_print_a_computed_value() -> None:
    made = [(call("convert_units", value=6), "182.88"), (call("convert_units", value=2), "5.08")]
    programs = as_programs(made, "6 ft 2 in in cm?", lambda outputs: "round(r1 + r2)")
    assert _read(programs[-1].text)[1].endswith("print(round(r1 + r2))\n")


def test_a_free_text_turn_is_recorded_as_written(sandbox: None) -> None:
    targets = [
        ModelResponse(text=program_reply([call("add", a=2, b=3)])),
        ModelResponse(text="5"),
    ]
    recorder = Recorder(targets, source="s", family="f")
    result = Loop(recorder, [add], planner=CodePlanner(context=False)).run_sync("2 + 3?")
    assert result.answer == "5"
    first, second = recorder.turns
    assert first.free_text and second.free_text
    assert first.chat[0]["role"] == "system" and "add(a, b)" in first.chat[0]["content"]
    assert first.chat[-1] == {"role": "user", "content": "2 + 3?"}
    assert first.reply == targets[0].text and second.reply == "5"
    assert second.chat[-2] == {"role": "assistant", "content": targets[0].text}
    assert "5" in second.chat[-1]["content"]  # what the program printed
    assert not first.declines and not second.declines


def test_a_free_text_answer_before_any_program_declines(tmp_path: Path) -> None:
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    answer = Turn(chat=chat, reply="Hello!", source="s", family="f", free_text=True)
    program = Turn(
        chat=chat, reply="```python\nprint(1)\n```", source="s", family="f", free_text=True
    )
    assert answer.declines and not program.declines
    save_turns([answer, program], tmp_path / "t.jsonl")
    assert load_turns(tmp_path / "t.jsonl") == [answer, program]


def test_suite_solutions_become_verified_code_turns(tmp_path: Path, sandbox: None) -> None:
    workspace = Workspace.create(tmp_path)
    task = next(t for t in split("dev") if t.id == "multi-003")  # 6 ft 2 in, in cm
    targets = record_solution(task, workspace, code=True)
    assert targets is not None
    assert _read(targets[0].text)[1].endswith("print(round(r1 + r2))\n")
    turns = asyncio.run(teach_task(task, workspace, LoopConfig(planner="code")))
    assert [t.reply for t in turns] == [targets[0].text, targets[1].text]
    assert all(t.free_text for t in turns) and turns[-1].reply in turns[-1].chat[-1]["content"]


@pytest.mark.parametrize("family", ["units", "sql", "files", "dates"])
def test_each_family_teaches_programs_under_the_code_planner(
    family: str, tmp_path: Path, sandbox: None
) -> None:
    workspace = Workspace.create(tmp_path)
    task = next(t for t in split("dev") if t.category == family and t.solve is not None)
    turns = asyncio.run(teach_task(task, workspace, LoopConfig(planner="code")))
    assert turns and turns[0].free_text and turns[0].reply.startswith("```python\n")


def test_bfcl_targets_in_code_mode_pass_the_checker_through_the_code_planner(
    sandbox: None,
) -> None:
    from bigloop_eval.bfcl_data import load_cases
    from bigloop_eval.bfcl_teach import FIRST_TRAINABLE, teach

    code = LoopConfig(planner="code")
    for category in ("simple_python", "parallel"):
        case = load_cases(category)[FIRST_TRAINABLE]
        turns = asyncio.run(teach(case, code))
        assert len(turns) == 1 and turns[0].free_text
        assert _read(turns[0].reply)[0] == "program"
        assert turns[0].chat[-1]["role"] == "user"


def test_the_prefer_step_refuses_the_code_planner_with_what_to_use(tmp_path: Path) -> None:
    from bigloop_eval.suite_teach import contrast_task

    from bigloop import FunctionModel, UserError

    task = next(t for t in split("dev") if t.id == "multi-003")
    rival = FunctionModel(lambda messages, tools: "")
    with pytest.raises(UserError, match="--step finetune"):
        asyncio.run(
            contrast_task(task, Workspace.create(tmp_path), LoopConfig(planner="code"), rival)
        )
