"""The sandboxed child's first code: limits and an audit hook, then the model's code.

Run inside the kernel boundary (`_confine.py`) as
`python -I -B child.py CPU_S MEMORY_BYTES FILE_BYTES NO_EXEC_FILTER hook|no-hook` in the
working folder, with the code on stdin; it imports nothing of bigloop. First it loads
the seccomp filter refusing exec (the filter bwrap installed had to let Python start),
then kernel limits (rlimits) bound CPU time, memory, file size and open files; the
audit hook refuses, with a message naming the rule, writing outside the working folder,
sockets, starting processes, ctypes, raising the limits. The hook keeps its own copies of
what it uses, so ordinary monkeypatching (of `os.path`, of builtins) does not disarm it,
but an audit hook is no security boundary against code crafted to escape it (PEP 578):
it is the second layer, explaining refusals; the kernel boundary is the first.
"""

from __future__ import annotations

import io
import os
import posix
import resource
import sys
import traceback
import types
from collections.abc import Callable
from stat import S_ISDIR, S_ISLNK
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NO_PROCESSES = "starting processes is not allowed"
_NO_NETWORK = "network access is not allowed"
_NO_CTYPES = "ctypes is not allowed"
_NO_INTROSPECTION = "inspecting the interpreter is not allowed"
_REFUSED = types.MappingProxyType(
    {
        "os.exec": _NO_PROCESSES,
        "os.fork": _NO_PROCESSES,
        "os.forkpty": _NO_PROCESSES,
        "os.posix_spawn": _NO_PROCESSES,
        "os.spawn": _NO_PROCESSES,
        "os.system": _NO_PROCESSES,
        "subprocess.Popen": _NO_PROCESSES,
        "os.kill": "signalling other processes is not allowed",
        "os.killpg": "signalling other processes is not allowed",
        "socket.__new__": _NO_NETWORK,
        "socket.connect": _NO_NETWORK,
        "socket.bind": _NO_NETWORK,
        "socket.getaddrinfo": _NO_NETWORK,
        "socket.sethostname": _NO_NETWORK,
        "ctypes.dlopen": _NO_CTYPES,
        "ctypes.dlsym": _NO_CTYPES,
        "ctypes.cdata": _NO_CTYPES,
        "ctypes.call_function": _NO_CTYPES,
        "resource.setrlimit": "changing the limits is not allowed",
        "resource.prlimit": "changing the limits is not allowed",
        "gc.get_objects": _NO_INTROSPECTION,
        "gc.get_referrers": _NO_INTROSPECTION,
        "gc.get_referents": _NO_INTROSPECTION,
        "sys._current_frames": _NO_INTROSPECTION,
        "object.__setattr__": _NO_INTROSPECTION,
    }
)
_THREADS = 64
_GUARDED_ATTRIBUTES = frozenset({"__code__"})  # (namedtuple sets __defaults__)
_REFUSED_MODULES = frozenset({"ctypes", "_ctypes", "_posixsubprocess", "_xxsubinterpreters"})
# event: (positions of the paths it changes, position of their dir_fd or -1)
_WRITES = types.MappingProxyType(
    {
        "os.remove": ((0,), 1),
        "os.rmdir": ((0,), 1),
        "os.mkdir": ((0,), 2),
        "os.rename": ((0, 1), 2),
        "os.link": ((0, 1), 2),
        "os.symlink": ((1,), 2),
        "os.chmod": ((0,), 2),
        "os.chown": ((0,), 3),
        "os.truncate": ((0,), -1),
        "os.utime": ((0,), 3),
        "os.setxattr": ((0,), -1),
        "os.removexattr": ((0,), -1),
        "shutil.rmtree": ((0,), 1),
    }
)


_Check = Callable[[str, tuple[Any, ...]], None]


def _make_resolve() -> Callable[[str, int], str]:
    """`resolve(path, depth)`: absolute `path` with `.`, `..` and symlinks resolved
    (at most 40 links deep), from the C functions themselves."""
    lstat, readlink, is_link, os_error = posix.lstat, posix.readlink, S_ISLNK, OSError

    def resolve(path: str, depth: int) -> str:
        resolved = ""
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                resolved = resolved.rpartition("/")[0]
                continue
            candidate = resolved + "/" + part
            try:
                link = is_link(lstat(candidate).st_mode)
            except os_error:
                link = False
            if link and depth < 40:
                target = readlink(candidate)
                start = "" if target.startswith("/") else resolved
                resolved = resolve(start + "/" + target, depth + 1)
            else:
                resolved = candidate
        return resolved or "/"

    return resolve


