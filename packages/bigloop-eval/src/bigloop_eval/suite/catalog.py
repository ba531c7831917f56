"""The suite's tasks and its dev/test split.

**dev** (about 40% of each category) is for tuning: look at its failures, try levers,
ablate. **test** (the other 60%) is what gets reported; never tune on it — do not read
its failures to decide what to change.

The split is deterministic and stratified: within each category, tasks are ordered by
the SHA-256 of their id and the first 40% (rounded) go to dev. Adding tasks to a category
can move a task near the boundary from one side to the other, so scores from before and
after a change of the task list are not comparable anyway.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from .task import CATEGORIES, Task
from .tasks import TASKS

SplitName = Literal["dev", "test", "all"]
DEV_SHARE = 0.4


def _rank(task_id: str) -> str:
    return hashlib.sha256(task_id.encode()).hexdigest()


def assignment(tasks: list[Task] | None = None) -> dict[str, Literal["dev", "test"]]:
    """Task id → "dev" or "test"."""
    tasks = TASKS if tasks is None else tasks
    side: dict[str, Literal["dev", "test"]] = {}
    for category in CATEGORIES:
        ids = sorted((t.id for t in tasks if t.category == category), key=_rank)
        dev = round(DEV_SHARE * len(ids))
        side |= {task_id: "dev" if n < dev else "test" for n, task_id in enumerate(ids)}
    return side


def split(name: SplitName = "all") -> list[Task]:
    """The tasks of one split ("dev", "test") or all of them, in suite order."""
    if name not in ("dev", "test", "all"):
        raise ValueError(f"Unknown split {name!r}; use dev, test or all.")
    if name == "all":
        return list(TASKS)
    side = assignment()
    return [t for t in TASKS if side[t.id] == name]
