"""The trace store on a real PostgreSQL server: the same contract as on SQLite, runs that
resume in another process exactly once, racing resumers, and many writers at once."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bigloop import Loop, ScriptedModel, TraceStore, UserError, tool
from bigloop.trace.records import Step, StepKind
from bigloop.trace.store import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]


def step(run_id: str, index: int, kind: StepKind = "tool") -> Step:
    return Step(
        run_id=run_id,
        index=index,
        kind=kind,
        name="echo",
        input={"text": index},
        output=str(index),
        seconds=0.01,
        prompt_tokens=3,
        completion_tokens=1,
    )


def test_runs_steps_intents_and_summaries_round_trip(pg_url: str) -> None:
    store = TraceStore(pg_url)
    store.start_run("run1", "say hi", "scripted", {"planner": "react"})
    for i in range(3):
        store.add_step(step("run1", i, "model" if i == 0 else "tool"), cost=0.5 * i)
    store.add_intent("run1", "delete(a)")
    store.add_intent("run1", "delete(a)")  # once
    store.finish_run("run1", "ok", "hi", None)
    assert store.intents("run1") == {"delete(a)"}
    assert [s.output for s in store.steps("run1")] == ["0", "1", "2"]
    summary = store.run("run")  # a prefix is enough
    assert (summary.status, summary.steps, summary.tool_calls, summary.cost) == ("ok", 3, 2, 1.0)
    assert summary.prompt_tokens == 9 and summary.config == {"planner": "react"}
    assert summary.started_at > 1.7e9 and abs(summary.started_at - time.time()) < 60  # no REAL
    assert [o.name for o in store.step_outcomes({"tool"})] == ["echo", "echo"]
    with pytest.raises(UserError, match="No run matches"):
        store.run("nope")
    again = TraceStore(pg_url)  # a second connection sees it all; the layout is kept
    assert again.result("run1").answer == "hi"
    assert again._db.execute("SELECT value FROM bigloop_meta").fetchone()[0] == str(SCHEMA_VERSION)


def test_a_url_through_pathlib_and_the_environment_variable_both_work(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    TraceStore(Path(pg_url)).start_run("p1", "t", "m", {})  # "postgresql:/..." after Path
    monkeypatch.setenv("BIGLOOP_TRACE_DB", pg_url)
    assert TraceStore().run("p1").task == "t"


def test_a_server_that_is_not_there_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="Cannot connect to the trace store") as refused:
        TraceStore("postgresql://bigloop:secret@127.0.0.1:9/none")
    assert "secret" not in str(refused.value) and "bigloop:***@" in str(refused.value)


def test_two_resumers_of_one_run_one_wins_the_other_is_told_who(pg_url: str) -> None:
    first, second = TraceStore(pg_url), TraceStore(pg_url)
    first.start_run("r", "t", "m", {})
    first.finish_run("r", "interrupted", None, "killed")
    assert first.claim("r") is True
    with pytest.raises(UserError, match=r"being resumed \(or run\) by pid"):
        second.claim("r")


@tool(effect="write")
def note(text: str) -> str:
    """Append a line to the notes file named by NOTES (not idempotent)."""
    with open(os.environ["NOTES"], "a") as f:
        f.write(text + "\n")
    return "noted"


KILLED = """
import json, os, signal, sys
from bigloop import Loop, ScriptedModel, TraceStore
from tests.trace.test_postgres_store import note

def call(name, **arguments):
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})

class Dies(ScriptedModel):
    async def chat(self, messages, tools, settings=None):
        if sum(m.role == "tool" for m in messages) >= 2:
            os.kill(os.getpid(), signal.SIGKILL)  # killed after two completed calls
        return await super().chat(messages, tools, settings)

model = Dies([call("note", text="one"), call("note", text="two"), call("note", text="three")])
loop = Loop(model, [note], store=TraceStore(sys.argv[1]), planner="react")
loop.run_sync("Note one, two and three.")
"""


def test_a_run_killed_in_one_process_resumes_in_another_exactly_once(
    pg_url: str, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "NOTES": str(notes), "PYTHONPATH": str(ROOT)}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED, pg_url], cwd=elsewhere, env=env, timeout=120
    )
    assert killed.returncode == -signal.SIGKILL
    _resume_and_check(pg_url, notes)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None,
    reason="running a process as another user needs root and runuser",
)
def test_a_run_killed_as_one_user_resumes_as_another_user_in_another_folder(
    pg_url: str,
) -> None:
    shared = Path(tempfile.mkdtemp(prefix="bigloop-two-users-"))
    try:
        shared.chmod(0o777)  # pytest's own folders are private to this user
        home = shared / "nobody"
        home.mkdir()
        home.chmod(0o777)
        notes = shared / "notes.txt"
        notes.touch()
        notes.chmod(0o666)
        python, path = _python_for("nobody")
        env = {
            "PATH": os.environ["PATH"],
            "NOTES": str(notes),
            "PYTHONPATH": os.pathsep.join([str(ROOT), *path]),
            "HOME": str(home),
            "BIGLOOP_HOME": str(home),
        }
        killed = subprocess.run(
            ["runuser", "-u", "nobody", "--", python, "-c", KILLED, pg_url],
            cwd=home,
            env=env,
            timeout=120,
        )
        assert killed.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
        _resume_and_check(pg_url, notes)  # as this user (root), from this folder
    finally:
        shutil.rmtree(shared)


def _python_for(user: str) -> tuple[str, list[str]]:
    """An interpreter `user` may run with this environment's packages: this one, or
    where it lies in a private folder (pyenv under /root), the system's of the same
    version with this environment's site-packages on the path."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python, path in (
        (sys.executable, []),
        (f"/usr/bin/{version}", [sysconfig.get_paths()["purelib"], str(ROOT / "src")]),
    ):
        runs = subprocess.run(["runuser", "-u", user, "--", "test", "-x", python])
        if runs.returncode == 0:
            return python, path
    pytest.skip(f"no {version} that the user {user} may run")


