"""Read-only SQL over a SQLite file, with hard limits on time and size.

A query is stopped at its deadline by SQLite's progress handler (so the work really ends,
not only the wait for it); no string or blob SQLite builds may exceed `_MAX_VALUE_BYTES`,
no result row may have more columns than the widest table; rows are fetched one at a
time and cells cut before the result grows past `_MAX_RESULT_CHARS`. ATTACH is disabled,
so a query can neither read nor create another database file.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.tool import Tool, tool

_MAX_ROWS = 200
_MAX_CELL_CHARS = 1000
_MAX_RESULT_CHARS = 20_000
_MAX_VALUE_BYTES = 1_000_000
_MAX_SQL_CHARS = 100_000
_MIN_COLUMNS = 100
_PROGRESS_EVERY = 1000  # virtual-machine instructions between deadline checks


class QueryStopped(RuntimeError):
    """The query ran past its deadline and SQLite interrupted it."""


def sqlite_tools(path: str | Path, *, timeout_s: float = 10.0) -> list[Tool]:
    """Tools that describe and query a SQLite database without being able to change it.

    Args:
        path: the SQLite file.
        timeout_s: seconds a query may run before SQLite stops it.

    Raises:
        UserError: the file does not exist.
    """
    db_path = Path(path).resolve()
    if not db_path.is_file():
        raise UserError(f"{path} does not exist; pass an existing SQLite file to sqlite_tools().")
    with closing(_open(db_path, columns=None)) as db:
        tables, widest = _tables(db)
    columns = max(_MIN_COLUMNS, widest)

    @tool
    def sql_schema() -> str:
        """The tables of the database and their CREATE statements."""
        with closing(_open(db_path, columns)) as db:
            rows = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table'").fetchall()
        return "\n".join(r[0] for r in rows if r[0])

    def sql_query(query: str) -> dict[str, Any]:
        with closing(_open(db_path, columns)) as db:
            deadline = time.monotonic() + timeout_s
            db.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_EVERY)
            try:
                return _fetch(db.execute(query))
            except (sqlite3.OperationalError, sqlite3.DataError) as e:
                if str(e) == "interrupted" and time.monotonic() > deadline:
                    raise QueryStopped(
                        f"The query ran longer than {timeout_s:g} s and was stopped. Add a "
                        f"LIMIT, filter earlier, or simplify it."
                    ) from None
                if "too big" in str(e):
                    raise ValueError(
                        f"{e}: a value would exceed {_MAX_VALUE_BYTES} bytes. Select part "
                        f"of it (substr, length) or aggregate less."
                    ) from None
                raise

    # The tables and columns are part of the description: the model writes the query
    # without a schema lookup first, and tool selection sees the database's words.
    sql_query.__doc__ = f"""Run a read-only SQL query (SELECT) on the database and return
    its rows. Tables: {tables}.

    Args:
        query: one SQLite SELECT statement.
    """
    return [sql_schema, tool(timeout_s=timeout_s + 5)(sql_query)]


def _open(db_path: Path, columns: int | None) -> sqlite3.Connection:
    db = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True)
    db.execute("PRAGMA query_only = ON")
    db.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
    db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, _MAX_SQL_CHARS)
    if columns is not None:
        db.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, columns)
    return db


def _fetch(cursor: sqlite3.Cursor) -> dict[str, Any]:
    """Rows one at a time, each cell cut, until `_MAX_ROWS` or `_MAX_RESULT_CHARS`."""
    columns = [d[0] for d in cursor.description or []]
    rows: list[list[Any]] = []
    size = 0
    truncated = False
    while (row := cursor.fetchone()) is not None:
        if len(rows) == _MAX_ROWS or size > _MAX_RESULT_CHARS:
            truncated = True
            break
        cells = [_cell(v) for v in row]
        size += sum(len(c) if isinstance(c, str) else 8 for c in cells)
        rows.append(cells)
    return {"columns": columns, "rows": rows, "truncated": truncated}


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        preview = value[:16].hex()
        more = "…" if len(value) > 16 else ""
        return f"<blob of {len(value)} bytes: {preview}{more}>"
    if isinstance(value, str) and len(value) > _MAX_CELL_CHARS:
        return f"{value[:_MAX_CELL_CHARS]}… [{len(value) - _MAX_CELL_CHARS} more characters]"
    return value


def _tables(db: sqlite3.Connection, limit: int = 1500) -> tuple[str, int]:
    """ "orders(id, customer_id, total); customers(id, name)", cut at `limit` characters,
    and the largest number of columns of a table or view."""
    names = [
        r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    ]
    tables, parts, widest = set(_table_names(db)), [], 0
    for name in names:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({_quoted(name)})")]
        widest = max(widest, len(columns))
        if name in tables:
            parts.append(f"{name}({', '.join(columns)})")
    text = "; ".join(parts)
    return (text if len(text) <= limit else text[: limit - 1] + "…"), widest


def _table_names(db: sqlite3.Connection) -> list[str]:
    return [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
