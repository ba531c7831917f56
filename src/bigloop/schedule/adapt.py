"""Semantic adapters: make a call's values match the declared schema before it is sent.

Small models write `[1, 3]` where the schema says float, `"5"` where it says integer, or one
value where it says a list; a strict callee rejects all three. These are repairs of form,
not of meaning, so the loop makes them itself instead of spending a model turn.
"""

from __future__ import annotations

from typing import Any


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """`value` converted to the types `schema` declares, where that loses nothing."""
    kind = schema.get("type")
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind in ("integer", "number") and isinstance(value, str):
        return _number(value, kind) if _is_number(value) else value
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind == "array":
        items = schema.get("items", {})
        if not isinstance(value, list):
            return value
        return [coerce(v, items) for v in value] if isinstance(items, dict) else value
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: coerce(v, props[k]) if k in props else v for k, v in value.items()}
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: str, kind: str) -> int | float:
    number = float(text)
    return int(number) if kind == "integer" and number.is_integer() else number