def _resume_and_check(pg_url: str, notes: Path) -> None:
    """Resume the one run in the store, killed after two of its three calls: it ends with
    the third call made once, and the first two not made again."""
    store = TraceStore(pg_url)
    (summary,) = store.runs()
    assert summary.status == "interrupted" and summary.tool_calls == 2
    assert notes.read_text().splitlines() == ["one", "two"]
    os.environ["NOTES"] = str(notes)
    try:
        model = ScriptedModel(
            [
                json.dumps({"tool_calls": [{"name": "note", "arguments": {"text": "three"}}]}),
                json.dumps({"answer": "Noted all three."}),
            ]
        )
        loop = Loop(model, [note], store=store, planner="react")
        result = asyncio.run(loop.resume(summary.run_id))
    finally:
        del os.environ["NOTES"]
    assert result.status == "ok" and result.answer == "Noted all three."
    assert notes.read_text().splitlines() == ["one", "two", "three"]  # none made twice


def _writer(url: str, worker: int, runs: int) -> int:
    store = TraceStore(url)
    for r in range(runs):
        run_id = f"w{worker}-{r}"
        store.start_run(run_id, "t", "m", {})
        for i in range(3):
            store.add_step(step(run_id, i))
        store.finish_run(run_id, "ok", "done", None)
    store.close()
    return runs


def test_many_processes_write_at_once_and_nothing_is_lost_or_repeated(pg_url: str) -> None:
    workers, runs = 8, 10
    with ProcessPoolExecutor(workers) as pool:
        done = sum(pool.map(_writer, [pg_url] * workers, range(workers), [runs] * workers))
    store = TraceStore(pg_url)
    rows = store._db.execute("SELECT run_id, idx FROM steps").fetchall()
    assert done == workers * runs and len(rows) == len(set(rows)) == workers * runs * 3
    assert all(s.status == "ok" and s.steps == 3 for s in store.runs(limit=workers * runs))


ONE_RUN = """
import json, sys
from bigloop import Loop, ScriptedModel, TraceStore
model = ScriptedModel([json.dumps({"answer": sys.argv[2]})])
Loop(model, [], store=TraceStore(sys.argv[1]), planner="react").run_sync(sys.argv[2])
"""


def test_the_viewer_shows_the_runs_of_every_process_writing_to_the_store(pg_url: str) -> None:
    from starlette.testclient import TestClient

    from bigloop.ui import create_app

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for task in ("from process A", "from process B"):
        done = subprocess.run([sys.executable, "-c", ONE_RUN, pg_url, task], env=env, timeout=120)
        assert done.returncode == 0
    viewer = TestClient(create_app(TraceStore(pg_url)), base_url="http://127.0.0.1:8765")
    runs = viewer.get("/api/runs").json()["runs"]
    assert sorted(r["task"] for r in runs) == ["from process A", "from process B"]
    assert {r["status"] for r in runs} == {"ok"}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_every_reader_of_traces_reads_both_stores_alike(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """`trace list`, `trace show`, `trace export` (the real CLI), the viewer and what
    `optimize` reads, on a run recorded in a SQLite file and in PostgreSQL."""
    from starlette.testclient import TestClient

    from bigloop.atoms.builtin import calculator
    from bigloop.ui import create_app
    from tests.trace.test_otel import otlp_receiver

    target = str(tmp_path / "t.db") if kind == "sqlite" else request.getfixturevalue("pg_url")
    model = ScriptedModel(
        [
            json.dumps(
                {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}
            ),
            json.dumps({"answer": "42"}),
        ]
    )
    result = Loop(model, [calculator], store=TraceStore(target), planner="react").run_sync("6*7?")

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "bigloop", *args, "--trace-db", target, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert [r["run_id"] for r in cli("trace", "list")] == [result.run_id]
    shown = cli("trace", "show", result.run_id[:8])
    assert [s["kind"] for s in shown["steps"]] == ["model", "tool", "model"]
    with otlp_receiver() as receiver:
        cli("trace", "export", result.run_id, "--otlp", receiver.url)
    assert {s.name for s in receiver.spans()} >= {"execute_tool calculator"}
    viewer = TestClient(create_app(TraceStore(target)), base_url="http://127.0.0.1:8765")
    assert [r["run_id"] for r in viewer.get("/api/runs").json()["runs"]] == [result.run_id]
    outcomes = TraceStore(target).step_outcomes(["tool"])  # what optimize learns from
    assert [(o.run_id, o.name, o.error) for o in outcomes] == [(result.run_id, "calculator", None)]
