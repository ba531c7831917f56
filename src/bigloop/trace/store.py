"""Runs and their steps, in SQLite (or PostgreSQL): the trace, and the checkpoint a
resume starts from.

Each step is committed as it completes, so a run killed at any point keeps every step it
finished. The default file is `traces.db` in the user's data directory ($BIGLOOP_HOME
overrides the directory). A file the store creates is private to its user (0600; a folder
it creates, 0700).

The file's layout is versioned (`PRAGMA user_version`, `SCHEMA_VERSION`): an older layout
is upgraded when the file is opened; a newer one, a file that is not a trace, or a folder
is refused with the fix. A run is owned by the process running it (`runs.owner`), so two
processes never resume the same run at once (`TraceStore.claim`).

A `postgresql://` URL in place of the path keeps the same tables in PostgreSQL, shared by
processes on many hosts (`bigloop.trace.postgres`; the `postgres` extra).
$BIGLOOP_TRACE_DB names the default store (a path or a URL).

Text is written as valid UTF-8 (`valid_text`) and a value JSON cannot hold (an integer too
long to print, nesting past the recursion limit) as a note, so recording a step never
fails on what a model or a tool produced.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import Message, Usage
from bigloop.trace import postgres
from bigloop.trace.records import (
    Question,
    Refusal,
    RunResult,
    RunStatus,
    Step,
    message_from_dict,
    message_to_dict,
    valid_text,
)
from bigloop.trace.redact import Redactor

SCHEMA_VERSION = 4
"""The trace file's layout. 1: runs, steps, intents (files written before the layout had a
version say 0). 2: `runs.owner` and `runs.heartbeat`, who is running a run. 3: `runs.cost`,
the run's cost so far (NULL for runs recorded before). 4: `steps.refusal` and
`steps.question`, a check's refusal and a question to the user as data (JSON), and
`runs.question`, the question a run stopped on."""

STALE_SECONDS = 600.0
"""A run owned by a process on another host whose last step is older than this may be
taken over (on this host, the owner process is checked directly)."""

_TABLES = (
    """CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL,
    answer TEXT,
    error TEXT,
    started_at DOUBLE PRECISION NOT NULL,
    ended_at DOUBLE PRECISION,
    owner TEXT,
    heartbeat DOUBLE PRECISION,
    cost DOUBLE PRECISION,
    question TEXT
)""",
    """CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    input TEXT,
    output TEXT,
    error TEXT,
    seconds DOUBLE PRECISION NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    message TEXT,
    started_at DOUBLE PRECISION NOT NULL,
    refusal TEXT,
    question TEXT,
    PRIMARY KEY (run_id, idx)
)""",
    """CREATE TABLE IF NOT EXISTS intents (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    call TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, call)
)""",
)
_ADDED = {
    "runs": (
        ("owner", "TEXT"),
        ("heartbeat", "DOUBLE PRECISION"),
        ("cost", "DOUBLE PRECISION"),
        ("question", "TEXT"),
    ),
    "steps": (("refusal", "TEXT"), ("question", "TEXT")),
}
"""Columns added since version 1, by table: the upgrade adds them to an older file."""
_STEP_COLUMNS = (
    "run_id, idx, kind, name, input, output, error, seconds, prompt_tokens, "
    "completion_tokens, message, started_at, refusal, question"
)
_COLUMNS = {
    "runs": (
        "run_id task model config status answer error started_at ended_at owner heartbeat cost "
        "question"
    ).split(),
    "steps": _STEP_COLUMNS.replace(",", "").split(),
    "intents": ["run_id", "call", "started_at"],
}


def default_home() -> Path:
    if env := os.environ.get("BIGLOOP_HOME"):
        return Path(env)
    from platformdirs import user_data_path

    return user_data_path("bigloop")


@dataclass(kw_only=True)
class RunSummary:
    run_id: str
    task: str
    model: str
    status: str
    answer: str | None
    error: str | None
    started_at: float
    ended_at: float | None
    steps: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    config: dict[str, Any]
    cost: float | None = None
    """The run's cost from the atoms' cards, as of its last recorded step; None for a run
    recorded before bigloop stored costs."""
    question: str | None = None
    """The question a run with status "input_required" stopped on."""


@dataclass(kw_only=True)
class StepOutcome:
    """How one traced step went, without its inputs and outputs: what learning from the
    traces (success rates, latencies, token costs per atom) reads."""

    run_id: str
    kind: str
    name: str
    error: str | None
    seconds: float
    prompt_tokens: int
    completion_tokens: int


class TraceStore:
    """A SQLite file of runs and steps. Safe to share between loops in one process.

    Args:
        redactor: what never reaches the file (default: `Redactor.from_env()`: URL
            credentials, key formats, secret environment variables). A resumed run sees
            `[REDACTED]` where a value was redacted.
        create: create the file (and its folder) when it does not exist; False for
            readers, which have nothing to read in a new file.

    Raises:
        UserError: `path` is a folder, is not a SQLite file, was written by a newer
            bigloop, or holds tables of something else; or it cannot be created; or, with
            `create=False`, it does not exist.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        redactor: Redactor | None = None,
        create: bool = True,
    ) -> None:
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        if path is None and (named := os.environ.get("BIGLOOP_TRACE_DB")):
            path = named
        if path is not None and postgres.is_url(path):
            self.url: str | None = postgres.url_of(path)
            self.path = Path(postgres.shown(self.url))  # what messages name
            self._db: Any = postgres.open_postgres(self.url, _TABLES, SCHEMA_VERSION, _ADDED)
            self._for_update = " FOR UPDATE"
            _check_columns(self._db, self.path)
            return
        self.url = None
        self._for_update = ""
        self.path = Path(path) if path is not None else default_home() / "traces.db"
        if not create and str(self.path) != ":memory:" and not self.path.exists():
            raise UserError(
                f"No trace DB at {self.path}: no run has been recorded there. Check the "
                "path (--trace-db), or record a run first with `bigloop run`."
            )
        self._db = _open(self.path)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self, *, immediate: bool = False) -> Iterator[Any]:
        """A transaction; a write the disk refuses (full, read-only, I/O error) is a
        `TraceWriteError` naming the file, with nothing half-written."""
        try:
            self._db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise
            raise TraceWriteError(
                f"The trace DB {self.path} could not be written ({e}): free some disk space "
                "or pass another --trace-db; the run's steps up to here are kept."
            ) from e

    def start_run(self, run_id: str, task: str, model: str, config: dict[str, Any]) -> None:
        self.redactor = self.redactor.learning(task)  # "my password is ...": kept out later too
        task, config = self.redactor.text(task), self.redactor.value(config)
        now, owner = time.time(), _this_process()
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs (run_id, task, model, config, status, started_at, owner, "
                "heartbeat) VALUES (?, ?, ?, ?, 'running', ?, ?, ?)",
                (run_id, valid_text(task), valid_text(model), _dump(config), now, owner, now),
            )

    def add_step(self, step: Step, *, cost: float | None = None) -> None:
        """Record a completed step; `cost`, the run's cost so far, with it (a run killed
        later keeps what it cost up to here)."""
        calls = [c.arguments for c in step.message.tool_calls] if step.message else []
        self.redactor = self.redactor.learning([step.input, calls])
        step = self.redactor.step(step)
        with self._tx() as db:
            db.execute(
                f"INSERT INTO steps ({_STEP_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    step.run_id,
                    step.index,
                    step.kind,
                    valid_text(step.name),
                    _dump(step.input),
                    _dump(step.output),
                    _text(step.error),
                    step.seconds,
                    step.prompt_tokens,
                    step.completion_tokens,
                    _dump_message(step.message) if step.message else None,
                    step.started_at,
                    _dump(step.refusal.to_dict()) if step.refusal else None,
                    _dump(step.question.to_dict()) if step.question else None,
                ),
            )
            db.execute(
                "UPDATE runs SET heartbeat = ?, cost = COALESCE(?, cost) WHERE run_id = ?",
                (time.time(), cost, step.run_id),
            )

    def add_intent(self, run_id: str, call: str) -> None:
        """Record, before it starts, a call that must not run twice (a non-idempotent tool).

        A resume finds the intent without a completed step and does not call again.
        """
        call = self.redactor.text(call)
        with self._tx() as db:
            db.execute(
                "INSERT INTO intents VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (run_id, valid_text(call), time.time()),
            )

    def intents(self, run_id: str) -> set[str]:
        rows = self._db.execute("SELECT call FROM intents WHERE run_id = ?", (run_id,))
        return {r[0] for r in rows}

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        answer: str | None,
        error: str | None,
        *,
        cost: float | None = None,
        question: str | None = None,
    ) -> None:
        """Record how a run ended; `cost`, what the whole run cost (None keeps the cost
        recorded with its last step); `question`, what a run that stopped to ask asks."""
        answer = None if answer is None else self.redactor.text(answer)
        error = None if error is None else self.redactor.text(error)
        question = None if question is None else self.redactor.text(question)
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET status = ?, answer = ?, error = ?, ended_at = ?, "
                "cost = COALESCE(?, cost), question = ? WHERE run_id = ?",
                (status, _text(answer), _text(error), time.time(), cost, _text(question), run_id),
            )

    def claim(self, run_id: str) -> bool:
        """Take run `run_id` over to resume it: mark it running, owned by this process.

        Atomic across processes: of two resumes of one run, the second is refused. A run
        whose owner is gone (killed, crashed) is taken over. Returns False, claiming
        nothing, for a run that has ended with an answer.

        Raises:
            UserError: no such run, or another process (or another resume in this one)
                is running it; the message names the process.
        """
        now = time.time()
        with self._tx(immediate=True) as db:
            row = db.execute(
                "SELECT status, owner, heartbeat FROM runs WHERE run_id = ?" + self._for_update,
                (run_id,),
            ).fetchone()
            if row is None:
                raise UserError(f"No run matches id {run_id!r}; see `bigloop trace list`.")
            status, owner, heartbeat = row
            if status == "ok":
                return False
            if status == "running" and _alive(owner, heartbeat):
                host, pid, _ = _owner_parts(owner)
                ago = f"{now - heartbeat:.0f} s ago" if heartbeat else "at an unknown time"
                raise UserError(
                    f"Run {run_id} is being resumed (or run) by pid {pid} on {host}, which "
                    f"last recorded a step {ago}; wait for it to end, or stop that process "
                    "and resume again."
                )
            db.execute(
                "UPDATE runs SET status = 'running', ended_at = NULL, owner = ?, heartbeat = ? "
                "WHERE run_id = ?",
                (_this_process(), now, run_id),
            )
        return True

    def steps(self, run_id: str) -> list[Step]:
        rows = self._db.execute(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY idx",
            (run_id,),
        ).fetchall()
        return [
            Step(
                run_id=r[0],
                index=r[1],
                kind=r[2],
                name=r[3],
                input=_load(r[4]),
                output=_load(r[5]),
                error=r[6],
                seconds=r[7],
                prompt_tokens=r[8],
                completion_tokens=r[9],
                message=message_from_dict(json.loads(r[10])) if r[10] else None,
                started_at=r[11],
                refusal=Refusal.from_dict(json.loads(r[12])) if r[12] else None,
                question=Question.from_dict(json.loads(r[13])) if r[13] else None,
            )
            for r in rows
        ]

    def step_outcomes(self, kinds: Collection[str] | None = None) -> list[StepOutcome]:
        """Every step of every run in the order they were recorded, or only the steps
        whose kind is in `kinds` (e.g. `{"tool", "model"}`)."""
        query = (
            "SELECT run_id, kind, name, error, seconds, prompt_tokens, completion_tokens FROM steps"
        )
        wanted = list(kinds) if kinds is not None else []
        if kinds is not None:
            query += f" WHERE kind IN ({', '.join('?' * len(wanted))})"
        rows = self._db.execute(query + " ORDER BY rowid", wanted).fetchall()
        return [
            StepOutcome(
                run_id=r[0],
                kind=r[1],
                name=r[2],
                error=r[3],
                seconds=r[4],
                prompt_tokens=r[5],
                completion_tokens=r[6],
            )
            for r in rows
        ]

    def runs(self, limit: int = 20) -> list[RunSummary]:
        """The newest `limit` runs, newest first."""
        return self._summaries("", (), limit)

    def run(self, run_id: str) -> RunSummary:
        """One run's summary; a unique prefix of its id is enough (the exact id always is).

        Raises:
            UserError: no run, or several runs, match `run_id`.
        """
        if exact := self._summaries("WHERE r.run_id = ?", (run_id,), 1):
            return exact[0]
        prefix = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        matches = self._db.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2", (prefix + "%",)
        ).fetchall()
        if len(matches) != 1:
            what = "No run" if not matches else "More than one run"
            raise UserError(f"{what} matches id {run_id!r}; see `bigloop trace list`.")
        return self._summaries("WHERE r.run_id = ?", (matches[0][0],), 1)[0]

    def _summaries(self, where: str, params: tuple[Any, ...], limit: int) -> list[RunSummary]:
        rows = self._db.execute(
            "SELECT r.run_id, r.task, r.model, r.status, r.answer, r.error, r.started_at, "
            "r.ended_at, r.config, r.cost, r.question, r.owner, r.heartbeat, COUNT(s.idx), "
            "COALESCE(SUM(CASE WHEN s.kind = 'tool' THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(s.prompt_tokens), 0), "
            "COALESCE(SUM(s.completion_tokens), 0) "
            f"FROM runs r LEFT JOIN steps s ON s.run_id = r.run_id {where} "
            "GROUP BY r.run_id, r.task, r.model, r.status, r.answer, r.error, r.started_at, "
            "r.ended_at, r.config, r.cost, r.question, r.owner, r.heartbeat "
            "ORDER BY r.started_at DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [
            RunSummary(
                run_id=r[0],
                task=r[1],
                model=r[2],
                # a run whose process is gone without saying how it ended was interrupted
                status="interrupted" if r[3] == "running" and not _alive(r[11], r[12]) else r[3],
                answer=r[4],
                error=r[5],
                started_at=r[6],
                ended_at=r[7],
                config=json.loads(r[8]),
                cost=r[9],
                question=r[10],
                steps=r[13],
                tool_calls=r[14],
                prompt_tokens=r[15],
                completion_tokens=r[16],
            )
            for r in rows
        ]

    def result(self, run_id: str) -> RunResult:
        summary = self.run(run_id)
        steps = self.steps(summary.run_id)
        usage = Usage(
            prompt_tokens=summary.prompt_tokens,
            completion_tokens=summary.completion_tokens,
            seconds=sum(s.seconds for s in steps if s.kind == "model"),
        )
        for s in steps:
            if s.kind == "model" and isinstance(s.input, dict):
                usage.add(Usage.from_latency(s.input.get("latency")))
        return RunResult(
            run_id=summary.run_id,
            task=summary.task,
            status=summary.status,  # type: ignore[arg-type]
            answer=summary.answer,
            error=summary.error,
            steps=steps,
            usage=usage,
            cost=summary.cost or 0.0,
            question=summary.question,
        )


