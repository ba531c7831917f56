"""The kernel boundary around `run_python`: bubblewrap namespaces plus a seccomp filter.

The child runs under `bwrap` (Debian's `bubblewrap`):

- its own user namespace, as uid/gid 65534 with no capabilities, and no further user
  namespaces (`--disable-userns`). On the host that user is bigloop's own user, never
  root: when bigloop runs as root, bwrap is started as host uid `HOST_UID` (nobody) by
  the stage helper (`_sandbox_stage.py`), which first binds the Python runtime where
  that user can reach it (in a mount namespace of its own);
- its own PID namespace (it sees only itself: no parent in `/proc`, no signal reaches
  a process outside), mount namespace, network namespace (no interface but a down
  loopback), IPC, UTS and cgroup namespaces; it dies with its parent;
- a filesystem of only the Python runtime and the system libraries, read-only, a fresh
  `/proc` of its own namespace with the kernel's knobs hidden (`/proc/sys`,
  `/proc/sysrq-trigger`, `/proc/kcore`, `/proc/kallsyms`, ...: an empty read-only tmpfs
  or /dev/null over each), no `/sys`, a minimal read-only `/dev`, and one writable folder,
  `/sandbox`, a tmpfs capped at `SandboxLimits.folder_mb`; the root is read-only;
- `no_new_privs` and a seccomp filter built with libseccomp (via `pyseccomp`) refusing
  new processes (fork, vfork, clone without CLONE_THREAD, clone3), ptrace and the other
  ways into another process's memory, `pidfd_*`, every socket, mount and namespace
  changes, keyrings, BPF, perf, io_uring, userfaultfd, device nodes, module or
  kernel loading, and the kernel state no namespace isolates (clocks, I/O ports);
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bigloop._errors import UserError

WORK = "/sandbox"
CHILD = "/.bigloop/child.py"
NO_EXEC = "/.bigloop/no-exec.bpf"
UID = 65534  # the sandbox's user, inside its namespace
HOST_UID = 65534  # who that user is on the host when bigloop runs as root (nobody)
_STAGE_HELPER = Path(__file__).with_name("_sandbox_stage.py")
_CHILD_SOURCE = Path(__file__).with_name("_sandbox_child.py").read_bytes()
# where the stage helper mounts its tmpfs, in a mount namespace of its own (first found)
_STAGE_DIRS = ("/tmp", "/mnt", "/run", "/var/tmp")
# the kernel's knobs and views in procfs that a sandbox never needs: hidden (as
# Docker and Podman mask them), folders under an empty read-only tmpfs, files
# under /dev/null
_MASKED_FOLDERS = (
    "/proc/sys",
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/acpi",
    "/proc/asound",
    "/proc/scsi",
    "/proc/driver",
)
_MASKED_FILES = (
    "/proc/sysrq-trigger",
    "/proc/kcore",
    "/proc/kallsyms",
    "/proc/kmsg",
    "/proc/keys",
    "/proc/key-users",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/latency_stats",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/kpagecgroup",
    "/proc/config.gz",
    "/proc/modules",
    "/proc/iomem",
    "/proc/ioports",
    "/proc/vmallocinfo",
    "/proc/slabinfo",
)
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
    # state of the whole kernel that no namespace isolates: the clocks, I/O ports,
    # old and obscure kernel interfaces, other processes' memory placement
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "lookup_dcookie",
    "nfsservctl",
    "vhangup",
    "sysfs",
    "_sysctl",
    "uselib",
    "ustat",
    "mount_setattr",
    "quotactl_fd",
    "fanotify_init",
    "move_pages",
    "migrate_pages",
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
    host: HostUser  # who the sandbox's user is on the host
    masked: tuple[str, ...] = ()  # kernel knobs of /proc this kernel has, hidden

    def command(self, folder_mb: int, fds: Fds, env: dict[str, str]) -> list[str]:
        """The whole command line before the interpreter: bwrap's, behind the stage
        helper (`_sandbox_stage.py`) when bwrap must be started as another host user.
        `env`: the child's whole environment."""
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
        staged = self.host.stage is not None
        for index, path in enumerate(self.runtime):
            source = f"{self.host.stage}/{index}" if staged else path
            args += ["--ro-bind", source, path]
        for path, target in self.links:
            args += ["--symlink", target, path]
        args += ["--proc", "/proc", *_masks(self.masked)]
        args += ["--dev", "/dev", "--remount-ro", "/dev"]
        args += ["--size", str(folder_mb * 2**20), "--tmpfs", WORK]
        args += ["--perms", "0444", "--ro-bind-data", str(fds.child), CHILD]
        args += ["--perms", "0444", "--ro-bind-data", str(fds.no_exec), NO_EXEC]
        args += ["--remount-ro", "/", "--chdir", WORK, "--seccomp", str(fds.base)]
        if not staged:
            return args
        stage = [sys.executable, "-I", "-S", str(_STAGE_HELPER)]
        ids = [str(self.host.uid), str(self.host.gid), str(self.host.stage)]
        return [*stage, *ids, *self.runtime, "--", *args]

    def open_fds(self) -> Fds:
        """Fresh file descriptors for one start (close them after the start)."""
        return Fds(memfd(self.base_filter), memfd(self.no_exec_filter), memfd(_CHILD_SOURCE))

    @property
    def interpreter(self) -> str:
        return sys.executable


