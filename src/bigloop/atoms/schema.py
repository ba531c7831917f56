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


MAX_REF_DEPTH = 8
"""A recursive schema (a model that contains itself) is inlined this deep, then allows
any value."""


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` with its local references (`{"$ref": "#/$defs/X"}`, as pydantic
    and MCP servers write nested models) replaced by what they point to, and no `$defs`.

    A tool's schema is embedded in the reply's schema, where `#/$defs/...` would point at
    the wrong root (llama.cpp: "Error resolving ref"). References that are not local, or
    point nowhere, allow any value.
    """
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}

    def resolve(node: Any, depth: int, names: bool = False) -> Any:
        if isinstance(node, list):
            return [resolve(v, depth) for v in node]
        if not isinstance(node, dict):
            return node
        if names:  # keys are property names, not keywords
            return {k: resolve(v, depth) for k, v in node.items()}
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rpartition("/")[2]
            target = defs.get(name) if ref.startswith(("#/$defs/", "#/definitions/")) else None
            if target is None or depth >= MAX_REF_DEPTH:
                return {}
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return resolve({**target, **rest}, depth + 1)
        return {
            k: resolve(v, depth, names=k in ("properties", "patternProperties"))
            for k, v in node.items()
            if k not in ("$defs", "definitions")
        }

    out: dict[str, Any] = resolve(schema, 0)
    return out


def grammar_safe(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of an argument schema without annotations the grammar does not need, its
    local references inlined (`inline_refs`).

    Keeps property names even when they match a dropped keyword (a parameter may be
    called `description`), and gives an object schema its `properties`.
    """
    schema = inline_refs(schema)

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