def _open(path: Path) -> sqlite3.Connection:
    """A connection to the trace file at `path` (created private if new), its layout
    checked and upgraded to `SCHEMA_VERSION`."""
    if path.is_dir():
        raise UserError(
            f"The trace DB {path} is a folder; pass a file, e.g. --trace-db {path / 'traces.db'}."
        )
    try:
        _create_private(path)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10.0)
    except (OSError, sqlite3.Error) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        raise UserError(f"Cannot create or open the trace DB {path}: {why}.") from None
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        _upgrade(db, path)
    except sqlite3.DatabaseError as e:
        db.close()
        raise UserError(
            f"{path} is not a trace DB that can be read ({e}). Pass another --trace-db, or "
            "move this file away and bigloop starts a new one."
        ) from None
    except BaseException:
        db.close()
        raise
    return db


def _create_private(path: Path) -> None:
    """Create an empty file at `path` readable by its user only (its folder too, if new)."""
    if path.exists() or str(path) == ":memory:":
        return
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:  # another process created it first
        pass


def _upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Create the tables of a new file, upgrade an older layout, refuse a newer one."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise UserError(
            f"The trace DB {path} was written by a newer bigloop (layout version {version}; "
            f"this one reads up to {SCHEMA_VERSION}). Upgrade bigloop "
            "(pip install -U bigloop), or pass another --trace-db."
        )
    if version < SCHEMA_VERSION:
        db.execute("BEGIN IMMEDIATE")  # one process upgrades; the others wait, then see it done
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                _create_tables(db, path)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    _check_columns(db, path)


