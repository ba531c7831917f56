"""Read-only file tools confined to one folder.

Every path is resolved and checked to lie inside the folder; a symlink is followed only
to a regular file inside it, never into a folder; globs with `..` or an absolute path
are refused. Only regular files are read (a FIFO or device could block forever), and
each walk stops after `_MAX_ENTRIES` entries or `_WALK_SECONDS`.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bigloop._errors import UserError
from bigloop.atoms.tool import Tool, tool

_MAX_FILE_BYTES = 1_000_000
_MAX_SEARCH_BYTES = 50_000_000
_MAX_ENTRIES = 50_000
_WALK_SECONDS = 10.0
_MAX_LISTED = 500
_MAX_HITS = 100
_MAX_LINE_CHARS = 300
_MAX_PATTERN_CHARS = 500


@dataclass(kw_only=True)
class _Walk:
    """The regular files under a folder, in order, and whether the walk was cut short."""

    base: Path
    stopped: str | None = None

    def files(self) -> list[tuple[str, Path]]:
        """(path relative to the base, in `/` form; the file to open: for a symlink, its
        target) for every regular file, sorted by path."""
        return sorted(self._walk())

    def _walk(self) -> Iterator[tuple[str, Path]]:
        deadline = time.monotonic() + _WALK_SECONDS
        seen = 0
        folders = [self.base]
        while folders:
            try:
                entries = list(os.scandir(folders.pop()))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > _MAX_ENTRIES or time.monotonic() > deadline:
                    self.stopped = f"stopped after scanning {seen - 1} entries"
                    return
                path = Path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    folders.append(path)
                elif file := self._regular_inside(entry, path):
                    yield path.relative_to(self.base).as_posix(), file

    def _regular_inside(self, entry: os.DirEntry[str], path: Path) -> Path | None:
        """The regular file at `path` (for a symlink, its target) if it is inside."""
        if not entry.is_symlink():
            return path if entry.is_file(follow_symlinks=False) else None
        try:
            target = path.resolve(strict=True)
            inside = target.is_relative_to(self.base) and stat.S_ISREG(target.stat().st_mode)
        except (OSError, RuntimeError):  # broken or looping link
            return None
        return target if inside else None


def file_tools(root: str | Path) -> list[Tool]:
    """Tools that list, read and search the files under `root`, and nothing outside it.

    Raises:
        UserError: `root` is not a folder.
    """
    base = Path(root).resolve()
    if not base.is_dir():
        raise UserError(f"{root} is not a folder; pass an existing folder to file_tools().")

    def inside(relative: str) -> Path:
        path = (base / relative).resolve()
        if not path.is_relative_to(base):
            raise PermissionError(f"{relative!r} is outside the allowed folder.")
        return path

    @tool
    def list_files(pattern: str = "**/*") -> list[str]:
        """List the files in the workspace folder whose path matches a glob pattern, or
        every file under a folder.

        Args:
            pattern: a glob such as "*.txt" or "**/*.csv", or a folder such as "notes";
                the default lists everything.
        """
        parts = _pattern_parts(pattern)
        if parts and not any(c in pattern for c in "*?[") and inside(pattern).is_dir():
            parts = [*parts, "**"]
        return _list(base, tuple(parts))

    @tool
    def read_file(path: str) -> str:
        """Read a text file from the workspace folder.

        Args:
            path: the file's path relative to the workspace folder.
        """
        return _text(_read_regular(inside(path), path))

    @tool
    def search_files(text: str) -> list[str]:
        """Find lines containing a text (case-insensitive) in the workspace's files.

        Args:
            text: the text to look for.
        """
        return _search(base, text.lower())

    list_files.description = f"{list_files.description} {holds(base)}"
    return [read_file, search_files, list_files]


def holds(base: Path, most: int = 12) -> str:
    """What the folder holds at its top, for the tools' docs: "The workspace folder holds
    data/, notes/, todo.txt." (folders with a slash, hidden entries left out, the first
    `most` by name), so a request about "my recipes" finds the tool that reads them."""
    try:
        entries = sorted(
            e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
            for e in os.scandir(base)
            if not e.name.startswith(".")
        )
    except OSError:
        return ""
    if not entries:
        return "The workspace folder is empty."
    more = f" and {len(entries) - most} more" if len(entries) > most else ""
    return f"The workspace folder holds {', '.join(entries[:most])}{more}."


def _list(base: Path, parts: tuple[str, ...]) -> list[str]:
    walk = _Walk(base=base)
    found = sorted(_shown(rel) for rel, _ in walk.files() if _matches(parts, rel))
    listed = found[:_MAX_LISTED]
    if len(found) > _MAX_LISTED:
        listed.append(f"… and {len(found) - _MAX_LISTED} more; narrow the pattern")
    if walk.stopped:
        listed.append(f"… {walk.stopped}; narrow the pattern (e.g. a folder)")
    return listed


def _search(base: Path, needle: str) -> list[str]:
    hits: list[str] = []
    budget = _MAX_SEARCH_BYTES
    walk = _Walk(base=base)
    for relative, file in walk.files():
        if len(hits) >= _MAX_HITS or budget <= 0:
            break
        try:
            data = _read_regular(file, relative)
            lines = data.decode("utf-8").splitlines()
        except (OSError, ValueError):  # unreadable, too large, or not UTF-8 text
            continue
        budget -= len(data)
        for number, line in enumerate(lines, 1):
            if needle in line.lower():
                hits.append(f"{_shown(relative)}:{number}: {_cut(line.strip())}")
    if walk.stopped:
        hits.append(f"… search {walk.stopped}; only the files before were searched")
    return hits[: _MAX_HITS + 1]


def _pattern_parts(pattern: str) -> list[str]:
    """The glob's segments; refuses what could reach outside the folder."""
    if len(pattern) > _MAX_PATTERN_CHARS:
        raise ValueError(f"The pattern is longer than {_MAX_PATTERN_CHARS} characters.")
    if pattern.startswith(("/", "\\", "~")):
        raise PermissionError(f"{pattern!r}: use a pattern relative to the workspace folder.")
    parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PermissionError(f"{pattern!r}: '..' would leave the workspace folder.")
    merged: list[str] = []
    for part in parts:  # "**/**" is "**"
        if not (part == "**" and merged and merged[-1] == "**"):
            merged.append(part)
    return merged