def _make_inside(work: str) -> Callable[..., bool]:
    """`inside(path, dir_fd)`: whether `path`, symlinks resolved, lies in `work`.
    Built from the C functions themselves, so patching `os` cannot change its answer."""
    resolve, readlink, getcwd, fspath = _make_resolve(), posix.readlink, posix.getcwd, posix.fspath
    str_, int_, bytes_, isinstance_ = str, int, bytes, isinstance
    devnull, prefix = os.devnull, work + "/"

    def inside(path: Any, dir_fd: Any = -1) -> bool:
        if isinstance_(path, int_):  # an open descriptor: checked when it was opened
            return True
        path = fspath(path)
        if isinstance_(path, bytes_):
            path = str_(path, "utf-8", "surrogateescape")
        if path == devnull:
            return True
        if not path.startswith("/"):
            folder = getcwd()
            if isinstance_(dir_fd, int_) and dir_fd >= 0:
                folder = readlink(f"/proc/self/fd/{dir_fd}")
            path = folder + "/" + path
        real = resolve(path, 0)
        return real == work or real.startswith(prefix)

    return inside


def _refuse(reason: str) -> _Check:
    """A check refusing its event outright."""
    denied = PermissionError

    def check(event: str, args: tuple[Any, ...]) -> None:
        raise denied(f"sandbox: {reason} ({event}).")

    return check


def _refuse_signals(reason: str) -> _Check:
    """A check refusing signals, except to this process itself."""
    getpid, denied = posix.getpid, PermissionError

    def check(event: str, args: tuple[Any, ...]) -> None:
        if args[0] == getpid():
            return
        raise denied(f"sandbox: {reason} ({event}).")

    return check


def _refuse_guarded_attributes(reason: str) -> _Check:
    """A check refusing `object.__setattr__` of the guarded attributes only."""
    guarded, denied = _GUARDED_ATTRIBUTES, PermissionError

    def check(event: str, args: tuple[Any, ...]) -> None:
        if args[1] not in guarded:
            return
        raise denied(f"sandbox: {reason} ({event}).")

    return check


def _check_import() -> _Check:
    """A check refusing imports of the refused modules (and of their submodules)."""
    refused_modules, no_module = _REFUSED_MODULES, ImportError

    def check(event: str, args: tuple[Any, ...]) -> None:
        if args[0].partition(".")[0] in refused_modules:
            # ImportError: libraries that can do without the module (numpy without ctypes) do
            raise no_module(f"sandbox: importing {args[0]} is not allowed.")

    return check


def _check_open(inside: Callable[..., bool]) -> _Check:
    """A check refusing to open for writing outside `work`, or to open a folder there."""
    write_flags, any_, denied = _WRITE_FLAGS, any, PermissionError
    stat, is_dir, os_error = posix.stat, S_ISDIR, OSError

    def check(event: str, args: tuple[Any, ...]) -> None:
        path, mode, flags = args
        writing = (mode is not None and any_(c in mode for c in "wax+")) or (flags & write_flags)
        if inside(path):
            return
        if writing:
            raise denied(
                f"sandbox: writing outside the working folder is not allowed ({path!r}); "
                f"write to relative paths."
            )
        # A folder's descriptor would let os.open(..., dir_fd=) write beneath it, and
        # the "open" event does not carry dir_fd.
        try:
            folder = is_dir(stat(path).st_mode)
        except os_error:
            folder = False
        if folder:
            raise denied(
                f"sandbox: opening a folder outside the working folder is not allowed ({path!r})."
            )

    return check


def _check_write(inside: Callable[..., bool], paths: tuple[int, ...], fd_at: int) -> _Check:
    """A check refusing to change, at positions `paths` (relative to the `dir_fd` at
    position `fd_at`, if any), files outside `work`."""
    denied, len_ = PermissionError, len

    def check(event: str, args: tuple[Any, ...]) -> None:
        dir_fd = args[fd_at] if 0 <= fd_at < len_(args) else -1
        for at in paths:
            if not inside(args[at], dir_fd):
                raise denied(
                    f"sandbox: changing files outside the working folder is not allowed "
                    f"({event} {args[at]!r})."
                )

    return check


def _make_checks(work: str) -> dict[str, _Check]:
    """The check for each audit event the hook looks at."""
    inside = _make_inside(work)
    checks: dict[str, _Check] = {}
    for event, reason in _REFUSED.items():
        if event in ("os.kill", "os.killpg"):
            checks[event] = _refuse_signals(reason)
        elif event == "object.__setattr__":
            checks[event] = _refuse_guarded_attributes(reason)
        else:
            checks[event] = _refuse(reason)
    checks["import"] = _check_import()
    checks["open"] = _check_open(inside)
    for event, (paths, fd_at) in _WRITES.items():
        checks[event] = _check_write(inside, paths, fd_at)
    return checks


def _make_hook(work: str) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook: one dictionary lookup per event, then that event's check, if any."""
    find = _make_checks(work).get

    def hook(event: str, args: tuple[Any, ...]) -> None:
        check = find(event)
        if check is not None:
            check(event, args)

    return hook


