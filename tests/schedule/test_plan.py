from __future__ import annotations

import json

import pytest

from bigloop import ToolSpec
from bigloop.planners.plan import InvalidPlan, Plan, parse_plan, plan_schema, resolve

SPECS = {
    "price": ToolSpec(
        name="price",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    ),
    "add": ToolSpec(
        name="add",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    ),
}


def plan(*steps: tuple[str, dict[str, object]]) -> str:
    return json.dumps({"steps": [{"tool": t, "arguments": a} for t, a in steps]})


def test_plan_with_references_parses_in_order() -> None:
    parsed = parse_plan(
        plan(
            ("price", {"city": "Oslo"}),
            ("price", {"city": "Rome"}),
            ("add", {"a": "$1", "b": "$2"}),
        ),
        SPECS,
    )
    assert isinstance(parsed, Plan)
    assert [(s.id, s.tool, s.deps) for s in parsed.steps] == [
        (1, "price", set()),
        (2, "price", set()),
        (3, "add", {1, 2}),
    ]


def test_replan_continues_numbering_and_may_use_done_steps() -> None:
    parsed = parse_plan(plan(("add", {"a": "$1", "b": 2})), SPECS, first_id=4, done={1})
    assert isinstance(parsed, Plan)
    assert parsed.steps[0].id == 4 and parsed.steps[0].deps == {1}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"steps": []}), "at least one step"),
        (plan(("weather", {"city": "Oslo"})), "there is no tool 'weather' (tools: price, add)"),
        (plan(("add", {"a": 1})), "add needs b"),
        (plan(("add", {"a": "$7", "b": 1})), "step 1 uses $7, but there is no such step"),
        (
            plan(("add", {"a": "$2", "b": 1}), ("add", {"a": "$1", "b": 1})),
            "steps 1, 2 depend on each other (a cycle)",
        ),
    ],
)
def test_invalid_plans_say_what_to_fix(text: str, problem: str) -> None:
    with pytest.raises(InvalidPlan) as info:
        parse_plan(text, SPECS)
    assert problem in str(info.value)


def test_answer_instead_of_plan() -> None:
    assert parse_plan(json.dumps({"answer": "42"}), SPECS) == "42"


def test_resolve_keeps_types_of_whole_references_and_inlines_text() -> None:
    outputs = {1: "3.5", 2: '{"c": 1}', 3: "Oslo"}
    args = {"a": "$1", "b": "$2", "text": "from $3 to $1", "n": [1, "$3"]}
    assert resolve(args, outputs) == {
        "a": 3.5,
        "b": {"c": 1},
        "text": "from Oslo to 3.5",
        "n": [1, "Oslo"],
    }


def test_schema_lets_every_argument_be_a_reference() -> None:
    schema = plan_schema(list(SPECS.values()))
    shape = schema["properties"]["steps"]["items"]["anyOf"][1]
    assert shape["properties"]["tool"] == {"const": "add"}
    assert shape["properties"]["arguments"]["properties"]["a"]["anyOf"][1]["pattern"] == (
        "^[$][0-9]+$"
    )
    with_answer = plan_schema(list(SPECS.values()), allow_answer=True)
    assert with_answer["anyOf"][0]["required"] == ["answer"]
