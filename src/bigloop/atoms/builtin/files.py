"""Read-only file tools confined to one folder."""

from __future__ import annotations

from pathlib import Path

from bigloop._errors import UserError
from bigloop.atoms.tool import Tool, tool

_MAX_FILE_BYTES = 1_000_000


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
        if pattern.strip("/") and (base / pattern).is_dir():
            pattern = pattern.rstrip("/") + "/**/*"
        return sorted(str(p.relative_to(base)) for p in base.glob(pattern) if p.is_file())[:500]

    @tool
    def read_file(path: str) -> str:
        """Read a text file from the workspace folder.

        Args:
            path: the file's path relative to the workspace folder.
        """
        file = inside(path)
        if file.stat().st_size > _MAX_FILE_BYTES:
            raise ValueError(f"{path} is larger than {_MAX_FILE_BYTES} bytes.")
        return file.read_text(errors="replace")

    @tool
    def search_files(text: str) -> list[str]:
        """Find lines containing a text (case-insensitive) in the workspace's files.

        Args:
            text: the text to look for.
        """
        needle = text.lower()
        hits = []
        for file in sorted(base.rglob("*")):
            if not file.is_file() or file.stat().st_size > _MAX_FILE_BYTES:
                continue
            try:
                lines = file.read_text().splitlines()
            except UnicodeDecodeError:
                continue
            for number, line in enumerate(lines, 1):
                if needle in line.lower():
                    hits.append(f"{file.relative_to(base)}:{number}: {line.strip()}")
        return hits[:100]

    return [read_file, search_files, list_files]
