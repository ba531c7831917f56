"""`tool_fits`: the model's own yes/no on whether the called tool does what was asked
(plumbing, with a judge of fixed probability; the measurement is in
bench/results/tool_fits/)."""

from __future__ import annotations

import json

from bigloop import Loop, ScriptedModel, tool
from bigloop.policies.tool_fits import ToolFits, bind_judge

MADE: list[float] = []


@tool
def body_mass_index(weight_kg: float, height_m: float) -> str:
    """Determine the body mass index.

    Args:
        weight_kg: weight in kilograms.
        height_m: height in meters.
    """
    MADE.append(weight_kg)
    return str(round(weight_kg / height_m**2, 1))


class Judge:
    def __init__(self, yes: float) -> None:
        self.yes = yes
        self.asked: list[str] = []

    async def yes_probability(self, chat: list[dict[str, str]]) -> float | None:
        self.asked.append(chat[-1]["content"])
        return self.yes


def call(**arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": "body_mass_index", "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


TRIANGLE = "Calculate the area of a triangle with base 10 and height 5."


def setup_function() -> None:
    MADE.clear()


def test_an_unfit_call_goes_back_and_the_model_answers_in_words() -> None:
    judge = Judge(0.2)
    script = ScriptedModel([call(weight_kg=10, height_m=5), answer("No tool here computes areas.")])
    result = Loop(script, [body_mass_index], checks=[ToolFits(judge=judge)]).run_sync(TRIANGLE)
    assert MADE == [] and result.status == "ok" and result.answer == "No tool here computes areas."
    refused = result.tool_steps[0]
    assert refused.refusal is not None and refused.refusal.reason.value == "no_tool_fits"
    assert refused.refusal.detail == {"yes": 0.2}
    assert "body_mass_index: Determine the body mass index." in judge.asked[0]
    assert TRIANGLE in judge.asked[0]


def test_a_fit_call_and_a_call_the_model_insists_on_are_made() -> None:
    fit = Loop(
        ScriptedModel([call(weight_kg=70, height_m=1.75), answer("22.9")]),
        [body_mass_index],
        checks=[ToolFits(judge=Judge(0.8))],
    ).run_sync("What is my BMI at 70 kg and 1.75 m?")
    assert MADE == [70] and fit.answer == "22.9"
    again = call(weight_kg=10, height_m=5)
    insisted = Loop(
        ScriptedModel([again, again, answer("done")]),
        [body_mass_index],
        checks=[ToolFits(judge=Judge(0.1))],
    ).run_sync(TRIANGLE)
    assert MADE == [70, 10] and [s.error for s in insisted.tool_steps] == [
        "invalid_arguments",
        None,
    ]


def test_a_conversation_that_already_called_tools_is_not_judged() -> None:
    judge = Judge(0.0)
    first = Loop(
        ScriptedModel([call(weight_kg=70, height_m=1.75), answer("22.9")]),
        [body_mass_index],
        checks=[ToolFits(judge=Judge(0.9))],
    ).run_sync("What is my BMI at 70 kg and 1.75 m?")
    later = Loop(
        ScriptedModel([call(weight_kg=80, height_m=1.75), answer("26.1")]),
        [body_mass_index],
        checks=[ToolFits(judge=judge)],
    ).run_sync("And at 80 kg?", history=first.messages)
    assert later.answer == "26.1" and judge.asked == [] and MADE == [70, 80]


def test_only_a_model_that_can_judge_is_bound() -> None:
    judge = Judge(0.5)
    assert bind_judge([ToolFits()], judge)[0].judge is judge
    assert bind_judge([ToolFits()], ScriptedModel([]))[0].judge is None
