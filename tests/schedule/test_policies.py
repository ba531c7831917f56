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
    default_rules,
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


def _saving(*replies: dict[str, object]) -> ScriptedModel:
    return ScriptedModel([json.dumps(r) for r in replies])


def _calc(expression: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}]}


SAVING = "If I save $350 every month, how much will I have saved after 3 years?"


def test_an_answer_one_step_short_goes_back_once_to_use_the_quantity_left_out() -> None:
    from bigloop import ReactPlanner
    from bigloop.atoms.builtin import calculator

    model = _saving(_calc("350 * 12"), {"answer": "4200"}, _calc("4200 * 3"), {"answer": "12600"})
    result = Loop(model, [calculator]).run_sync(SAVING)
    assert result.answer == "12600"
    notes = [m.content for m in result.messages if m.origin == "loop"]
    assert len(notes) == 1 and "also gives 3, which no call has used" in notes[0]
    # once: the model may keep its answer (the 3 was no quantity to use)
    again = _saving(_calc("350 * 12"), {"answer": "4200"}, {"answer": "4200"})
    assert Loop(again, [calculator]).run_sync(SAVING).answer == "4200"
    # off: the short answer stands
    short = _saving(_calc("350 * 12"), {"answer": "4200"})
    off = Loop(
        short, [calculator], planner=ReactPlanner(rules=default_rules(off={"use_quantities"}))
    )
    assert off.run_sync(SAVING).answer == "4200"


def test_an_answer_that_used_every_quantity_passes_unchanged() -> None:
    from bigloop.atoms.builtin import calculator

    def run(task: str, *replies: dict[str, object], **kwargs: object) -> object:
        result = Loop(_saving(*replies), [calculator]).run_sync(task, **kwargs)  # type: ignore[arg-type]
        assert not [m for m in result.messages if m.origin == "loop"]
        return result.answer

    assert run(SAVING, _calc("350 * 12 * 3"), {"answer": "12600"}) == "12600"
    vat = "A TV costs €640 before 19% VAT. What does it cost with VAT?"
    assert run(vat, _calc("640 * 1.19"), {"answer": "761.6 €"}) == "761.6 €"
    # the answer gives the quantity itself, or is no tool's result
    assert run(SAVING, _calc("350 * 12"), {"answer": "4200 a year, 3 years"}) == (
        "4200 a year, 3 years"
    )
    assert run(SAVING, _calc("350 * 36"), {"answer": "About twelve thousand"}) == (
        "About twelve thousand"
    )
    # a conversation: an earlier turn's call used the quantity
    first = Loop(_saving(_calc("350 * 3"), {"answer": "1050"}), [calculator]).run_sync(
        "What is 350 times 3?"
    )
    history = first.messages
    assert run(SAVING, _calc("1050 * 12"), {"answer": "12600"}, history=history) == "12600"


def test_quantities_are_the_requests_amounts_not_dates_codes_or_precision() -> None:
    from bigloop.policies.quantities import quantities, unused_quantity

    assert quantities("Split a $1,250 bill among 8 people. Round to 2 decimals.") == [
        (1250.0, False),
        (8.0, False),
    ]
    assert quantities("Between 2024-01-15 and 2024-03-01 at 10:30, room B12, order #44") == []
    assert quantities("640 before 19% VAT") == [(640.0, False), (19.0, True)]
    for form in ("0.19", "1.19", "0.81", "19"):
        assert unused_quantity("640 before 19% VAT", [f"640 * {form}"], ["x 5"], "5") is None
    assert unused_quantity("640 before 19% VAT", ["640"], ["761.6"], "761.6") == 19.0


def test_a_number_inside_a_larger_one_or_a_calculation_left_undone_is_no_answer() -> None:
    from bigloop.atoms.builtin import calculator

    def notes(task: str, answer: str) -> list[str]:
        model = _saving({"answer": answer}, _calc("2480 / 8"), {"answer": "310"})
        result = Loop(model, [calculator]).run_sync(task)
        assert result.answer == "310"
        return [m.content for m in result.messages if m.origin == "loop"]

    bill = "Split a $2,480 bill evenly among 8 people."
    assert "You answered 248 without using a tool" in notes(bill, "248")[0]  # not in 2,480
    assert "You answered 2,480 / 8 without" in notes(bill, "2,480 / 8")[0]
    # a number the request gives whole, or a date, is no answer from memory
    said = Loop(_saving({"answer": "2,480 for 8 people"}), [calculator]).run_sync(bill)
    assert said.answer == "2,480 for 8 people"
    day = Loop(_saving({"answer": "2024-06-13"}), [calculator]).run_sync("Is 2024-06-13 a date?")
    assert day.answer == "2024-06-13"


def test_an_answer_quoting_an_address_from_a_tool_error_is_judged_without_failing() -> None:
    from bigloop.planners.rules import _given

    assert _given("127.0.0.1", "error: the agent at http://127.0.0.1:45397/ is gone")
    assert not _given("10.0.0.1", "error: the agent at http://127.0.0.1:45397/ is gone")


def test_a_sum_left_unevaluated_after_a_lookup_goes_back_once_when_a_tool_computes() -> None:
    from bigloop import tool
    from bigloop.atoms.builtin import calculator

    @tool
    def prices() -> list[float]:
        """The prices on my shopping list."""
        return [1.5, 2.25]

    look = {"tool_calls": [{"name": "prices", "arguments": {}}]}
    task = "What do the things on my shopping list cost in total?"

    def run(tools: list[object], *replies: dict[str, object]) -> tuple[object, list[str]]:
        result = Loop(_saving(look, *replies), tools).run_sync(task)  # type: ignore[arg-type]
        return result.answer, [m.content for m in result.messages if m.origin == "loop"]

    answer, notes = run(
        [prices, calculator], {"answer": "1.5 + 2.25"}, _calc("1.5 + 2.25"), {"answer": "3.75"}
    )
    assert answer == "3.75"
    assert notes == [
        "Your answer is a calculation left unevaluated. Call the tool that computes it, then "
        "answer with the result."
    ]
    # once; and without a tool that computes, the answer stands
    assert run([prices, calculator], {"answer": "1.5 + 2.25"}, {"answer": "1.5 + 2.25"})[0] == (
        "1.5 + 2.25"
    )
    assert run([prices], {"answer": "1.5 + 2.25"}) == ("1.5 + 2.25", [])
    # an answer in words, or a date, after the lookup passes unchanged
    assert run([prices, calculator], {"answer": "3.75 in all"}) == ("3.75 in all", [])
    assert run([prices, calculator], {"answer": "2024-06-13"}) == ("2024-06-13", [])
