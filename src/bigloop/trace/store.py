"""Runs and their steps, in SQLite: the trace, and the checkpoint a resume starts from.

Each step is committed as it completes, so a run killed at any point keeps every step it
finished. The default file is `traces.db` in the user's data directory ($BIGLOOP_HOME
overrides the directory).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import Usage
from bigloop.trace.records import (
    RunResult,
    RunStatus,
    Step,
    message_from_dict,
    message_to_dict,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL,
    answer TEXT,
    error TEXT,
    started_at REAL NOT NULL,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    input TEXT,
    output TEXT,
    error TEXT,
    seconds REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    message TEXT,
    started_at REAL NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS intents (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    call TEXT NOT NULL,
    started_at REAL NOT NULL,
    PRIMARY KEY (run_id, call)
);
"""


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
    """A SQLite file of runs and steps. Safe to share between loops in one process."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_home() / "traces.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def start_run(self, run_id: str, task: str, model: str, config: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs (run_id, task, model, config, status, started_at) "
                "VALUES (?, ?, ?, ?, 'running', ?)",
                (run_id, task, model, json.dumps(config), time.time()),
            )

    def add_step(self, step: Step) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    step.run_id,
                    step.index,
                    step.kind,
                    step.name,
                    _dump(step.input),
                    _dump(step.output),
                    step.error,
                    step.seconds,
                    step.prompt_tokens,
                    step.completion_tokens,
                    _dump(message_to_dict(step.message)) if step.message else None,
                    step.started_at,
                ),
            )

    def add_intent(self, run_id: str, call: str) -> None:
        """Record, before it starts, a call that must not run twice (a non-idempotent tool).

        A resume finds the intent without a completed step and does not call again.
        """
        with self._tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO intents VALUES (?, ?, ?)", (run_id, call, time.time())
            )

    def intents(self, run_id: str) -> set[str]:
        rows = self._db.execute("SELECT call FROM intents WHERE run_id = ?", (run_id,))
        return {r[0] for r in rows}

    def finish_run(
        self, run_id: str, status: RunStatus, answer: str | None, error: str | None
    ) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET status = ?, answer = ?, error = ?, ended_at = ? WHERE run_id = ?",
                (status, answer, error, time.time(), run_id),
            )

    def mark_running(self, run_id: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET status = 'running', ended_at = NULL WHERE run_id = ?", (run_id,)
            )

    def steps(self, run_id: str) -> list[Step]:
        rows = self._db.execute(
            "SELECT run_id, idx, kind, name, input, output, error, seconds, prompt_tokens, "
            "completion_tokens, message, started_at FROM steps WHERE run_id = ? ORDER BY idx",
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
        rows = self._db.execute(
            "SELECT r.run_id, r.task, r.model, r.status, r.answer, r.error, r.started_at, "
            "r.ended_at, r.config, COUNT(s.idx), "
            "COALESCE(SUM(s.kind = 'tool'), 0), COALESCE(SUM(s.prompt_tokens), 0), "
            "COALESCE(SUM(s.completion_tokens), 0) "
            "FROM runs r LEFT JOIN steps s ON s.run_id = r.run_id "
            "GROUP BY r.run_id ORDER BY r.started_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [
            RunSummary(
                run_id=r[0],
                task=r[1],
                model=r[2],
                status=r[3],
                answer=r[4],
                error=r[5],
                started_at=r[6],
                ended_at=r[7],
                config=json.loads(r[8]),
                steps=r[9],
                tool_calls=r[10],
                prompt_tokens=r[11],
                completion_tokens=r[12],
            )
            for r in rows
        ]

    def run(self, run_id: str) -> RunSummary:
        """One run's summary; a unique prefix of its id is enough.

        Raises:
            UserError: no run, or several runs, match `run_id`.
        """
        matches = self._db.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? LIMIT 2", (run_id + "%",)
        ).fetchall()
        if len(matches) != 1:
            what = "No run" if not matches else "More than one run"
            raise UserError(f"{what} matches id {run_id!r}; see `bigloop trace list`.")
        full = matches[0][0]
        return next(s for s in self.runs(limit=1_000_000) if s.run_id == full)

    def result(self, run_id: str) -> RunResult:
        summary = self.run(run_id)
        steps = self.steps(summary.run_id)
        usage = Usage(
            prompt_tokens=summary.prompt_tokens,
            completion_tokens=summary.completion_tokens,
            seconds=sum(s.seconds for s in steps if s.kind == "model"),
        )
        return RunResult(
            run_id=summary.run_id,
            task=summary.task,
            status=summary.status,  # type: ignore[arg-type]
            answer=summary.answer,
            error=summary.error,
            steps=steps,
            usage=usage,
        )


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str, ensure_ascii=False)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)
