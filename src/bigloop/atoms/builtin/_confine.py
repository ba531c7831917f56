"""The kernel boundary around `run_python`: bubblewrap namespaces plus a seccomp filter.

The child runs under `bwrap` (Debian's `bubblewrap`):

- its own user namespace, as uid/gid 65534 with no capabilities, and no further user
  namespaces (`--disable-userns`);
- its own PID namespace (it sees only itself: no parent in `/proc`, no signal reaches
  a process outside), mount namespace, network namespace (no interface but a down
  loopback), IPC, UTS and cgroup namespaces; it dies with its parent;
- a filesystem of only the Python runtime and the system libraries, read-only, a fresh
  `/proc` of its own namespace, a minimal read-only `/dev`, and one writable folder,
  `/sandbox`, a tmpfs capped at `SandboxLimits.folder_mb`; the root is read-only;
- `no_new_privs` and a seccomp filter built with libseccomp (via `pyseccomp`) refusing
  new processes (fork, vfork, clone without CLONE_THREAD, clone3), ptrace and the other
  ways into another process's memory, `pidfd_*`, every socket, mount and namespace
  changes, keyrings, BPF, perf, io_uring, userfaultfd, device nodes and module or
  kernel loading;
- a second filter the child loads itself before the model's code runs, refusing
  `execve`/`execveat` (the first filter must let bwrap start Python).

`boundary()` builds and probes this once; where it cannot be set up (no bubblewrap, no
user namespaces, no libseccomp) it raises `SandboxUnavailable` saying why, and
`run_python` is not offered.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bigloop._errors import UserError

WORK = "/sandbox"
CHILD = "/.bigloop/child.py"
NO_EXEC = "/.bigloop/no-exec.bpf"
UID = 65534
_SYSTEM_PATH = "/usr/bin:/bin:/usr/local/bin"  # where Debian puts bwrap, whatever PATH says

_CLONE_THREAD = 0x00010000
_DENIED = (
    # new processes (threads are clones with CLONE_THREAD, allowed below)
    "fork",
    "vfork",
    # other processes and their memory
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    "kcmp",
    # the network, and local sockets (also to the parent's listeners)
    "socket",
    "socketpair",
    # mounts, namespaces, roots
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsmount",
    "fspick",
    # the kernel's other doors
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "mknod",
    "mknodat",
    "open_by_handle_at",
    "name_to_handle_at",
    "personality",
    "quotactl",
    "syslog",
    "sethostname",
    "setdomainname",
)


class SandboxUnavailable(UserError):
    """The kernel boundary `run_python` needs cannot be set up on this machine (a
    `UserError`: the command line shows the message and exits 2)."""


@dataclass(frozen=True)
class Boundary:
    """How to start a confined child on this machine (probed by `boundary()`)."""

    bwrap: str
    runtime: tuple[str, ...]  # read-only folders of the Python runtime
    links: tuple[tuple[str, str], ...]  # (path, target) of top-level symlinks like /lib
    base_filter: bytes
    no_exec_filter: bytes

    def command(
        self, child: Path, folder_mb: int, fds: tuple[int, int], env: dict[str, str]
    ) -> list[str]:
        """The bwrap command line before the interpreter; `fds`: (base filter, no-exec);
        `env`: the child's whole environment."""
        base_fd, no_exec_fd = fds
        args = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--uid",
            str(UID),
            "--gid",
            str(UID),
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--clearenv",
        ]
        for key, value in env.items():
            args += ["--setenv", key, value]
        for path in self.runtime:
            args += ["--ro-bind", path, path]
        for path, target in self.links:
            args += ["--symlink", target, path]
        args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        args += ["--size", str(folder_mb * 2**20), "--tmpfs", WORK]
        args += ["--ro-bind", str(child), CHILD, "--ro-bind-data", str(no_exec_fd), NO_EXEC]
        args += ["--remount-ro", "/", "--chdir", WORK, "--seccomp", str(base_fd)]
        return args

    @property
    def interpreter(self) -> str:
        return sys.executable


