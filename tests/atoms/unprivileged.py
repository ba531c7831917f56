"""Run a command as an unprivileged host user, from root, for the escape suite.

`python -I -S unprivileged.py UID ROOT... -- COMMAND...`: in a mount namespace of its
own (the host's mounts are untouched), every folder on the way to a ROOT that UID could
not pass (a `/root` of mode 0700 holding pyenv) is covered by a tmpfs of mode 0755 in
which the ROOTs are bound back at their own paths; then every group, uid and capability
of root is dropped for UID's, and COMMAND is executed. Nothing on the host changes mode.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 1 << 18


def _checked(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), what)


def _closed_ancestor(path: str) -> str | None:
    """The highest folder above `path` that others may not pass through, or None."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return folder
    return None


def main(argv: list[str]) -> None:
    split = argv.index("--")
    uid, roots, command = int(argv[0]), argv[1:split], argv[split + 1 :]
    libc = ctypes.CDLL(None, use_errno=True)
    _checked(libc.unshare(CLONE_NEWNS), "unshare")
    _checked(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    covered = {root: _closed_ancestor(root) for root in roots}
    handles = {root: os.open(root, os.O_PATH) for root, closed in covered.items() if closed}
    for folder in sorted({c for c in covered.values() if c}, key=len):
        if any(folder.startswith(other + "/") for other in covered.values() if other):
            continue  # below another covered folder: covered with it
        _checked(libc.mount(b"none", folder.encode(), b"tmpfs", 0, b"mode=0755"), folder)
    for root, handle in handles.items():
        os.makedirs(root, exist_ok=True)
        source = f"/proc/self/fd/{handle}".encode()
        _checked(libc.mount(source, root.encode(), None, MS_BIND | MS_REC, None), root)
        os.close(handle)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
