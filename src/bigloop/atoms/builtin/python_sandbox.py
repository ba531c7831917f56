"""`run_python`: the model runs Python code in a sandboxed child process.

Layers, outermost first:

- a wall-clock timeout that kills the child;
- the kernel boundary (`_confine.py`): bubblewrap's user, PID, mount, network, IPC and
  UTS namespaces (uid 65534, no capabilities, no parent in sight), a filesystem of only
  the Python runtime (read-only) and a size-capped working folder, `no_new_privs` and
  seccomp filters refusing new processes, exec, ptrace, `pidfd_*`, sockets, mounts and
  the kernel's other doors;
- isolated mode (`-I`: no user site, no environment variables, no current folder on the
  path) and an empty environment but PATH, HOME, TMPDIR and LANG;
- rlimits: CPU time, address space, file size, open files, processes;
- an audit hook (`_sandbox_child.py`) refusing writes outside the working folder,
  sockets, new processes, ctypes and raising the limits, with a message naming the rule;
- an output cap: past it the child is stopped.

The kernel layers hold whatever the code does; the audit hook is a second layer that
explains refusals to ordinary code. Where the boundary cannot be set up, `python_sandbox`
raises `SandboxUnavailable` instead of running code unconfined. Not offered by default:
see `python_sandbox`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bigloop.atoms.builtin._confine import (
    CHILD,
    NO_EXEC,
    WORK,
    SandboxUnavailable,
    boundary,
)
from bigloop.atoms.builtin.bridge import Bridge
from bigloop.atoms.tool import Tool, tool

__all__ = ["SandboxLimits", "SandboxStopped", "SandboxUnavailable", "python_sandbox"]

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
    folder_mb: int = 64  # everything the code writes, together (a tmpfs)
    max_output_chars: int = 20_000


def python_sandbox(limits: SandboxLimits | None = None, *, name: str = "run_python") -> Tool:
    """A tool that runs Python code in a sandboxed subprocess and returns what it printed.

    Not among `default_tools()`: offer it explicitly, e.g.
    `Loop(model, [*default_tools(), python_sandbox()])`.

    Raises:
        SandboxUnavailable: this machine cannot give the kernel boundary (no bubblewrap,
            no user namespaces, no libseccomp); the message says what is missing. The
            code is never run unconfined.
    """
    limits = limits or SandboxLimits()
    boundary()  # refuse now, not at the first call

    async def run_python(code: str) -> str:
        """Run a Python 3 program and return what it prints (stdout and stderr). Use
        print() to show results. No network, no subprocesses; files can be written only
        in the current (temporary) folder, which is empty and discarded after the run.

        Args:
            code: the complete Python program to run.
        """
        return await run_sandboxed(code, limits)

    return tool(name=name, timeout_s=limits.wall_s + 10)(run_python)


async def run_sandboxed(
    code: str, limits: SandboxLimits, *, audit_hook: bool = True, bridge: Bridge | None = None
) -> str:
    """Run `code` under `limits`; its output, or `SandboxStopped` saying why it stopped.

    `audit_hook=False` leaves out the interpreter-level layer, so that tests can show
    the kernel boundary holding on its own. With a `bridge`, the program calls its tools
    as functions (`bigloop.atoms.builtin.bridge`).

    Raises:
        SandboxStopped: a limit was hit or the program exited with an error; the message
            gives the reason and the end of the output.
        SandboxUnavailable: the kernel boundary cannot be set up here.
        ValueError: the code is longer than `_MAX_CODE_CHARS`.
    """
    if len(code) > _MAX_CODE_CHARS:
        raise ValueError(f"The code is longer than {_MAX_CODE_CHARS} characters.")
    confined = boundary()
    fds = confined.open_fds()
    pipes = _Pipes.open() if bridge is not None else None
    child = _child_command(confined.interpreter, limits, audit_hook)
    if pipes is not None and bridge is not None:
        child.append(f"bridge:{pipes.child_requests}:{pipes.child_replies}")
        code = json.dumps({"code": code, "tools": bridge.stubs()})
    try:
        process = await asyncio.create_subprocess_exec(
            *confined.command(limits.folder_mb, fds, _CHILD_ENVIRONMENT),
            *child,
            env=_ENVIRONMENT,  # bwrap's own environment is visible in the child's /proc/1
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole
            pass_fds=(*fds, *(pipes.child_ends() if pipes else ())),
            cwd="/",  # bigloop's folder may be closed to the sandbox's host user
        )
    finally:
        fds.close()
        if pipes is not None:
            pipes.close_child_ends()
    served = None
    if pipes is not None and bridge is not None:
        served = asyncio.create_task(bridge.serve(pipes.requests, pipes.replies))
    try:
        output, stopped = await _communicate(process, code, limits)
    finally:
        await _stop(process)
        if served is not None:
            served.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await served
    text = output.decode("utf-8", errors="backslashreplace")
    reason = stopped or _exit_reason(process.returncode, text, limits)
    if reason is None:
        return text
    tail = text[-_TAIL_CHARS:]
    cut = f"[… {len(text) - len(tail)} characters before]\n" if len(tail) < len(text) else ""
    raise SandboxStopped(f"{reason}\n--- output ---\n{cut}{tail}" if text else reason)


@dataclass(frozen=True)
class _Pipes:
    """The bridge's two pipes: the program writes requests and reads replies."""

    requests: int
    child_requests: int
    child_replies: int
    replies: int

    @classmethod
    def open(cls) -> _Pipes:
        requests, child_requests = os.pipe()
        child_replies, replies = os.pipe()
        return cls(requests, child_requests, child_replies, replies)

    def child_ends(self) -> tuple[int, int]:
        return self.child_requests, self.child_replies

    def close_child_ends(self) -> None:
        for fd in self.child_ends():
            os.close(fd)


