from __future__ import annotations

import asyncio
import json

import pytest

from bigloop import Do, Loop, ScriptedModel, UserError, Workflow, tool
from bigloop.atoms.builtin import calculator

EVENTS: list[str] = []


@tool
async def hotel(city: str) -> int:
    """Hotel night price in a city."""
    EVENTS.append(f"start {city}")
    await asyncio.sleep(0.2)
    EVENTS.append(f"end {city}")
    return {"Paris": 210, "Oslo": 200}[city]


def call(tool_name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": tool_name, "arguments": arguments}]})


def compare() -> Workflow:
    return Workflow(
        "compare_hotels",
        "Hotel prices of two cities, and the lower one.",
        inputs={"a": str, "b": str},
        steps=[
            Do("price_a", hotel, city="$a"),
            Do("price_b", hotel, city="$b"),
            Do("lower", calculator, expression="min($price_a, $price_b)"),
        ],
    )


def test_workflow_runs_independent_steps_concurrently() -> None:
    EVENTS.clear()
    results = asyncio.run(compare().run(a="Paris", b="Oslo"))
    assert results == {"price_a": 210, "price_b": 200, "lower": 200}
    assert EVENTS[:2] == ["start Paris", "start Oslo"]  # both started before either ended


def test_workflow_is_a_tool_inside_a_loop() -> None:
    wf = Workflow(
        "cheaper",
        "The lower hotel price of two cities.",
        inputs={"a": str, "b": str},
        steps=compare().steps,
        output="lower",
    ).as_tool()
    model = ScriptedModel(
        [
            json.dumps(
                {"tool_calls": [{"name": "cheaper", "arguments": {"a": "Paris", "b": "Oslo"}}]}
            ),
            json.dumps({"answer": "200"}),
        ]
    )
    result = Loop(model, [wf]).run_sync("Cheaper hotel, Paris or Oslo?")
    assert [(s.name, s.output) for s in result.tool_steps] == [("cheaper", "200")]


def test_a_loop_is_a_tool_of_another_loop() -> None:
    inner = Loop(
        ScriptedModel(
            [
                json.dumps(
                    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}
                ),
                json.dumps({"answer": "42"}),
            ]
        ),
        [calculator],
    ).as_tool("math_agent", "Solves arithmetic word problems.")
    outer = Loop(
        ScriptedModel(
            [
                json.dumps(
                    {
                        "tool_calls": [
                            {"name": "math_agent", "arguments": {"task": "six times seven"}}
                        ]
                    }
                ),
                json.dumps({"answer": "It is 42."}),
            ]
        ),
        [inner],
    )
    result = outer.run_sync("Ask the math agent: six times seven?")
    assert result.answer == "It is 42."
    assert result.tool_steps[0].output == "42"


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([Do("x", hotel, city="$nope")], "uses $nope, which is no input or step"),
        ([Do("x", hotel, city="$y"), Do("y", hotel, city="$x")], "depend on each other"),
        ([Do("x", hotel, city="$a"), Do("x", hotel, city="$a")], "names used twice"),
    ],
)
def test_workflow_mistakes_fail_fast(steps: list[object], message: str) -> None:
    with pytest.raises(UserError, match=message.replace("$", r"\$")):
        Workflow("w", "d", inputs={"a": str}, steps=steps)  # type: ignore[arg-type]


def test_step_must_be_a_tool() -> None:
    with pytest.raises(UserError, match="is not a Tool"):
        Do("x", len)  # type: ignore[arg-type]