def _matches(parts: tuple[str, ...], relative: str) -> bool:
    """Whether `relative` matches the glob segments, `**` standing for any folders."""
    names = relative.split("/")

    @cache
    def match(i: int, j: int) -> bool:
        if j == len(parts):
            return i == len(names)
        if parts[j] == "**":
            return any(match(k, j + 1) for k in range(i, len(names) + 1))
        return i < len(names) and fnmatch.fnmatchcase(names[i], parts[j]) and match(i + 1, j + 1)

    return match(0, 0) if parts else True


def _read_regular(path: Path, shown: str) -> bytes:
    """The bytes of a regular file; refuses folders, FIFOs, devices and large files."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO must not wait for a writer
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(f"{shown} is a folder; use list_files to see its files.")
        raise ValueError(f"{shown} is not a regular file (a FIFO, device or socket).")
    with os.fdopen(fd, "rb") as file:
        data = file.read(_MAX_FILE_BYTES + 1)
    if len(data) > _MAX_FILE_BYTES:
        raise ValueError(f"{shown} is larger than {_MAX_FILE_BYTES} bytes.")
    return data


def _text(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _shown(relative: str) -> str:
    """A path for the model: bytes that are not UTF-8 escaped as \\xNN, never left as
    lone surrogates."""
    return os.fsencode(relative).decode("utf-8", errors="backslashreplace")


def _cut(line: str) -> str:
    return line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + "…"
