"""Start bubblewrap as an unprivileged host user when bigloop itself runs as root.

Run as `python -I -S _sandbox_stage.py UID GID STAGE SOURCE... -- BWRAP ARGS...` by
`_confine.Boundary.argv`, as root. bubblewrap started by root maps the sandbox's user to
host uid 0, and root-owned host files the sandbox can reach (the host kernel's
`/proc/sys`) would be writable by it; started by an unprivileged user it maps the
sandbox to that user instead. That user may not be able to reach the Python runtime,
though (pyenv under a `/root` of mode 0700), so first, in a mount namespace of its own
(the host's mounts are not touched), this helper mounts a small tmpfs on STAGE and
binds each SOURCE folder, opened while still root, at STAGE/0, STAGE/1, ...; bwrap
binds those read-only into the sandbox at their own paths. Then it drops every group and
privilege (`setgroups`, `setresgid`, `setresuid`: no way back, no capabilities left) and
executes bwrap. It imports nothing of bigloop and takes no input but its arguments.
"""

from __future__ import annotations

import ctypes
import os
import sys

_CLONE_NEWNS = 0x00020000
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18


def _check(result: int, libc: ctypes.CDLL, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"bigloop sandbox stage: {what}: {os.strerror(error)}")


def main(argv: list[str]) -> None:
    split = argv.index("--")
    uid, gid, stage, *sources = argv[:split]
    bwrap = argv[split + 1 :]
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(_CLONE_NEWNS), libc, "unshare(CLONE_NEWNS)")
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), libc, "make / private")
    # opened in the new namespace (a bind's source must be a mount of the caller's), and
    # before the tmpfs covers STAGE (a source may lie below it)
    handles = [os.open(source, os.O_PATH | os.O_DIRECTORY) for source in sources]
    options = b"mode=0755,size=64k"
    _check(libc.mount(b"bigloop-stage", stage.encode(), b"tmpfs", 0, options), libc, "tmpfs")
    for index, handle in enumerate(handles):
        target = os.path.join(stage, str(index))
        os.mkdir(target)
        source = f"/proc/self/fd/{handle}".encode()
        _check(libc.mount(source, target.encode(), None, _MS_BIND | _MS_REC, None), libc, target)
        os.close(handle)
    os.setgroups([])
    os.setresgid(int(gid), int(gid), int(gid))
    os.setresuid(int(uid), int(uid), int(uid))
    if os.getuid() == 0 or os.geteuid() == 0:  # pragma: no cover - setresuid would have raised
        raise OSError("bigloop sandbox stage: still root after setresuid")
    os.chdir("/")
    os.execv(bwrap[0], bwrap)


if __name__ == "__main__":
    main(sys.argv[1:])