def _filters() -> tuple[bytes, bytes]:
    """(the filter bwrap installs, the no-exec filter the child adds), as BPF programs."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as e:  # pyseccomp missing, or libseccomp.so.2 missing
        raise SandboxUnavailable(
            f"run_python needs libseccomp (Debian: libseccomp2) and pyseccomp: {e}"
        ) from e
    base = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in _DENIED:
        try:
            base.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            continue  # a call this kernel and architecture do not have
    no_thread = seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0)
    base.add_rule(seccomp.ERRNO(errno.EPERM), "clone", no_thread)
    base.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # glibc then falls back to clone
    no_exec = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in ("execve", "execveat"):
        no_exec.add_rule(seccomp.ERRNO(errno.EPERM), name)
    return _bpf(base), _bpf(no_exec)


def _bpf(seccomp_filter: object) -> bytes:
    """The filter compiled to a BPF program (libseccomp writes it to a file descriptor)."""
    with tempfile.TemporaryFile() as out:
        seccomp_filter.export_bpf(out)  # type: ignore[attr-defined]
        out.seek(0)
        return out.read()


def _runtime() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The folders holding the interpreter, its libraries and the system's shared
    libraries, and the top-level symlinks (`/lib -> usr/lib`) to recreate."""
    roots = {"/usr", sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    links: list[tuple[str, str]] = []
    for top in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
        if os.path.islink(top):
            links.append((top, os.readlink(top)))
        elif os.path.isdir(top):
            roots.add(top)
    kept: list[str] = []
    for root in sorted(os.path.realpath(r) for r in roots if os.path.isdir(r)):
        if not any(root == k or root.startswith(k + "/") for k in kept):
            kept.append(root)
    for root in kept:
        if root in ("/", WORK) or root.startswith(WORK + "/") or root.startswith("/.bigloop"):
            raise SandboxUnavailable(f"run_python cannot confine a Python installed in {root}.")
    return tuple(kept), tuple(links)


@functools.cache
def boundary() -> Boundary:
    """The boundary this machine gives, probed once by starting Python inside it.

    Raises:
        SandboxUnavailable: bubblewrap, user namespaces or libseccomp are missing; the
            message says which and how to get it.
    """
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable("run_python needs Linux (namespaces and seccomp).")
    bwrap = shutil.which("bwrap") or shutil.which("bwrap", path=_SYSTEM_PATH)
    if bwrap is None:
        raise SandboxUnavailable(
            "run_python needs bubblewrap: install it (Debian/Ubuntu: apt-get install "
            "bubblewrap; `make setup` does so as root)."
        )
    runtime, links = _runtime()
    base_filter, no_exec_filter = _filters()
    found = Boundary(bwrap, runtime, links, base_filter, no_exec_filter)
    _probe(found)
    return found


def _probe(found: Boundary) -> None:
    """Start `python -c pass` inside the boundary; SandboxUnavailable with bwrap's words."""
    fds = (memfd(found.base_filter), memfd(found.no_exec_filter))
    try:
        child = Path(__file__).with_name("_sandbox_child.py")
        command = [*found.command(child, 1, fds, {}), found.interpreter, "-I", "-c", "pass"]
        try:
            done = subprocess.run(
                command, capture_output=True, timeout=30, check=False, pass_fds=fds, env={}
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxUnavailable(f"run_python: bubblewrap did not start: {e}") from e
    finally:
        for fd in fds:
            os.close(fd)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[-500:]
        raise SandboxUnavailable(
            f"run_python: bubblewrap cannot set up the sandbox here ({said or done.returncode})."
            " It needs user namespaces (sysctl kernel.unprivileged_userns_clone=1, or run "
            "as root; in a container, allow unshare)."
        )


def memfd(data: bytes) -> int:
    """A file descriptor reading `data` from its start, for passing to bwrap."""
    fd = os.memfd_create("bigloop-sandbox", 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
