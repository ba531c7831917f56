from __future__ import annotations

import pytest
from bigloop_eval.bfcl_data import data_dir, load_cases, read_jsonl, to_json_schema

from bigloop import UserError


def test_bfcl_types_become_json_schema() -> None:
    doc = {
        "type": "dict",
        "properties": {
            "base": {"type": "integer", "description": "Base."},
            "ratio": {"type": "float"},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "anything": {"type": "any"},
            "options": {"type": "dict", "properties": {"fast": {"type": "boolean"}}},
            "mode": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["base", "ratio", "ghost"],
    }
    assert to_json_schema(doc) == {
        "type": "object",
        "properties": {
            "base": {"type": "integer", "description": "Base."},
            "ratio": {"type": "number"},
            "point": {"type": "array", "items": {"type": "number"}},
            "anything": {},
            "options": {"type": "object", "properties": {"fast": {"type": "boolean"}}},
            "mode": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["base", "ratio"],
    }
    java = to_json_schema({"type": "dict", "properties": {"n": {"type": "long"}}}, "java")
    assert java["properties"]["n"] == {"type": "string"}


def test_bad_category_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="Unknown or unsupported BFCL category 'simple_rust'"):
        load_cases("simple_rust")


def test_read_jsonl_reads_the_first_rows() -> None:
    rows = read_jsonl(data_dir() / "BFCL_v4_simple_python.json", 2)
    assert [r["id"] for r in rows] == ["simple_python_0", "simple_python_1"]
    with pytest.raises(UserError, match="is missing"):
        read_jsonl(data_dir() / "BFCL_v4_nothing.json", None)
