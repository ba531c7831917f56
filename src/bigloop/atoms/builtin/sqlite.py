"""Read-only SQL over a SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.tool import Tool, tool

_MAX_ROWS = 200


def sqlite_tools(path: str | Path) -> list[Tool]:
    """Tools that describe and query a SQLite database without being able to change it.

    Raises:
        UserError: the file does not exist.
    """
    db_path = Path(path).resolve()
    if not db_path.is_file():
        raise UserError(f"{path} does not exist; pass an existing SQLite file to sqlite_tools().")

    def connect() -> sqlite3.Connection:
        db = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True)
        db.execute("PRAGMA query_only = ON")
        return db

    @tool
    def sql_schema() -> str:
        """The tables of the database and their CREATE statements."""
        with connect() as db:
            rows = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table'").fetchall()
        return "\n".join(r[0] for r in rows if r[0])

    @tool
    def sql_query(query: str) -> dict[str, Any]:
        """Run a read-only SQL query (SELECT) on the database and return its rows.

        Args:
            query: one SQLite SELECT statement.
        """
        with connect() as db:
            cursor = db.execute(query)
            columns = [d[0] for d in cursor.description or []]
            rows = cursor.fetchmany(_MAX_ROWS + 1)
        return {
            "columns": columns,
            "rows": [list(r) for r in rows[:_MAX_ROWS]],
            "truncated": len(rows) > _MAX_ROWS,
        }

    return [sql_schema, sql_query]
