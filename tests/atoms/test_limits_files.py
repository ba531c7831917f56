"""File tools: confinement to their folder for every tool, and only regular files read."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from bigloop import Tool, ToolFailure
from bigloop.atoms.builtin import file_tools


def run(tool: Tool, **args: object) -> str:
    return asyncio.run(tool.call(args))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("password 1234\n")
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.txt").write_text("hello\npassword? none here\n")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "leakdir").symlink_to(outside)
    (root / "alias.txt").symlink_to(root / "notes" / "a.txt")
    return root


def test_search_does_not_read_through_symlinks_out(workspace: Path) -> None:
    _, search_files, _ = file_tools(workspace)
    hits = json.loads(run(search_files, text="password"))
    assert hits == ["alias.txt:2: password? none here", "notes/a.txt:2: password? none here"]


def test_list_does_not_leave_the_folder(workspace: Path) -> None:
    _, _, list_files = file_tools(workspace)
    assert json.loads(run(list_files)) == ["alias.txt", "notes/a.txt"]
    assert json.loads(run(list_files, pattern="leakdir/*")) == []
    with pytest.raises(ToolFailure, match=r"'\.\.' would leave the workspace folder"):
        run(list_files, pattern="../../../etc/pass*")
    with pytest.raises(ToolFailure, match="relative to the workspace folder"):
        run(list_files, pattern="/etc/pass*")
    with pytest.raises(ToolFailure, match="outside the allowed folder"):
        run(list_files, pattern="leakdir")


def test_glob_patterns_keep_their_meaning(workspace: Path) -> None:
    _, _, list_files = file_tools(workspace)
    assert json.loads(run(list_files, pattern="*.txt")) == ["alias.txt"]
    assert json.loads(run(list_files, pattern="**/*.txt")) == ["alias.txt", "notes/a.txt"]
    assert json.loads(run(list_files, pattern="notes")) == ["notes/a.txt"]
    assert json.loads(run(list_files, pattern="./notes/?.txt")) == ["notes/a.txt"]
    assert json.loads(run(list_files, pattern="**/**/**/**/**/**/**/*.md")) == []


def test_non_regular_files_are_refused(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    read_file, search_files, list_files = file_tools(workspace)
    # Before the fix, read_file blocked forever opening the FIFO (and search_files too).
    with pytest.raises(ToolFailure, match="not a regular file"):
        run(read_file, path="pipe")
    with pytest.raises(ToolFailure, match="is a folder; use list_files"):
        run(read_file, path="notes")
    assert "pipe" not in run(list_files)
    assert json.loads(run(search_files, text="hello")) == [
        "alias.txt:1: hello",
        "notes/a.txt:1: hello",
    ]


def test_undecodable_names_are_escaped(workspace: Path) -> None:
    (workspace / os.fsdecode(b"caf\xe9.txt")).write_text("x")
    _, _, list_files = file_tools(workspace)
    text = run(list_files, pattern="caf*")
    text.encode("utf-8")  # no lone surrogate
    assert json.loads(text) == ["caf\\xe9.txt"]
