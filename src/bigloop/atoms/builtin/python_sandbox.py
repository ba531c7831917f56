"""`run_python`: the model runs Python code in a sandboxed child process.

Layers, outermost first:

- a wall-clock timeout that kills the child's whole process group;
- when run as root and `unshare` works: a new network namespace (no interface but a
  down loopback, so nothing is reachable), and an unprivileged user (nobody) when the
  interpreter is readable by it;
- a fresh temporary working folder (also HOME and TMPDIR), removed afterwards; isolated
  mode (`-I`: no user site, no environment variables, no current folder on the path);
- rlimits: CPU time, address space, file size, open files, processes;
- an audit hook (`_sandbox_child.py`) refusing writes outside the working folder,
  sockets, new processes, ctypes and raising the limits, with a message naming the rule;
- an output cap: past it the child is stopped.

The kernel layers hold whatever the code does; the audit hook stops ordinary code and
mistakes, not code crafted to escape it (see `_sandbox_child.py`). Not offered by default:
see `python_sandbox`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bigloop.atoms.tool import Tool, tool

_CHILD = Path(__file__).with_name("_sandbox_child.py")
_NOBODY = 65534
_MAX_CODE_CHARS = 100_000
_TAIL_CHARS = 3000


class SandboxStopped(RuntimeError):
    """The code broke a limit of the sandbox, or exited with an error."""


@dataclass(kw_only=True)
class SandboxLimits:
    """What one run may use."""

    wall_s: float = 10.0
    cpu_s: int = 5
    memory_mb: int = 1024
    file_mb: int = 50
    max_output_chars: int = 20_000


def python_sandbox(limits: SandboxLimits | None = None, *, name: str = "run_python") -> Tool:
    """A tool that runs Python code in a sandboxed subprocess and returns what it printed.

    Not among `default_tools()`: offer it explicitly, e.g.
    `Loop(model, [*default_tools(), python_sandbox()])`.
    """
    limits = limits or SandboxLimits()

    async def run_python(code: str) -> str:
        """Run a Python 3 program and return what it prints (stdout and stderr). Use
        print() to show results. No network, no subprocesses; files can be written only
        in the current (temporary) folder, which is empty and discarded after the run.

        Args:
            code: the complete Python program to run.
        """
        return await run_sandboxed(code, limits)

    return tool(name=name, timeout_s=limits.wall_s + 10)(run_python)


async def run_sandboxed(code: str, limits: SandboxLimits) -> str:
    """Run `code` under `limits`; its output, or `SandboxStopped` saying why it stopped.

    Raises:
        SandboxStopped: a limit was hit or the program exited with an error; the message
            gives the reason and the end of the output.
        ValueError: the code is longer than `_MAX_CODE_CHARS`.
    """
    if len(code) > _MAX_CODE_CHARS:
        raise ValueError(f"The code is longer than {_MAX_CODE_CHARS} characters.")
    with tempfile.TemporaryDirectory(prefix="bigloop-python-") as work:
        prefix = _isolation()
        if "--setuid" in prefix:
            os.chown(work, _NOBODY, _NOBODY)
        memory = limits.memory_mb * 2**20
        process = await asyncio.create_subprocess_exec(
            *prefix,
            sys.executable,
            "-I",
            "-B",
            str(_CHILD),
            str(limits.cpu_s),
            str(memory),
            str(limits.file_mb * 2**20),
            cwd=work,
            env=_environment(work),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole
        )
        try:
            output, stopped = await _communicate(process, code, limits)
        finally:
            _kill_group(process)
            await process.wait()
    text = output.decode("utf-8", errors="backslashreplace")
    reason = stopped or _exit_reason(process.returncode, text, limits)
    if reason is None:
        return text
    tail = text[-_TAIL_CHARS:]
    cut = f"[… {len(text) - len(tail)} characters before]\n" if len(tail) < len(text) else ""
    raise SandboxStopped(f"{reason}\n--- output ---\n{cut}{tail}" if text else reason)


async def _communicate(
    process: asyncio.subprocess.Process, code: str, limits: SandboxLimits
) -> tuple[bytes, str | None]:
    """Send the code, read the output up to the cap; (output, why it was stopped)."""
    assert process.stdin is not None and process.stdout is not None
    output = bytearray()
    cap = limits.max_output_chars
    try:
        async with asyncio.timeout(limits.wall_s):
            process.stdin.write(code.encode("utf-8", errors="surrogatepass"))
            try:
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the child exited before reading all of it: its output says why
            process.stdin.close()
            while chunk := await process.stdout.read(65536):
                output += chunk
                if len(output) > cap:
                    return bytes(output[:cap]), (
                        f"Stopped: the output passed {cap} characters. Print less (a "
                        f"summary, or the first rows)."
                    )
            await process.wait()
    except TimeoutError:
        return bytes(output), (
            f"Stopped: still running after {limits.wall_s:g} s (wall clock). Make the "
            f"program faster or do less."
        )
    return bytes(output), None


def _exit_reason(code: int | None, text: str, limits: SandboxLimits) -> str | None:
    if code == 0:
        return None
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return (
            f"Stopped: the program used more than {limits.cpu_s} s of CPU time (an endless "
            f"loop?). Make it faster or do less."
        )
    if code is not None and code < 0:
        return f"Stopped: the program was killed by signal {signal.Signals(-code).name}."
    if "MemoryError" in text[-2000:]:
        return (
            f"Stopped: the program needed more than {limits.memory_mb} MB of memory. Use "
            f"less data at once."
        )
    return f"The program exited with status {code} (an error: see its output)."


def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def _environment(work: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": work,
        "TMPDIR": work,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


@functools.cache
def _isolation() -> tuple[str, ...]:
    """The command prefix isolating the child: as root, a network namespace and, when
    the interpreter can run as nobody, that user. Probed once."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return ()
    nobody = (unshare, "--net", "--setgid", str(_NOBODY), "--setuid", str(_NOBODY))
    for prefix in (nobody, (unshare, "--net")):
        probe = [*prefix, sys.executable, "-I", "-B", str(_CHILD), "5", str(2**30), "0"]
        try:
            done = subprocess.run(
                probe, input=b"", capture_output=True, cwd="/", timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return prefix
    return ()


def isolation_layers() -> list[str]:
    """The kernel isolation this machine gives `run_python`, for diagnostics."""
    prefix = _isolation()
    layers = ["rlimits", "process group", "temporary folder", "audit hook"]
    if "--net" in prefix:
        layers.append("network namespace")
    if "--setuid" in prefix:
        layers.append("unprivileged user")
    return layers
