from __future__ import annotations

from bigloop import ToolCall, ToolSpec
from bigloop.schedule.adapt import coerce
from bigloop.schedule.call import drop_ungrounded_optionals, prepare_call, schema_problems

SCHEMA = {
    "type": "object",
    "properties": {
        "radius": {"type": "number"},
        "unit": {"type": "string", "description": "e.g. 'cm'"},
        "points": {"type": "array", "items": {"type": "number"}},
        "count": {"type": "integer"},
    },
    "required": ["radius"],
}


def test_coerce_to_declared_types() -> None:
    assert coerce({"radius": 4, "points": [1, 3], "count": 2.0, "unit": 5}, SCHEMA) == {
        "radius": 4.0,
        "points": [1.0, 3.0],
        "count": 2,
        "unit": "5",
    }
    assert coerce({"count": "7", "radius": "x"}, SCHEMA) == {"count": 7, "radius": "x"}
    assert coerce(True, {"type": "number"}) is True


def test_invented_optional_values_are_dropped() -> None:
    args, dropped = drop_ungrounded_optionals(
        {"radius": 4.0, "unit": "cm", "count": 3}, SCHEMA, "Circle of radius 4, 3 times"
    )
    assert (args, dropped) == ({"radius": 4.0, "count": 3}, ["unit"])
    kept, none = drop_ungrounded_optionals({"radius": 9, "unit": "Inches"}, SCHEMA, "4 inches")
    assert (kept, none) == ({"radius": 9, "unit": "Inches"}, [])


def test_prepare_call_and_schema_problems() -> None:
    spec = ToolSpec(name="circle", description="Circumference.", parameters=SCHEMA)
    call, problems = prepare_call(
        ToolCall(id="1", name="circle", arguments={"radius": 4}), spec, "radius 4"
    )
    assert call.arguments == {"radius": 4.0} and problems == []
    assert schema_problems({"radius": "big", "colour": 1}, SCHEMA) == [
        "(arguments): Additional properties are not allowed ('colour' was unexpected)",
        "radius: 'big' is not of type 'number'",
    ]
    assert schema_problems([], SCHEMA) == ["arguments must be a JSON object, got list"]
