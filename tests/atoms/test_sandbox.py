"""`run_python`: each way out of the sandbox is stopped with a message that says why."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import pytest

from bigloop import Loop, LoopConfig, ScriptedModel, Tool, ToolFailure
from bigloop.atoms.builtin import default_tools, python_sandbox
from bigloop.atoms.builtin._confine import SandboxUnavailable, boundary
from bigloop.atoms.builtin.python_sandbox import SandboxLimits, isolation_layers

LIMITS = SandboxLimits(wall_s=3, cpu_s=1, memory_mb=256, max_output_chars=5000)


@pytest.fixture(scope="module")
def run_python() -> Tool:
    try:
        return python_sandbox(LIMITS)
    except SandboxUnavailable as e:  # refused, by design, where the boundary is missing
        pytest.skip(f"no kernel boundary on this machine: {e}")


def run(tool: Tool, code: str) -> str:
    return asyncio.run(tool.call({"code": code}))


def test_a_computation_returns_what_it_prints(run_python: Tool) -> None:
    assert run(run_python, "print(sum(i * i for i in range(1, 11)))") == "385\n"
    assert (
        run(run_python, "import math, json\nprint(json.dumps([math.pi]))")
        == "[3.141592653589793]\n"
    )


def test_files_go_to_a_fresh_folder_that_is_discarded(run_python: Tool) -> None:
    code = "import os\nopen('a.txt', 'w').write('hi')\nprint(os.getcwd(), os.listdir('.'))"
    assert run(run_python, code) == "/sandbox ['a.txt']\n"
    assert run(run_python, "import os\nprint(os.listdir('.'))") == "[]\n"  # the next run's


def test_the_working_folder_is_size_capped(run_python: Tool) -> None:
    small = python_sandbox(SandboxLimits(wall_s=5, folder_mb=8, file_mb=50))
    with pytest.raises(ToolFailure, match="No space left on device"):
        run(small, "for i in range(4):\n    open(f'f{i}', 'wb').write(b'x' * (3 << 20))")


def test_writing_outside_is_refused(run_python: Tool, tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    for code in [
        f"open({str(target)!r}, 'w').write('x')",
        f"import os\nos.symlink({str(target)!r}, 'link')\nopen('link', 'w')",
        f"import os.path\nos.path.realpath = lambda p: '.'\nopen({str(target)!r}, 'w')",
    ]:
        with pytest.raises(ToolFailure, match="outside the working folder is not allowed"):
            run(run_python, code)
    assert not target.exists()


def test_network_is_refused(run_python: Tool) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
        with pytest.raises(ToolFailure, match="network access is not allowed"):
            run(run_python, code)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected


def test_new_processes_are_refused(run_python: Tool) -> None:
    for code in [
        "import os\nwhile True:\n    os.fork()",
        "import subprocess\nsubprocess.run(['true'])",
        "import os\nos.system('true')",
        "import ctypes",
    ]:
        with pytest.raises(ToolFailure, match=r"sandbox: .* not allowed"):
            run(run_python, code)


def test_endless_loop_is_stopped_by_cpu_time(run_python: Tool) -> None:
    start = time.monotonic()
    with pytest.raises(ToolFailure, match="more than 1 s of CPU time"):
        run(run_python, "while True:\n    pass")
    assert time.monotonic() - start < 3


def test_sleeping_is_stopped_by_the_wall_clock(run_python: Tool) -> None:
    with pytest.raises(ToolFailure, match=r"still running after 3 s \(wall clock\)"):
        run(run_python, "import time\ntime.sleep(60)")


def test_huge_memory_is_refused(run_python: Tool) -> None:
    with pytest.raises(ToolFailure, match="more than 256 MB of memory"):
        run(run_python, "x = bytearray(10**10)")


def test_huge_output_is_cut_and_stopped(run_python: Tool) -> None:
    with pytest.raises(ToolFailure, match="output passed 5000 characters") as info:
        run(run_python, "while True:\n    print('x' * 100)")
    assert len(str(info.value)) < 4000


def test_errors_show_the_traceback_of_the_code_only(run_python: Tool) -> None:
    with pytest.raises(ToolFailure, match="exited with status 1") as info:
        run(run_python, "1 / 0")
    message = str(info.value)
    assert 'File "<code>", line 1' in message and "ZeroDivisionError" in message
    assert "_sandbox_child" not in message


def test_files_outside_are_not_there_to_read(run_python: Tool, tmp_path: Path) -> None:
    """The child's filesystem is the Python runtime and its working folder: the host's
    files (here /etc/passwd and a file of this test) do not exist for it."""
    (tmp_path / "mine.txt").write_text("private")
    code = f"import os\nprint([os.path.exists(p) for p in ('/etc/passwd', {str(tmp_path)!r})])"
    assert run(run_python, code) == "[False, False]\n"


def test_offered_only_when_asked_for(run_python: Tool) -> None:
    assert "run_python" not in {t.name for t in default_tools()}
    assert "seccomp" in " ".join(isolation_layers())


def test_without_the_boundary_run_python_is_refused_not_run_unconfined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No bubblewrap installed: `python_sandbox()` raises, saying what to install; a
    configuration asking for Python fails when the loop is built, before any run."""
    boundary.cache_clear()
    monkeypatch.setattr("bigloop.atoms.builtin._confine.shutil.which", lambda *a, **k: None)
    try:
        with pytest.raises(SandboxUnavailable, match="needs bubblewrap: install it"):
            python_sandbox()
        with pytest.raises(SandboxUnavailable, match="needs bubblewrap"):
            Loop.from_config(LoopConfig(python=True), model=ScriptedModel([]))
        assert isolation_layers() == []
    finally:
        boundary.cache_clear()


def test_doctor_says_which_host_user_runs_the_programs(run_python: Tool) -> None:
    """Never root: bigloop's own uid, or nobody when bigloop runs as root."""
    from bigloop.atoms.models.doctor import _sandbox

    found = _sandbox()
    assert found["host_uid"] == (65534 if os.geteuid() == 0 else os.geteuid()) != 0
    assert f"host uid {found['host_uid']}" in found["runs_as"]
