"""JSON schemas of tool arguments: checking arguments against one, and trimming one for a
grammar.

Used by tools known only by their schema (`Tool.from_schema`), by the loop's checks
before a call, and by the grammar-constrained models and planners.
"""

from __future__ import annotations

from typing import Any

# Annotations that do not constrain a value, so a grammar need not spell them out.
_NOT_FOR_GRAMMAR = frozenset({"format", "description", "title", "examples", "default"})


def schema_problems(arguments: Any, schema: dict[str, Any]) -> list[str]:
    """What is wrong with `arguments` for a tool known only by its JSON schema (none: [])."""
    import jsonschema

    if not isinstance(arguments, dict):
        return [f"arguments must be a JSON object, got {type(arguments).__name__}"]
    strict = {**schema, "additionalProperties": schema.get("additionalProperties", False)}
    validator = jsonschema.Draft202012Validator(strict)
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}"
        for e in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    ]


def grammar_safe(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of an argument schema without annotations the grammar does not need.

    Keeps property names even when they match a dropped keyword (a parameter may be
    called `description`), and gives an object schema its `properties`.
    """

    def clean(node: Any, names: bool = False) -> Any:
        if isinstance(node, list):
            return [clean(v) for v in node]
        if not isinstance(node, dict):
            return node
        if names:  # keys are property names, not keywords
            return {k: clean(v) for k, v in node.items()}
        return {
            k: clean(v, names=k in ("properties", "$defs", "definitions"))
            for k, v in node.items()
            if k not in _NOT_FOR_GRAMMAR
        }

    cleaned: dict[str, Any] = clean(schema)
    if cleaned.get("type") == "object":
        cleaned.setdefault("properties", {})
    return cleaned
