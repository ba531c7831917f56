"""A suite task, its tool set, and the workspace its tools work on.

A task names its tools: built-in tools by name, the custom tools of `tools.py` by name,
and "files" / "db" for the file tools over the generated folder tree and the SQL tools
over the generated shop database (`data.py`), as `bigloop run --files/--db` adds them.
A task's `solve` is its ground truth computed through the real tools (called directly,
without a model): `tests/bench` checks that each task's check accepts it, so an expected
answer the tools would contradict fails a test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bigloop.atoms import builtin
from bigloop.atoms.tool import Tool

from .checks import Check
from .data import write_db, write_tree
from .tools import CUSTOM_TOOLS

Category = Literal[
    "arithmetic",
    "units",
    "dates",
    "sql",
    "files",
    "multistep",
    "custom_tools",
    "no_tool",
    "missing_value",
]
CATEGORIES: tuple[Category, ...] = (
    "arithmetic",
    "units",
    "dates",
    "sql",
    "files",
    "multistep",
    "custom_tools",
    "no_tool",
    "missing_value",
)

DEFAULT = tuple(t.name for t in builtin.default_tools())
"""The tools `bigloop run` offers when none are named."""
CUSTOM = ("calculator", "convert_units", *(t.name for t in CUSTOM_TOOLS))
"""A user's own tools next to the calculator and unit conversion."""
FILES = "files"
DB = "db"


@dataclass(kw_only=True)
class Workspace:
    """The generated data the "files" and "db" tools work on."""

    files: Path
    db: Path

    @classmethod
    def create(cls, root: Path) -> Workspace:
        """Write the folder tree and the database under `root` (an empty folder)."""
        (root / "files").mkdir(parents=True)
        return cls(files=write_tree(root / "files"), db=write_db(root / "shop.db"))

    def tools(self, names: tuple[str, ...]) -> list[Tool]:
        """The tools `names` names, in that order."""
        known = {t.name: t for t in [*builtin.default_tools(), *CUSTOM_TOOLS]}
        chosen: list[Tool] = []
        for name in names:
            if name == FILES:
                chosen += builtin.file_tools(self.files)
            elif name == DB:
                chosen += builtin.sqlite_tools(self.db)
            else:
                chosen.append(known[name])
        return chosen


class Toolbox:
    """The real tools of a workspace, called directly: `box("add_days", date=..., days=3)`."""

    def __init__(self, workspace: Workspace) -> None:
        self._tools = {t.name: t for t in workspace.tools((*DEFAULT, *CUSTOM, FILES, DB))}

    def __call__(self, tool_name: str, /, **arguments: Any) -> Any:
        return self._tools[tool_name].fn(**arguments)


Solve = Callable[[Toolbox], object]


@dataclass(kw_only=True, frozen=True)
class Task:
    """One task of the suite.

    Attributes:
        id: "<prefix>-NNN", stable: results files and the dev/test split key on it.
        category: what the task exercises.
        text: the request, written as people write it.
        tools: the tool set offered (see the module docstring).
        check: decides from the run's outcome whether it is right.
        solve: the answer computed by calling the real tools (None for tasks that need
            no tool or lack a value).
    """

    id: str
    category: Category
    text: str
    tools: tuple[str, ...]
    check: Check
    solve: Solve | None = None
