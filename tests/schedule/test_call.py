from __future__ import annotations

from bigloop.atoms.schema import schema_problems
from bigloop.policies.adapt import coerce

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


def test_schema_problems() -> None:
    assert schema_problems({"radius": "big", "colour": 1}, SCHEMA) == [
        "(arguments): Additional properties are not allowed ('colour' was unexpected)",
        "radius: 'big' is not of type 'number'",
    ]
    assert schema_problems([], SCHEMA) == ["arguments must be a JSON object, got list"]
