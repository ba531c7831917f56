from __future__ import annotations

import asyncio
import json

import pytest

from bigloop import Do, Loop, ScriptedModel, Tool, ToolCall, ToolSpec, UserError, Workflow, tool
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
    result = Loop(model, [wf], planner="react").run_sync("Cheaper hotel, Paris or Oslo?")
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


SENT: list[str] = []


@tool(effect="irreversible")
def send_payment(to: str, amount: int) -> str:
    """Send money; it cannot be taken back."""
    SENT.append(f"{amount} to {to}")
    return "sent"


@tool(effect="write")
def note(text: str) -> str:
    """Write a note (it can be erased)."""
    return "noted"


def pay_rent() -> Workflow:
    return Workflow(
        "pay_rent",
        "Note the rent, then pay it.",
        inputs={"to": str},
        steps=[
            Do("noted", note, text="rent for $to"),
            Do("paid", send_payment, to="$to", amount=900),
        ],
    )


def test_a_workflow_tool_has_the_strongest_effect_of_its_steps() -> None:
    def wf(*tools: Tool) -> Workflow:
        steps = [Do(f"s{i}", t, text="x") for i, t in enumerate(tools)]
        return Workflow("w", "d", inputs={}, steps=steps)

    @tool
    def look(text: str) -> str:
        """Read."""
        return text

    assert (wf(look).as_tool().effect, wf(look).as_tool().idempotent) == ("read", True)
    assert wf(look, note).as_tool().effect == "write"
    paying = pay_rent().as_tool()
    assert (paying.effect, paying.idempotent) == ("irreversible", False)
    nested = Workflow("outer", "d", inputs={}, steps=[Do("inner", paying, to="Ann")])
    assert nested.as_tool().effect == "irreversible"


def test_a_workflow_with_an_irreversible_step_is_gated_by_approval() -> None:
    SENT.clear()

    def script() -> ScriptedModel:
        return ScriptedModel([call("pay_rent", to="Ann"), json.dumps({"answer": "done"})])

    denied = Loop(script(), [pay_rent().as_tool()], approve=None).run_sync("Pay the rent to Ann.")
    assert SENT == []
    assert denied.tool_steps[0].error == "denied"
    assert denied.tool_steps[0].output.startswith("Error: denied: needs approval: pay_rent")

    asked: list[tuple[str, object]] = []

    def approve(c: ToolCall, spec: ToolSpec) -> bool:
        asked.append((c.name, c.arguments))
        return True

    approved = Loop(script(), [pay_rent().as_tool()], approve=approve).run_sync("Pay Ann.")
    assert asked == [("pay_rent", {"to": "Ann"})]
    assert SENT == ["900 to Ann"]
    assert approved.tool_steps[0].error is None