def _guard_unaudited(work: str) -> None:
    """os.mkfifo and os.mknod raise no audit event: wrap them."""
    for name in ("mkfifo", "mknod"):
        original, inside = getattr(posix, name), _make_inside(work)

        def guarded(
            path: Any, *args: Any, _original: Any = original, _inside: Any = inside, **kwargs: Any
        ) -> Any:
            if not _inside(path, kwargs.get("dir_fd", -1)):
                raise PermissionError("sandbox: creating files outside the working folder.")
            return _original(path, *args, **kwargs)

        setattr(posix, name, guarded)
        setattr(os, name, guarded)


def _forbid_exec(path: str) -> None:
    """Load the BPF program in `path` as a seccomp filter of this process (it refuses
    exec); ctypes is gone from `sys.modules` afterwards."""
    import ctypes

    with open(path, "rb") as f:
        program = f.read()

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.addressof(code))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0 or (
        libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0
    ):
        raise OSError(ctypes.get_errno(), "sandbox: the seccomp filter did not load")
    for name in [m for m in sys.modules if m.partition(".")[0] in _REFUSED_MODULES]:
        del sys.modules[name]


class ToolError(Exception):
    """A tool call the host refused or that failed (`reason`: "refused", "failed",
    "not_offered", "budget", "invalid", "closed")."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _bridged(requests: int, replies: int, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The program's tool functions (and `ToolError`): each call is one JSON line on the
    request pipe, answered by one on the reply pipe (`bigloop.atoms.builtin.bridge`)."""
    import json

    write, read, pending = posix.write, posix.read, bytearray()
    count = [0]

    def call(name: str, arguments: dict[str, Any]) -> Any:
        count[0] += 1
        data = json.dumps({"id": count[0], "tool": name, "arguments": arguments}, default=str)
        view = memoryview((data + "\n").encode())
        try:
            while view:
                view = view[write(requests, view) :]
        except OSError:  # the host closed the bridge (the program broke its rules)
            raise ToolError("the bridge to the tools is closed", "closed") from None
        while b"\n" not in pending:
            chunk = read(replies, 65536)
            if not chunk:
                raise ToolError("the bridge to the tools is closed", "closed")
            pending.extend(chunk)
        raw, _, rest = bytes(pending).partition(b"\n")
        pending[:] = rest
        reply = json.loads(raw)
        if not reply.get("ok"):
            raise ToolError(str(reply.get("output") or ""), str(reply.get("reason") or "failed"))
        output = reply.get("output", "")
        try:
            return json.loads(output)
        except ValueError:
            return output

    def function(name: str, params: list[str], doc: str) -> Callable[..., Any]:
        def tool(*args: Any, **kwargs: Any) -> Any:
            if len(args) > len(params):
                raise TypeError(f"{name}() takes at most {len(params)} positional arguments")
            return call(name, {**dict(zip(params, args, strict=False)), **kwargs})

        tool.__name__, tool.__doc__ = python_name(name), doc
        return tool

    found: dict[str, Any] = {"ToolError": ToolError}
    for t in tools:
        found[python_name(t["name"])] = function(t["name"], list(t["params"]), str(t["doc"]))
    return found


def python_name(name: str) -> str:
    """A tool's name as a Python identifier ("math.hcf" → "math_hcf")."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def _main() -> None:
    cpu_s, memory, file_bytes = (int(a) for a in sys.argv[1:4])
    no_exec, hook = sys.argv[4], sys.argv[5] == "hook"
    _forbid_exec(no_exec)
    work = os.path.realpath(os.getcwd())
    code, tools = sys.stdin.read(), {}
    if len(sys.argv) > 6:  # "bridge:REQUESTS:REPLIES": the stdin is {"code", "tools"}
        import json

        _, requests, replies = sys.argv[6].split(":")
        envelope = json.loads(code)
        code, tools = envelope["code"], _bridged(int(requests), int(replies), envelope["tools"])
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    for limit, soft, hard in (
        (resource.RLIMIT_CPU, cpu_s, cpu_s + 1),  # SIGXCPU at the soft limit, SIGKILL at hard
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_FSIZE, file_bytes, file_bytes),
        # threads only (seccomp refuses new processes); counted per user namespace
        (resource.RLIMIT_NPROC, _THREADS, _THREADS),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_NOFILE, 64, 64),
    ):
        resource.setrlimit(limit, (soft, hard))
    if hook:
        _guard_unaudited(work)
        sys.addaudithook(_make_hook(work))
    main = types.ModuleType("__main__")
    main.__dict__.update(tools)
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<code>", "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the child's top level: shown, without this frame
        traceback.print_exception(type(e), e, e.__traceback__.tb_next if e.__traceback__ else None)
        sys.exit(1)


if __name__ == "__main__":
    _main()
