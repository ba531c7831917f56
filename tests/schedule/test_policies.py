"""Call checks and tool selectors as parts: each does one thing, and the loop runs the
ones it is given, in order."""

from __future__ import annotations

import json

from bigloop import (
    CallCheck,
    CoerceTypes,
    DropInventedOptionals,
    Evidence,
    FaithfulExpressions,
    Loop,
    RejectCopiedExamples,
    ScriptedModel,
    Tool,
    ToolCall,
    ToolSpec,
    Verdict,
)
from bigloop.policies import default_checks, run_checks

SCHEMA = {
    "type": "object",
    "properties": {
        "radius": {"type": "number"},
        "unit": {"type": "string", "description": "e.g. 'cm'"},
        "count": {"type": "integer"},
    },
    "required": ["radius"],
}
SPEC = ToolSpec(name="circle", description="Circumference.", parameters=SCHEMA)


def checked(arguments: dict[str, object], said: str) -> tuple[object, str | None]:
    call = ToolCall(id="1", name="circle", arguments=arguments)
    out = run_checks(default_checks(), call, SPEC, Evidence(said))
    return out.call.arguments, out.problem


def test_invented_optional_values_are_dropped() -> None:
    check = DropInventedOptionals()
    call = ToolCall(id="1", name="circle", arguments={"radius": 4.0, "unit": "cm", "count": 3})
    verdict = check.check(call, SPEC, Evidence("Circle of radius 4, 3 times"))
    assert verdict == Verdict(action="adapt", arguments={"radius": 4.0, "count": 3})
    kept = ToolCall(id="1", name="circle", arguments={"radius": 9, "unit": "Inches"})
    assert check.check(kept, SPEC, Evidence("4 inches")).action == "accept"


def test_default_checks_adapt_then_reject_copied_examples() -> None:
    assert checked({"radius": 4}, "radius 4") == ({"radius": 4.0}, None)
    weather = ToolSpec(
        name="weather",
        description="Weather of a city, e.g. San Francisco, CA.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    call = ToolCall(id="1", name="weather", arguments={"city": "San Francisco, CA"})
    verdict = RejectCopiedExamples().check(call, weather, Evidence("weather in Oslo?"))
    assert verdict.action == "reject" and "example from the tool's description" in verdict.message
    said = RejectCopiedExamples().check(call, weather, Evidence("San Francisco, CA weather?"))
    assert said.action == "accept"


def test_an_argument_set_to_its_default_is_no_copied_example() -> None:
    """`list_files(pattern="**/*")`: the docs' example is also the default, the call the
    tool makes anyway."""
    listing = ToolSpec(
        name="list_files",
        description="List files.",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": 'e.g. "**/*"', "default": "**/*"}
            },
        },
    )
    call = ToolCall(id="1", name="list_files", arguments={"pattern": "**/*"})
    assert RejectCopiedExamples().check(call, listing, Evidence("my recipes?")).action == "accept"
    other = ToolCall(id="1", name="list_files", arguments={"pattern": "**/*"})
    no_default = ToolSpec(
        name="list_files",
        description="List files.",
        parameters={
            "type": "object",
            "properties": {"pattern": {"type": "string", "description": 'e.g. "**/*"'}},
        },
    )
    assert (
        RejectCopiedExamples().check(other, no_default, Evidence("my recipes?")).action == "reject"
    )


def test_a_check_switched_off_is_not_run() -> None:
    """Without coercion the integer reaches the tool as written; with it, as a float."""
    seen: list[object] = []

    def record(radius: float) -> str:
        seen.append(radius)
        return "ok"

    schema = {"type": "object", "properties": {"radius": {"type": "number"}}}
    area = Tool.from_schema("area", "Area of a circle.", schema, record)

    def script() -> ScriptedModel:
        call = {"tool_calls": [{"name": "area", "arguments": {"radius": 2}}]}
        return ScriptedModel([json.dumps(call), json.dumps({"answer": "done"})])

    Loop(script(), [area]).run_sync("area of radius 2")
    only_drop: list[CallCheck] = [DropInventedOptionals(), RejectCopiedExamples()]
    Loop(script(), [area], checks=only_drop).run_sync("area of radius 2")
    assert [type(v) for v in seen] == [float, int]
    assert [c.name for c in default_checks()] == [
        "coerce_types",
        "drop_invented_optionals",
        "reject_copied_examples",
        "faithful_expressions",
        "approve_irreversible",
    ]
    assert CoerceTypes().name == "coerce_types"


def test_an_expression_that_drops_the_requests_parentheses_is_sent_back() -> None:
    check = FaithfulExpressions()
    calc = ToolSpec(
        name="calculator",
        parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
    )
    said = Evidence("What is (45 + 12) / 3? Use the calculator.")

    def verdict(expression: str) -> Verdict:
        call = ToolCall(id="1", name="calculator", arguments={"expression": expression})
        return check.check(call, calc, said)

    wrong = verdict("45 + 12 / 3")
    assert wrong.action == "reject"
    assert "'(45 + 12) / 3' computes 19" in wrong.message
    assert verdict("(45+12)/3").action == "accept"
    assert verdict("57 / 3").action == "accept"  # other numbers: not a rewrite of it
    date = Evidence("How many days from 2024-01-15 to 2024-03-01?")
    call = ToolCall(id="1", name="calculator", arguments={"expression": "31 + 29 + 1 - 15"})
    assert check.check(call, calc, date).action == "accept"


def test_the_answer_honours_the_precision_the_request_asks_for() -> None:
    def run(task: str, off: bool = False) -> str | None:
        model = ScriptedModel([json.dumps({"answer": "26.2187574565 miles"})])
        return Loop(model, [], answer_checks=[] if off else None).run_sync(task).answer

    assert run("How many miles is 42.195 km? Round to two decimals.") == "26.22 miles"
    assert run("How many miles is 42.195 km? Round to the nearest mile.") == "26 miles"
    assert run("How many miles is 42.195 km?") == "26.2187574565 miles"
    assert run("Round to two decimals.", off=True) == "26.2187574565 miles"


def test_an_answer_from_memory_goes_back_once_to_use_the_tools() -> None:
    from bigloop.atoms.builtin import calculator

    model = ScriptedModel(
        [
            json.dumps({"answer": "125"}),  # 2.5 * 62.5 from memory
            json.dumps(
                {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2.5 * 62.5"}}]}
            ),
            json.dumps({"answer": "156.25"}),
        ]
    )
    result = Loop(model, [calculator]).run_sync("What is 2.5 times 62.5?")
    assert result.answer == "156.25"
    assert any("You answered 125 without using a tool" in m.content for m in result.messages)
    said = ScriptedModel([json.dumps({"answer": "2.5 times 62.5 is a product."})])
    assert Loop(said, [calculator]).run_sync("What is 2.5 times 62.5?").status == "ok"