def _check_columns(db: Any, path: Path) -> None:
    """Refuse a store whose tables lack a column the store writes."""
    for table, wanted in _COLUMNS.items():
        have = (
            postgres.columns(db, table)
            if isinstance(db, postgres.Connection)
            else _columns(db, table)
        )
        if missing := [c for c in wanted if c not in have]:
            raise UserError(
                f"The trace DB {path} has no column(s) {missing} in its {table} table: it was "
                "not written by bigloop, or was changed by hand. Pass another --trace-db."
            )


def _create_tables(db: sqlite3.Connection, path: Path) -> None:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables and "runs" not in tables:
        raise UserError(
            f"{path} is a SQLite file of something else (tables {sorted(tables)}), not a "
            "bigloop trace; pass another --trace-db."
        )
    for statement in _TABLES:  # not executescript: it would commit the transaction
        db.execute(statement)
    for table, added in _ADDED.items():
        have = _columns(db, table)
        for column, kind in added:
            if column not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _this_process() -> str:
    """Who owns the runs this process runs: host, pid and the pid's start time (so a
    reused pid is not mistaken for the owner). Read each time: a forked child is another
    owner."""
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{_started(pid) or ''}"


class TraceWriteError(UserError):
    """The trace DB could not be written (a full disk, a read-only file, an I/O error)."""