@dataclass(frozen=True)
class Fds:
    """The descriptors bwrap reads at start: its filter, the child's no-exec filter and
    the child's own code (`_sandbox_child.py`, copied in, so no host path of bigloop
    needs to be reachable by the sandbox's host user)."""

    base: int
    no_exec: int
    child: int

    def __iter__(self) -> Iterator[int]:
        return iter((self.base, self.no_exec, self.child))

    def close(self) -> None:
        for fd in self:
            os.close(fd)


@dataclass(frozen=True)
class HostUser:
    """Who the sandbox's uid 65534 is on the host, and how bwrap gets started as them."""

    uid: int
    gid: int
    stage: str | None  # where the stage helper binds the runtime; None: bwrap as ourselves

    def describe(self) -> str:
        """One line for `bigloop doctor`."""
        who = f"host uid {self.uid} ({_user_name(self.uid)})"
        if self.stage is None:
            return f"{who}, bigloop's own user"
        return f"{who}: bigloop runs as root, so bubblewrap is started as this user"


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return "no name"


def host_user() -> HostUser:
    """The host user the sandbox runs as: this process's own uid, or, when this process
    is root (or root outside its user namespace), `HOST_UID` (nobody), never root.

    Raises:
        SandboxUnavailable: bigloop runs as a uid that is root outside its user namespace
            but cannot become another user.
    """
    euid, egid = os.geteuid(), os.getegid()
    outside = _outside_uid(euid)
    if euid != 0 and outside != 0:
        return HostUser(euid, egid, None)
    if euid != 0:
        raise SandboxUnavailable(
            f"run_python: bigloop runs as uid {euid}, which is root outside its user "
            "namespace, and cannot switch to an unprivileged user; the sandbox would map "
            "to host root. Run bigloop as root (the sandbox then runs as uid "
            f"{HOST_UID}) or as an unprivileged user."
        )
    if _outside_uid(HOST_UID) is None:
        raise SandboxUnavailable(
            f"run_python: bigloop runs as root in a user namespace that maps no uid "
            f"{HOST_UID}; the sandbox would map to root. Map uid {HOST_UID}, or run "
            "bigloop as an unprivileged user."
        )
    stage = next((d for d in _STAGE_DIRS if os.path.isdir(d) and not os.path.islink(d)), None)
    if stage is None:
        raise SandboxUnavailable(
            f"run_python: no folder to stage the runtime in (one of {', '.join(_STAGE_DIRS)})."
        )
    return HostUser(HOST_UID, HOST_UID, stage)


def _outside_uid(uid: int) -> int | None:
    """`uid` as the parent user namespace sees it (from /proc/self/uid_map); None when
    this namespace does not map it."""
    try:
        lines = Path("/proc/self/uid_map").read_text().splitlines()
    except OSError:
        return uid
    for line in lines:
        inside, outside, count = (int(field) for field in line.split())
        if inside <= uid < inside + count:
            return outside + uid - inside
    return None


def _masks(masked: tuple[str, ...]) -> list[str]:
    """bwrap arguments hiding the kernel's knobs in the sandbox's fresh /proc: folders
    under an empty read-only tmpfs, files under /dev/null, read-only."""
    args: list[str] = []
    for path in masked:
        if path in _MASKED_FOLDERS:
            args += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    return args


def _present_masks() -> tuple[str, ...]:
    """The knobs this kernel's /proc has (bwrap cannot cover a path that is absent)."""
    return tuple(p for p in (*_MASKED_FOLDERS, *_MASKED_FILES) if os.path.lexists(p))


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
    host = host_user()
    found = Boundary(bwrap, runtime, links, base_filter, no_exec_filter, host, _present_masks())
    _probe(found)
    return found


def _probe(found: Boundary) -> None:
    """Start `python -c pass` inside the boundary; SandboxUnavailable with bwrap's words."""
    fds = found.open_fds()
    try:
        command = [*found.command(1, fds, {}), found.interpreter, "-I", "-c", "pass"]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                timeout=30,
                check=False,
                pass_fds=tuple(fds),
                env={},
                cwd="/",
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxUnavailable(f"run_python: bubblewrap did not start: {e}") from e
    finally:
        fds.close()
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
