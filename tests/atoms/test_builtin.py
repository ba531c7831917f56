from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bigloop import ToolFailure, UserError
from bigloop.atoms.builtin import (
    add_days,
    calculator,
    convert_units,
    days_between,
    file_tools,
    sqlite_tools,
    weekday,
)
from bigloop.atoms.builtin.calculator import CalculatorError, evaluate


def run(tool: object, **args: object) -> str:
    return asyncio.run(tool.call(args))  # type: ignore[attr-defined,no-any-return]


def test_calculator() -> None:
    assert run(calculator, expression="(45 + 12) / 3") == "19"
    assert run(calculator, expression="2^10 + sqrt(16)") == "1028"
    assert evaluate("2,480 * 0.175") == 434.0  # thousands separators
    assert evaluate("round(1234.5678,2)") == 1234.57  # ...but a comma between arguments
    assert evaluate("min(2,500)") == 2
    assert evaluate("round(pi, 2)") == 3.14
    for bad in ["__import__('os')", "open('x')", "a + 1", "9 ** 99999"]:
        with pytest.raises(CalculatorError):
            evaluate(bad)
    with pytest.raises(ToolFailure, match="Unsupported element"):
        run(calculator, expression="().__class__")


def test_dates_and_units() -> None:
    assert run(days_between, start_date="2024-01-15", end_date="2024-03-01") == "46"
    assert run(add_days, date="2024-02-28", days=2) == "2024-03-01"
    assert run(weekday, date="2024-07-04") == "Thursday"
    assert run(convert_units, value=26.2, from_unit="miles", to_unit="km") == "42.1648128"
    assert run(convert_units, value=1, from_unit="byte", to_unit="GiB") != "0.0"  # not rounded away
    assert run(convert_units, value=-40, from_unit="deg C", to_unit="Fahrenheit") == "-40.0"
    assert run(convert_units, value=12, from_unit="stone", to_unit="kg") == "76.20351816"
    assert run(convert_units, value=100, from_unit="F", to_unit="C") == "37.7777777778"
    with pytest.raises(ToolFailure, match="Cannot convert length"):
        run(convert_units, value=1, from_unit="km", to_unit="kg")
    with pytest.raises(ToolFailure, match="not a date in YYYY-MM-DD"):
        run(weekday, date="July 4")


def test_file_tools_stay_inside_their_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("hello\nsecret 42\n")
    read_file, search_files, list_files = file_tools(tmp_path)
    assert run(list_files) == '["sub/a.txt"]'
    assert run(list_files, pattern="sub") == run(list_files, pattern="sub/") == '["sub/a.txt"]'
    assert run(read_file, path="sub/a.txt") == "hello\nsecret 42\n"
    assert run(search_files, text="SECRET") == '["sub/a.txt:2: secret 42"]'
    with pytest.raises(ToolFailure, match="outside the allowed folder"):
        run(read_file, path="../../etc/passwd")
    with pytest.raises(UserError, match="is not a folder"):
        file_tools(tmp_path / "missing")


def test_file_tools_say_what_the_folder_holds(tmp_path: Path) -> None:
    """A request about "my recipes" must find the tool that lists them (the relevance
    gate and the model read the same docs)."""
    assert file_tools(tmp_path)[2].description.endswith("The workspace folder is empty.")
    for name in ("recipes", "notes", ".git"):
        (tmp_path / name).mkdir()
    (tmp_path / "todo.txt").write_text("milk\n")
    assert file_tools(tmp_path)[2].description.endswith(
        "The workspace folder holds notes/, recipes/, todo.txt."
    )
    for k in range(20):
        (tmp_path / f"f{k:02}.txt").write_text("")
    assert file_tools(tmp_path)[2].description.endswith("f11.txt and 11 more.")


def test_sqlite_tools_are_read_only(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        db.executemany("INSERT INTO orders (total) VALUES (?)", [(1,), (2,)])
    schema, query = sqlite_tools(path)
    assert "CREATE TABLE orders" in run(schema)
    assert run(query, query="SELECT COUNT(*) AS n FROM orders") == (
        '{"columns": ["n"], "rows": [[2]], "truncated": false}'
    )
    with pytest.raises(ToolFailure, match="readonly"):
        run(query, query="DELETE FROM orders")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM orders").fetchone() == (2,)