def _owner_parts(owner: str) -> tuple[str, int, str]:
    host, pid, started = owner.rsplit("/", 2)
    return host, int(pid), started


def _alive(owner: str | None, heartbeat: float | None) -> bool:
    """Whether the process that owns a running run may still be running it."""
    if not owner:  # recorded before runs had owners: nothing says it is alive
        return False
    host, pid, started = _owner_parts(owner)
    if host != socket.gethostname() or os.name == "nt":  # cannot look at that process
        return heartbeat is not None and time.time() - heartbeat < STALE_SECONDS
    now = _started(pid)
    return now is not None and (now == started or not started)


def _started(pid: int) -> str | None:
    """When process `pid` started ("" when this system does not say), or None when there
    is no such live process (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None if Path("/proc/self/stat").exists() else _exists(pid)
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _exists(pid: int) -> str | None:
    """Without /proc (macOS): "" when process `pid` exists, else None."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # it exists, owned by someone else
        return ""
    return ""


def _text(value: str | None) -> str | None:
    return None if value is None else valid_text(value)


def _dump(value: Any) -> str | None:
    """`value` as JSON text for a column; a note in its place when JSON cannot hold it."""
    if value is None:
        return None
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError, TypeError) as e:
        text = json.dumps(f"(a {type(value).__name__} that cannot be stored: {e})"[:500])
    return valid_text(text)


def _dump_message(message: Message) -> str:
    """A step's message as JSON. A call whose arguments JSON cannot hold keeps its id and
    name, with a note for arguments (a resume then shows the model that the call failed)."""
    try:
        return valid_text(json.dumps(message_to_dict(message), default=str, ensure_ascii=False))
    except (ValueError, RecursionError, TypeError):
        calls = [
            {"id": c.id, "name": c.name, "arguments": "(arguments that cannot be stored)"}
            for c in message.tool_calls
        ]
        data = {
            "role": message.role,
            "content": message.content,
            "tool_calls": calls,
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "origin": message.origin,
        }
        return valid_text(json.dumps(data, ensure_ascii=False))


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)
