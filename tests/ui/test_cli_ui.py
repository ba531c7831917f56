"""`bigloop ui` as a user starts it: a real process serving the trace file given."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from bigloop import TraceStore
from tests.loopback import free_port
from tests.ui.runs import react_run


def test_bigloop_ui_serves_the_trace_file_on_loopback(tmp_path: Path) -> None:
    db = tmp_path / "traces.db"
    run_id = react_run(TraceStore(db))
    port = free_port()
    command = [sys.executable, "-m", "bigloop", "ui", "--trace-db", str(db), "--port", str(port)]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                runs = httpx.get(f"http://127.0.0.1:{port}/api/runs").json()["runs"]
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, "did not start"
                time.sleep(0.1)
        assert [r["run_id"] for r in runs] == [run_id]
        page = httpx.get(f"http://localhost:{port}/")
        assert page.status_code == 200 and "bigloop traces" in page.text
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=10)
    assert f"Trace viewer at http://127.0.0.1:{port}/" in stderr


def test_without_the_ui_extra_the_error_says_what_to_install() -> None:
    script = (
        "import sys; sys.modules['starlette'] = None; sys.argv = ['bigloop', 'ui']; "
        "from bigloop.cli import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 2
    assert "needs bigloop's 'ui' extra (starlette is not installed): pip install" in out.stderr
