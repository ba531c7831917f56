"""Read-only SQL over a SQLite file."""

from __future__ import annotations

import sqlite3
from contextlib import closing
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

    def connect() -> closing[sqlite3.Connection]:
        db = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True)
        db.execute("PRAGMA query_only = ON")
        return closing(db)

    @tool
    def sql_schema() -> str:
        """The tables of the database and their CREATE statements."""
        with connect() as db:
            rows = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table'").fetchall()
        return "\n".join(r[0] for r in rows if r[0])

    def sql_query(query: str) -> dict[str, Any]:
        with connect() as db:
            cursor = db.execute(query)
            columns = [d[0] for d in cursor.description or []]
            rows = cursor.fetchmany(_MAX_ROWS + 1)
        return {
            "columns": columns,
            "rows": [list(r) for r in rows[:_MAX_ROWS]],
            "truncated": len(rows) > _MAX_ROWS,
        }

    # The tables and columns are part of the description: the model writes the query
    # without a schema lookup first, and tool selection sees the database's words.
    with connect() as db:
        tables = _tables(db)
    sql_query.__doc__ = f"""Run a read-only SQL query (SELECT) on the database and return
    its rows. Tables: {tables}.

    Args:
        query: one SQLite SELECT statement.
    """
    return [sql_schema, tool(sql_query)]


def _tables(db: sqlite3.Connection, limit: int = 1500) -> str:
    """ "orders(id, customer_id, total); customers(id, name)", cut at `limit` characters."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    parts = []
    for name in names:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({_quoted(name)})")]
        parts.append(f"{name}({', '.join(columns)})")
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
