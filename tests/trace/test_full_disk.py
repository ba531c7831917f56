"""A trace DB that cannot be written (a full disk): the run ends with a status and a clear
error, never a raw `sqlite3.OperationalError`, and never stays "running" (issue 26, 13).

The full disk is SQLite's own: `PRAGMA max_page_count` makes every write past it fail
with SQLITE_FULL, the error a full disk gives.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bigloop import Loop, ScriptedModel, TraceStore, tool
from bigloop.trace.store import TraceWriteError


@tool(max_result_chars=300_000)
def fetch_page(url: str) -> str:
    """Fetch a page.

    Args:
        url: the page.
    """
    return "lorem ipsum " * 20_000  # 240 kB: more than the room left


def script(huge_answer: bool = False) -> ScriptedModel:
    if huge_answer:  # the run's end itself does not fit
        return ScriptedModel([json.dumps({"answer": "lorem ipsum " * 20_000})])
    call = {"name": "fetch_page", "arguments": {"url": "https://example.com"}}
    return ScriptedModel([json.dumps({"tool_calls": [call]}), json.dumps({"answer": "Read."})])


def fill(store: TraceStore, spare_pages: int) -> None:
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages + spare_pages}")


def test_a_step_that_does_not_fit_fails_the_run_with_a_clear_error(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    fill(store, 8)  # room for the run and its status, not for a 240 kB step
    result = Loop(script(), [fetch_page], store=store).run_sync("Read example.com.")
    assert result.status == "failed"
    assert "could not be written" in str(result.error) and "disk space" in str(result.error)
    stored = store.run(result.run_id)
    assert stored.status == "failed" and "could not be written" in str(stored.error)
    store.close()


@pytest.mark.parametrize("room_kb", [0, 4, 16, 64, 128, 200, 260, 400])
def test_a_full_disk_is_a_clear_error_and_no_run_stays_running(
    tmp_path: Path, room_kb: int
) -> None:
    """A process whose files may grow only `room_kb` more (RLIMIT_FSIZE: writes past it
    fail as on a full disk, the WAL's included) runs a loop: it ends with a status or a
    clear error, and nothing in the DB is left "running" once the process is gone (a
    run whose process ended without saying how it ended reads as interrupted)."""
    db = tmp_path / "t.db"
    TraceStore(db).close()
    code = textwrap.dedent(
        f"""\
        import resource, signal, sys
        sys.path[:0] = {[str(Path(__file__).parent)]!r}
        from test_full_disk import fetch_page, script
        from bigloop import Loop, TraceStore
        from bigloop.trace.store import TraceWriteError
        store = TraceStore({str(db)!r})
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails
        size = {str(db)!r}
        limit = max(__import__("os").path.getsize(p) for p in (size, size + "-wal"))
        limit += {room_kb * 1024}
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            print("ended", Loop(script(), [fetch_page], store=store).run_sync("Read it.").status)
        except TraceWriteError as e:
            print("error", e)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout
    assert said.startswith(("ended ", "error The trace DB")), said
    if said.startswith("error"):
        assert "could not be written" in said and "disk space" in said
    store = TraceStore(db)
    runs = store.runs()
    store.close()
    assert "running" not in [r.status for r in runs], (said, runs)
    for failed in [r for r in runs if r.status == "failed"]:
        assert "could not be written" in str(failed.error), failed.error


def test_a_run_whose_process_was_killed_reads_as_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    code = textwrap.dedent(
        f"""\
        import json, time
        from bigloop import Loop, ScriptedModel, TraceStore, tool

        @tool
        def wait(seconds: int) -> str:
            \"\"\"Wait.

            Args:
                seconds: how long.
            \"\"\"
            print("started", flush=True)
            time.sleep(seconds)
            return "done"

        call = {{"name": "wait", "arguments": {{"seconds": 600}}}}
        model = ScriptedModel([json.dumps({{"tool_calls": [call]}}), json.dumps({{"answer": "x"}})])
        Loop(model, [wait], store=TraceStore({str(db)!r})).run_sync("Wait.")
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "started\n"
    store = TraceStore(db)
    assert [r.status for r in store.runs()] == ["running"]  # its process is alive
    child.kill()
    child.wait()
    child.stdout.close()
    assert [r.status for r in store.runs()] == ["interrupted"]
    store.close()


def test_the_write_error_is_a_user_error_with_the_file() -> None:
    from bigloop import UserError

    assert issubclass(TraceWriteError, UserError)
