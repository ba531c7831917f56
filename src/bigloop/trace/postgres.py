"""The trace store on PostgreSQL: many processes and hosts share one store.

`TraceStore("postgresql://user@host/db")` (or `--trace-db postgresql://…`,
`BIGLOOP_TRACE_DB`) keeps runs and steps in PostgreSQL instead of a SQLite file: the same
tables, the same layout version, the same store code. This module is the seam: a psycopg 3
connection that answers the calls the store makes of a `sqlite3.Connection` — `?`
placeholders, `execute(...)` returning a cursor, explicit `BEGIN`/`COMMIT`,
`in_transaction`, `close` — and raises `sqlite3`'s exception classes, so the store's
handling of a write the server refuses (a full disk, a lost connection) and of a
duplicate id is one code path for both.

What differs, and where:

- the layout's version lives in a `bigloop_meta` table (SQLite: `PRAGMA user_version`);
  creating or upgrading it holds an advisory lock, so processes starting together do it
  once;
- the tables declare floats DOUBLE PRECISION for both (PostgreSQL's REAL has 24 bits: a
  timestamp would lose its seconds; SQLite reads the name as REAL); steps carry a
  `seq BIGSERIAL`, the order they were recorded (SQLite's rowid);
- `claim` locks the run's row (`SELECT … FOR UPDATE`): of two processes resuming one run,
  on any hosts, one wins; the other is told who holds it. A holder on another host is
  taken over when its last step is older than `STALE_SECONDS` (a lease with expiry).

Needs the `postgres` extra (psycopg 3).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from bigloop._errors import UserError

SCHEMES = ("postgresql://", "postgres://")

_LOCK_KEY = 0x6269676C6F6F70  # "bigloop": one advisory lock for creating the layout


def is_url(target: object) -> bool:
    """Whether `target` names a PostgreSQL database rather than a SQLite file (a URL that
    went through `pathlib.Path` has lost one of its slashes: that counts too)."""
    text = str(target)
    return text.startswith(SCHEMES) or text.startswith(("postgresql:/", "postgres:/"))


def url_of(target: object) -> str:
    """The URL `target` names, its slashes restored after `pathlib.Path` merged them."""
    text = str(target)
    for scheme in ("postgresql:", "postgres:"):
        if text.startswith(scheme) and not text.startswith(scheme + "//"):
            return scheme + "//" + text[len(scheme) :].lstrip("/")
    return text


def shown(url: str) -> str:
    """`url` with its password hidden, for messages."""
    return re.sub(r"(//[^:/@]+:)[^@]*@", r"\1***@", url)


def _translated(sql: str) -> str:
    """The store's SQLite statement in PostgreSQL's terms."""
    sql = sql.replace("?", "%s").replace("BEGIN IMMEDIATE", "BEGIN")
    return re.sub(r"\browid\b", "seq", sql)


class Connection:
    """A psycopg 3 connection answering the `sqlite3.Connection` calls of `TraceStore`."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise UserError(
                "A PostgreSQL trace store needs psycopg: install bigloop's 'postgres' extra "
                "(from a clone: pip install '.[postgres]')."
            ) from None
        self._psycopg = psycopg
        self.url = url
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise UserError(
                f"Cannot connect to the trace store {shown(url)}: {str(e).strip()}. Check the "
                "URL (--trace-db, BIGLOOP_TRACE_DB) and that the server is running."
            ) from None
        self._lock = threading.RLock()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            try:
                return self._conn.execute(_translated(sql), tuple(params))
            except self._psycopg.errors.UniqueViolation as e:
                raise sqlite3.IntegrityError(str(e)) from e
            except self._psycopg.errors.LockNotAvailable as e:
                raise sqlite3.OperationalError(f"database is locked: {e}") from e
            except self._psycopg.Error as e:
                raise sqlite3.OperationalError(str(e).strip()) from e

    @property
    def in_transaction(self) -> bool:
        status = self._conn.info.transaction_status
        return bool(status != self._psycopg.pq.TransactionStatus.IDLE)

    def close(self) -> None:
        self._conn.close()

    def __del__(self) -> None:  # a store dropped without close() closes its connection
        conn = getattr(self, "_conn", None)
        if conn is not None and not conn.closed:
            conn.close()


def open_postgres(
    url: str, tables: Sequence[str], version: int, added: dict[str, Any]
) -> Connection:
    """A connection to the store at `url`, its layout created or upgraded to `version`
    (the store's `tables` and `added` columns), a newer layout refused."""
    db = Connection(url)
    try:
        db.execute("BEGIN")
        db.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK_KEY,))
        db.execute("CREATE TABLE IF NOT EXISTS bigloop_meta (key TEXT PRIMARY KEY, value TEXT)")
        row = db.execute("SELECT value FROM bigloop_meta WHERE key = 'version'").fetchone()
        have = int(row[0]) if row else 0
        if have > version:
            raise UserError(
                f"The trace store {shown(url)} was written by a newer bigloop (layout version "
                f"{have}; this one reads up to {version}). Upgrade bigloop, or pass another "
                "--trace-db."
            )
        if have < version:
            for statement in tables:
                db.execute(statement)
            for table, columns in added.items():
                for column, kind in columns:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")
            db.execute("ALTER TABLE steps ADD COLUMN IF NOT EXISTS seq BIGSERIAL")
            db.execute(
                "INSERT INTO bigloop_meta (key, value) VALUES ('version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (str(version),),
            )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.close()
        raise
    return db


def columns(db: Connection, table: str) -> set[str]:
    """The columns `table` has."""
    rows = db.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND table_schema = current_schema()",
        (table,),
    ).fetchall()
    return {r[0] for r in rows}
