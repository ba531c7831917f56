"""Fuzzing the built-in tools: whatever the arguments, a call ends quickly with a result
or with `ToolFailure` / `InvalidArguments`, never another exception; file tools never
show anything from outside their folder."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bigloop import InvalidArguments, Tool, ToolFailure
from bigloop.atoms.builtin import (
    add_days,
    calculator,
    convert_units,
    days_between,
    file_tools,
    sqlite_tools,
    weekday,
)
from bigloop.atoms.tool import render_result

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
SECONDS_PER_CALL = 3.0
SECRET = "outside-secret-7f3a"


def call(tool: Tool, arguments: Any) -> str | None:
    """The tool's text, or None for an allowed failure; fails on anything else."""
    start = time.monotonic()
    try:
        text = asyncio.run(tool.call(arguments))
    except (ToolFailure, InvalidArguments):
        text = None
    assert time.monotonic() - start < SECONDS_PER_CALL, arguments
    if text is not None:
        text.encode("utf-8")  # valid text for any model
        assert len(text) <= tool.max_result_chars + 60
    return text


# --- calculator -------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["pi", "e", "tau", "0", "1", "-1", "9999", "10**999", "$5", "2,480"]),
)
_FUNCTIONS = ["sqrt", "log", "exp", "sin", "factorial", "round", "min", "max", "abs", "floor"]


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(
        children, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "^"]), children
    )
    return st.one_of(
        binary.map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        st.tuples(st.sampled_from(_FUNCTIONS), st.lists(children, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        children.map(lambda c: f"-{c}"),
    )


EXPRESSIONS = st.one_of(
    st.recursive(_NUMBERS, _combine, max_leaves=12),
    st.text(max_size=60),
    st.text(alphabet="0123456789+-*/()^,.e!%$ ", max_size=80),
)


@FUZZ
@given(EXPRESSIONS)
def test_fuzz_calculator(expression: str) -> None:
    call(calculator, {"expression": expression})


@FUZZ
@given(st.dictionaries(st.text(max_size=10), st.none() | st.integers() | st.text(max_size=10)))
def test_fuzz_calculator_arguments(arguments: dict[str, Any]) -> None:
    call(calculator, arguments)


# --- units and dates --------------------------------------------------------------------

UNITS = st.one_of(
    st.sampled_from(["km", "mi", "F", "C", "K", "kg", "lb", "GiB", "byte", "mph", "acre", "cup"]),
    st.text(max_size=15),
)


@FUZZ
@given(st.floats() | st.integers(-(10**400), 10**400), UNITS, UNITS)
def test_fuzz_convert_units(value: float, from_unit: str, to_unit: str) -> None:
    call(convert_units, {"value": value, "from_unit": from_unit, "to_unit": to_unit})


DATES = st.one_of(
    st.dates().map(str),
    st.text(alphabet="0123456789-T: WZ+", max_size=25),
    st.text(max_size=15),
)


@FUZZ
@given(DATES, DATES, st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=5))
def test_fuzz_dates(first: str, second: str, days: Any) -> None:
    call(days_between, {"start_date": first, "end_date": second})
    call(add_days, {"date": first, "days": days})
    call(weekday, {"date": second})


# --- SQL --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sql_tools(tmp_path_factory: pytest.TempPathFactory) -> list[Tool]:
    path = tmp_path_factory.mktemp("db") / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL, note TEXT, b BLOB)")
        db.executemany(
            "INSERT INTO orders (total, note, b) VALUES (?, ?, ?)",
            [(i * 1.5, "n" * i, bytes([i % 256]) * i) for i in range(50)],
        )
    return sqlite_tools(path, timeout_s=1)


_SQL_PARTS = [
    "SELECT",
    "*",
    "FROM",
    "orders",
    "WHERE",
    "id",
    ">",
    "1",
    "total",
    "note",
    "b",
    ",",
    "count(*)",
    "zeroblob(2000000)",
    "randomblob(50)",
    "printf('%.*c', 3000000, 'x')",
    "GROUP BY",
    "ORDER BY",
    "LIMIT",
    "5",
    "UNION ALL",
    "(",
    ")",
    "'",
    '"',
    ";",
    "--",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c)",
    "c",
    "x",
    "ATTACH",
    "DELETE",
    "PRAGMA",
    "length(",
    "hex(",
    "substr(",
    "group_concat(",
    "JOIN",
]
QUERIES = st.one_of(
    st.lists(st.sampled_from(_SQL_PARTS), max_size=14).map(" ".join),
    st.text(max_size=80),
)


@FUZZ
@given(QUERIES)
def test_fuzz_sql(sql_tools: list[Tool], query: str) -> None:
    schema, sql_query = sql_tools
    text = call(sql_query, {"query": query})
    if text is not None:
        result = json.loads(text) if not text.endswith("characters]") else None
        assert result is None or len(result["rows"]) <= 200
    assert call(schema, {}) is not None


# --- files ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        top = Path(folder).resolve()
        (top / "outside").mkdir()
        (top / "outside" / "secret.txt").write_text(SECRET)
        root = top / "root"
        (root / "notes" / "deep").mkdir(parents=True)
        (root / "notes" / "a.txt").write_text("alpha\nbeta\n")
        (root / "notes" / "deep" / "b.md").write_text("gamma " * 100)
        (root / "bin.dat").write_bytes(bytes(range(256)))
        (root / "leak.txt").symlink_to(top / "outside" / "secret.txt")
        (root / "leakdir").symlink_to(top / "outside")
        (root / "loop").symlink_to(root / "loop")
        (root / os.fsdecode(b"caf\xe9.txt")).write_text("latin")
        os.mkfifo(root / "pipe")
        yield root


PATHS = st.one_of(
    st.lists(
        st.sampled_from(
            [
                "..",
                ".",
                "notes",
                "deep",
                "*",
                "**",
                "?.txt",
                "*.md",
                "[a-z]*",
                "leakdir",
                "leak.txt",
                "pipe",
                "loop",
                "outside",
                "secret.txt",
                "",
                "/",
                "~",
                "etc",
                "passwd",
            ]
        ),
        max_size=6,
    ).map("/".join),
    st.text(max_size=30),
)


@FUZZ
@given(PATHS, st.text(max_size=12))
def test_fuzz_file_tools(workspace: Path, path: str, text: str) -> None:
    read_file, search_files, list_files = file_tools(workspace)
    for tool, arguments in [
        (list_files, {"pattern": path}),
        (read_file, {"path": path}),
        (search_files, {"text": text or "secret"}),
    ]:
        output = call(tool, arguments)
        assert output is None or SECRET not in output
    listed = call(list_files, {"pattern": path})
    for name in json.loads(listed) if listed is not None else []:
        if not name.startswith("…"):
            assert (workspace / name).resolve().is_relative_to(workspace), name


# --- rendering --------------------------------------------------------------------------

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([5000, -4400, 4300]).map(lambda n: (10 ** abs(n)) * (1 if n > 0 else -1))
    | st.floats()
    | st.text(max_size=50)
    | st.binary(max_size=20),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(max_size=5), children, max_size=5)
        | st.tuples(children, children)
    ),
    max_leaves=20,
)


@FUZZ
@given(VALUES, st.integers(1, 300))
def test_fuzz_render_result(value: Any, limit: int) -> None:
    text = render_result(value, limit)
    text.encode("utf-8")
    assert len(text) <= limit + 60
