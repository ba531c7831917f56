"""The trace file: a versioned layout (older upgraded, newer refused with the fix), clear
errors for a folder, a corrupt file or another program's database, private permissions,
and extra columns that do not stop a resume from saving its steps."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bigloop import FunctionModel, Loop, Message, ToolSpec, TraceStore, UserError, tool
from bigloop.atoms.models.base import ToolCall
from bigloop.trace.records import Step
from bigloop.trace.store import SCHEMA_VERSION

PYTHONPATH = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}

LEGACY = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, task TEXT NOT NULL, model TEXT NOT NULL,
    config TEXT NOT NULL, status TEXT NOT NULL, answer TEXT, error TEXT,
    started_at REAL NOT NULL, ended_at REAL);
CREATE TABLE steps (run_id TEXT NOT NULL REFERENCES runs(run_id), idx INTEGER NOT NULL,
    kind TEXT NOT NULL, name TEXT NOT NULL, input TEXT, output TEXT, error TEXT,
    seconds REAL NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    message TEXT, started_at REAL NOT NULL, PRIMARY KEY (run_id, idx));
CREATE TABLE intents (run_id TEXT NOT NULL REFERENCES runs(run_id), call TEXT NOT NULL,
    started_at REAL NOT NULL, PRIMARY KEY (run_id, call));
"""
"""The layout before it had a version (user_version 0)."""


def interrupted(store: TraceStore, run_id: str = "run1") -> None:
    """A run killed after the model asked for one call, before the call completed."""
    store.start_run(run_id, "pay 5", "function", {})
    call = ToolCall(id="c1", name="pay", arguments={"amount": 5})
    message = Message(role="assistant", tool_calls=[call])
    store.add_step(Step(run_id=run_id, index=0, kind="model", name="function", message=message))
    store.finish_run(run_id, "interrupted", None, "interrupted")


def payer(store: TraceStore, paid: list[int]) -> Loop:
    @tool(idempotent=False, effect="write")
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        return json.dumps({"answer": "paid"})

    return Loop(FunctionModel(reply), [pay], store=store)


def test_a_resume_saves_its_steps_in_a_file_with_an_extra_column(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    interrupted(store)
    store._db.execute("ALTER TABLE steps ADD COLUMN note TEXT")
    paid: list[int] = []
    result = asyncio.run(payer(store, paid).resume("run1"))
    assert result.status == "ok", result.error
    assert paid == [5]
    assert [s.name for s in store.steps("run1")] == ["function", "pay", "function"]


def test_a_newer_layout_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    TraceStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(UserError, match=r"written by a newer bigloop \(layout version 99"):
        TraceStore(path)


def test_a_file_of_the_layout_before_versions_is_upgraded_and_resumed(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as db:
        db.executescript(LEGACY)
    store = TraceStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    interrupted(store)
    paid: list[int] = []
    result = asyncio.run(payer(store, paid).resume("run1"))
    assert (result.status, paid) == ("ok", [5])


def test_a_folder_a_corrupt_file_or_another_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is a folder; pass a file"):
        TraceStore(tmp_path)
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all\n" * 500)
    with pytest.raises(UserError, match="is not a trace DB that can be read"):
        TraceStore(corrupt)
    other = tmp_path / "shop.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    with pytest.raises(UserError, match=r"of something else \(tables \['orders'\]\)"):
        TraceStore(other)
    odd = tmp_path / "odd.db"
    with sqlite3.connect(odd) as db:
        db.execute("CREATE TABLE runs (id INTEGER)")
    with pytest.raises(UserError, match="has no column"):
        TraceStore(odd)


def test_the_cli_reports_a_bad_trace_file_without_a_traceback(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"garbage" * 1000)
    for path in (tmp_path, corrupt):
        out = subprocess.run(
            [sys.executable, "-m", "bigloop", "trace", "list", "--trace-db", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env={"BIGLOOP_HOME": str(tmp_path), "PATH": "", **PYTHONPATH},
        )
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        assert str(path) in out.stderr


def test_a_new_trace_file_and_its_new_folder_are_private(tmp_path: Path) -> None:
    path = tmp_path / "home" / "bigloop" / "traces.db"
    TraceStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_in_memory_store_creates_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = TraceStore(":memory:")
    interrupted(store)
    assert store.run("run1").status == "interrupted"
    assert list(tmp_path.iterdir()) == []


def test_a_run_id_prefix_is_text_not_a_pattern(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    for run_id in ("abc123", "abc1234", "x_y"):
        store.start_run(run_id, "t", "m", {})
    for pattern in ("%", "_bc", "a%3", "x%"):
        with pytest.raises(UserError, match="No run matches"):
            store.run(pattern)
    assert store.run("abc123").run_id == "abc123"  # exact, though also a prefix of another
    assert store.run("abc1234").run_id == "abc1234"
    assert store.run("x_").run_id == "x_y"
    with pytest.raises(UserError, match="More than one run matches id 'abc'"):
        store.run("abc")


def test_reading_a_trace_file_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "sub" / "traces.db"
    with pytest.raises(UserError, match=r"No trace DB at .*no run has been recorded there"):
        TraceStore(missing, create=False)
    for command in (["trace", "list"], ["trace", "show", "abc"], ["resume", "abc"]):
        out = subprocess.run(
            [sys.executable, "-m", "bigloop", *command, "--trace-db", str(missing)],
            capture_output=True,
            text=True,
            timeout=120,
            env={"BIGLOOP_HOME": str(tmp_path), "PATH": "", **PYTHONPATH},
        )
        assert out.returncode == 2, out.stderr
        assert "No trace DB at" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "nope").exists()
    TraceStore(missing).close()  # a writer creates it
    assert TraceStore(missing, create=False).runs() == []
