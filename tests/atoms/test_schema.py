from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bigloop import InvalidArguments, Tool
from bigloop.atoms.schema import grammar_safe, schema_problems

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "radius": {"type": "number", "description": "in cm", "examples": [2]},
        "description": {"type": "string", "format": "text", "default": ""},
        "tags": {"type": "array", "items": {"type": "string", "title": "Tag"}},
    },
    "required": ["radius"],
}


def test_schema_problems_name_each_wrong_argument() -> None:
    assert schema_problems({"radius": 2}, SCHEMA) == []
    assert schema_problems({"radius": "big", "colour": 1, "tags": [3]}, SCHEMA) == [
        "(arguments): Additional properties are not allowed ('colour' was unexpected)",
        "radius: 'big' is not of type 'number'",
        "tags.0: 3 is not of type 'string'",
    ]
    assert schema_problems([], SCHEMA) == ["arguments must be a JSON object, got list"]


def test_a_schema_only_tool_rejects_what_its_schema_rejects() -> None:
    area = Tool.from_schema("area", "Area of a circle.", SCHEMA, lambda radius: radius**2)
    assert asyncio.run(area.call({"radius": 3})) == "9"
    with pytest.raises(InvalidArguments, match=r"Invalid arguments for 'area': radius: 'big'"):
        area.validate({"radius": "big"})


def test_grammar_safe_drops_annotations_but_keeps_property_names() -> None:
    assert grammar_safe(SCHEMA) == {
        "type": "object",
        "properties": {
            "radius": {"type": "number"},
            "description": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["radius"],
    }
    assert grammar_safe({"type": "object"}) == {"type": "object", "properties": {}}
    assert SCHEMA["properties"]["radius"]["description"] == "in cm"  # the input is not changed
