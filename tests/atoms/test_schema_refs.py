"""Tool schemas with nested models ($defs/$ref) become grammars: references inlined."""

from __future__ import annotations

import json

from pydantic import BaseModel

from bigloop import tool
from bigloop.atoms.schema import MAX_REF_DEPTH, grammar_safe, inline_refs


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    home: Address
    work: Address | None = None


def test_pydantic_nested_models_are_inlined_without_defs() -> None:
    schema = Person.model_json_schema()
    assert "$defs" in schema
    inlined = inline_refs(schema)
    text = json.dumps(inlined)
    assert "$ref" not in text and "$defs" not in text
    city = inlined["properties"]["home"]["properties"]["city"]
    assert city == {"title": "City", "type": "string"}


def test_a_tool_taking_a_nested_model_has_a_schema_the_grammar_can_use() -> None:
    @tool(inline=True)
    def register(person: Person) -> str:
        """Register a person.

        Args:
            person: who.
        """
        return person.name

    safe = grammar_safe(register.schema)
    assert "$ref" not in json.dumps(safe)
    assert safe["properties"]["person"]["properties"]["home"]["type"] == "object"


def test_a_recursive_model_is_cut_at_the_depth_limit_and_foreign_refs_allow_anything() -> None:
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    node = inline_refs(schema)
    for _ in range(MAX_REF_DEPTH - 1):
        node = node["properties"]["next"]
    assert node["properties"]["next"] == {}
    assert inline_refs({"$ref": "https://example.com/x.json"}) == {}


def test_a_property_called_definitions_is_kept() -> None:
    schema = {"type": "object", "properties": {"definitions": {"type": "string"}}}
    assert inline_refs(schema) == schema


def test_a_schema_the_grammar_cannot_take_is_a_clear_error_not_a_crash() -> None:
    import pytest

    from bigloop._errors import InvalidToolSchema
    from bigloop.atoms.models.base import ToolSpec
    from bigloop.atoms.models.local import LocalModel, call_schema

    model = LocalModel()  # no weights are loaded to build a grammar
    for parameters in (
        {"type": "object", "properties": {"x": {"type": "nonsense"}}},
        {"type": "object", "properties": {"x": 5}},
    ):
        schema = call_schema([ToolSpec(name="t", parameters=parameters)])
        with pytest.raises(InvalidToolSchema, match="schema"):
            model.grammar_for_schema(schema)