def _child_command(interpreter: str, limits: SandboxLimits, audit_hook: bool) -> list[str]:
    memory = limits.memory_mb * 2**20
    files = limits.file_mb * 2**20
    hook = "hook" if audit_hook else "no-hook"
    settings = [str(limits.cpu_s), str(memory), str(files), NO_EXEC, hook]
    return [interpreter, "-I", "-B", CHILD, *settings]


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
    if code is not None and code > 128 and code - 128 in _SIGNALS:
        code = 128 - code  # bwrap reports a child killed by signal N as 128 + N
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


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill bwrap and the sandbox's PID namespace, then wait for its end. The output not
    read is drained first: a paused pipe never reports its end, and `wait()` waits for it."""
    for pid in (*_descendants(process.pid), process.pid):  # the namespace's init dies first
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # already gone
    if process.stdout is not None:
        try:
            async with asyncio.timeout(5):
                while await process.stdout.read(1 << 16):
                    pass
        except TimeoutError:
            pass
    await process.wait()


def _descendants(pid: int) -> list[int]:
    """The processes below `pid` (children first), from /proc."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *_descendants(child)]
    return found


_SIGNALS = frozenset(signal.Signals)
_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
_CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": WORK,
    "TMPDIR": WORK,
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}


def sandbox_problem() -> str | None:
    """Why `run_python` cannot be offered on this machine, or None when it can."""
    try:
        boundary()
    except SandboxUnavailable as e:
        return str(e)
    return None


def sandbox_host_user() -> tuple[int, str] | None:
    """Who `run_python`'s programs run as on the host (uid, and a line saying so), or
    None when the sandbox is not offered here. Never uid 0."""
    if sandbox_problem() is not None:
        return None
    host = boundary().host
    return host.uid, host.describe()


def isolation_layers() -> list[str]:
    """The isolation this machine gives `run_python`, for diagnostics; empty when the
    kernel boundary cannot be set up (then `run_python` is not offered)."""
    if sandbox_problem() is not None:
        return []
    host = boundary().host.uid
    return [
        f"user namespace (uid 65534, no capabilities; host uid {host})",
        "pid namespace",
        "mount namespace (runtime read-only, size-capped working folder, no /sys)",
        "procfs with the kernel's knobs hidden (/proc/sys, /proc/kallsyms, ...)",
        "network namespace",
        "no_new_privs and seccomp (no processes, exec, ptrace, pidfd, sockets, mounts)",
        "rlimits",
        "audit hook",
    ]
