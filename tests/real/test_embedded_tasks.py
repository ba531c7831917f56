"""The embedded model, end to end: it must pick the right tool, with the right arguments,
and answer correctly. Asserts on the answer and on the trace."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bigloop import LocalModel, Loop, TraceStore
from bigloop.atoms.builtin import default_tools, file_tools, sqlite_tools

pytestmark = pytest.mark.real


def run(model: LocalModel, task: str, tools: list, tmp_path: Path):  # type: ignore[no-untyped-def,type-arg]
    store = TraceStore(tmp_path / "traces.db")
    result = Loop(model, tools, store=store).run_sync(task)
    assert result.status == "ok", result.error
    stored = store.steps(result.run_id)
    assert [(s.kind, s.name, s.output) for s in stored] == [
        (s.kind, s.name, s.output) for s in result.steps
    ]
    first_call = next(s for s in stored if s.kind == "tool")
    return result, first_call


def test_arithmetic_uses_the_calculator(embedded: LocalModel, tmp_path: Path) -> None:
    result, first = run(embedded, "What is (45 + 12) / 3?", default_tools(), tmp_path)
    assert (first.name, first.output) == ("calculator", "19")
    assert "19" in (result.answer or "")


def test_date_difference(embedded: LocalModel, tmp_path: Path) -> None:
    result, first = run(
        embedded,
        "How many days are there between 2024-01-15 and 2024-03-01?",
        default_tools(),
        tmp_path,
    )
    assert (first.name, first.input) == (
        "days_between",
        {"start_date": "2024-01-15", "end_date": "2024-03-01"},
    )
    assert "46" in (result.answer or "")


def test_unit_conversion(embedded: LocalModel, tmp_path: Path) -> None:
    result, first = run(embedded, "Convert 26.2 miles to kilometers.", default_tools(), tmp_path)
    assert first.name == "convert_units"
    assert first.input["value"] == 26.2
    assert "42.16" in (result.answer or "")


def test_weekday(embedded: LocalModel, tmp_path: Path) -> None:
    result, first = run(embedded, "What day of the week was 2024-07-04?", default_tools(), tmp_path)
    assert (first.name, first.output) == ("weekday", "Thursday")
    assert "Thursday" in (result.answer or "")


def test_sql_count(embedded: LocalModel, tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        db.executemany(
            "INSERT INTO orders (customer, total) VALUES (?, ?)",
            [("ann", 10), ("bob", 20), ("ann", 5), ("cy", 7), ("bob", 1), ("di", 3), ("ed", 9)],
        )
    result, _ = run(
        embedded,
        "How many orders are in the orders table?",
        default_tools() + sqlite_tools(path),
        tmp_path,
    )
    queries = [s for s in result.tool_steps if s.name == "sql_query" and s.error is None]
    assert queries and "7" in str(queries[0].output)
    assert "7" in (result.answer or "")


def test_file_lookup(embedded: LocalModel, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\nthe secret code is 4721\nbeta\n")
    result, _ = run(
        embedded, "What is the secret code written in notes.txt?", file_tools(workspace), tmp_path
    )
    reads = [s.input for s in result.tool_steps if s.name == "read_file" and s.error is None]
    assert {"path": "notes.txt"} in reads
    assert "4721" in (result.answer or "")


def test_readme_example(embedded: LocalModel) -> None:
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    code = re.search(r"## In Python\n\n```python\n(.*?)```", readme, re.DOTALL)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    result = namespace["result"]
    assert "500" in (result.answer or "")  # type: ignore[attr-defined]
    assert [s.name for s in result.tool_steps][:2] == ["stock_price", "calculator"]  # type: ignore[attr-defined]
