"""Resuming: one process at a time (a second resume of a run fails fast, naming the first),
a dead owner's run is taken over, and a resume started in another folder uses the files the
run started with."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bigloop import FunctionModel, Loop, Message, ToolSpec, TraceStore, UserError, tool
from bigloop.atoms.models.base import ToolCall
from bigloop.config import LoopConfig
from bigloop.trace.records import Step

ROOT = Path(__file__).parents[2]
UNREACHABLE = "http://127.0.0.1:9/v1"


def interrupted(store: TraceStore, run_id: str = "run1") -> None:
    """A run killed after the model asked for one call, before the call completed."""
    store.start_run(run_id, "pay 5", "function", {})
    call = ToolCall(id="c1", name="pay", arguments={"amount": 5})
    message = Message(role="assistant", tool_calls=[call])
    store.add_step(Step(run_id=run_id, index=0, kind="model", name="function", message=message))
    store.finish_run(run_id, "interrupted", None, "interrupted")


def payer(db: Path, ledger: Path, gate: Path | None = None) -> Loop:
    """A loop whose `pay` is not idempotent; with `gate`, it waits for that file first."""

    @tool(idempotent=False, effect="write")
    async def pay(amount: int) -> str:
        """Pay an amount."""
        with ledger.open("a") as f:
            f.write(f"pay {amount}\n")
        while gate is not None and not gate.exists():
            await asyncio.sleep(0.02)
        return f"paid {amount}"

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        return json.dumps({"answer": "paid"})

    return Loop(FunctionModel(reply), [pay], store=TraceStore(db))


def test_two_resumes_of_one_run_at_once_make_its_calls_once(tmp_path: Path) -> None:
    db, ledger = tmp_path / "t.db", tmp_path / "ledger.txt"
    interrupted(TraceStore(db))

    async def both() -> tuple[object, object]:
        first, second = payer(db, ledger), payer(db, ledger)
        return await asyncio.gather(
            first.resume("run1"), second.resume("run1"), return_exceptions=True
        )

    outcomes = asyncio.run(both())
    assert ledger.read_text().splitlines() == ["pay 5"], "paid once"
    done = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(done) == 1 and len(refused) == 1, outcomes
    assert isinstance(refused[0], UserError)
    assert f"Run run1 is being resumed (or run) by pid {os.getpid()}" in str(refused[0])
    assert TraceStore(db).run("run1").status == "ok"


CHILD = """
import asyncio, sys
from pathlib import Path
from tests.trace.test_robust_resume import payer
db, ledger, gate = map(Path, sys.argv[1:])
print(asyncio.run(payer(db, ledger, gate).resume("run1")).status)
"""


def test_a_resume_while_another_process_resumes_the_run_fails_fast(tmp_path: Path) -> None:
    db, ledger, gate = tmp_path / "t.db", tmp_path / "ledger.txt", tmp_path / "go"
    interrupted(TraceStore(db))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(ledger), str(gate)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ledger.exists():  # the child is paying
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        with pytest.raises(UserError, match=f"being resumed .or run. by pid {child.pid}"):
            asyncio.run(payer(db, ledger).resume("run1"))
    finally:
        gate.touch()
        out, _ = child.communicate(timeout=60)
    assert out.strip() == "ok"
    again = asyncio.run(payer(db, ledger).resume("run1"))  # ended: nothing to do
    assert again.status == "ok" and again.answer == "paid"
    assert ledger.read_text().splitlines() == ["pay 5"]


def test_the_run_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = TraceStore(db)
    interrupted(store)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    for owner, heartbeat in [
        (f"{host}/{gone.pid}/1", time.time()),  # killed on this host
        ("elsewhere/1/1", time.time() - 3600),  # silent for an hour on another host
        (None, time.time()),  # written by a bigloop without owners
    ]:
        store._db.execute(
            "UPDATE runs SET status = 'running', owner = ?, heartbeat = ? WHERE run_id = 'run1'",
            (owner, heartbeat),
        )
        assert store.claim("run1") is True
    store._db.execute(
        "UPDATE runs SET status = 'running', owner = 'elsewhere/1/1', heartbeat = ?",
        (time.time(),),
    )
    with pytest.raises(UserError, match="by pid 1 on elsewhere"):
        store.claim("run1")


def test_a_resume_in_another_folder_uses_the_files_the_run_started_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start, elsewhere = tmp_path / "start", tmp_path / "elsewhere"
    for folder, text in [(start, "the right notes"), (elsewhere, "the wrong notes")]:
        (folder / "notes").mkdir(parents=True)
        (folder / "notes" / "a.txt").write_text(text)
        (folder / "shop.db").touch()
    store = TraceStore(tmp_path / "t.db")
    monkeypatch.chdir(start)
    config = LoopConfig(
        model="m", base_url=UNREACHABLE, tools=["calculator"], files="notes", db="shop.db"
    )
    first = asyncio.run(Loop.from_config(config, store=store).run("what do my notes say?"))
    assert first.status == "failed"  # no server: the run stops, to be resumed
    stored = store.run(first.run_id).config
    assert (stored["files"], stored["db"]) == (str(start / "notes"), str(start / "shop.db"))

    monkeypatch.chdir(elsewhere)
    resumed = Loop.from_config(LoopConfig.from_data(stored, source="the stored config"))
    read = asyncio.run(resumed.tools["read_file"].call({"path": "a.txt"}))
    assert read == "the right notes"
