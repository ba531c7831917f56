"""Every task of the suite, by category (one module each; `direct` holds the tasks that
need no tool and those that lack a value).

Ids are stable: never renumber or reuse one (results files and the dev/test split key on
them); add a task with the next free number of its category.
"""

from __future__ import annotations

from ..task import Task
from . import arithmetic, custom, dates, direct, files, multistep, sql, units

TASKS: list[Task] = [
    *arithmetic.TASKS,
    *units.TASKS,
    *dates.TASKS,
    *sql.TASKS,
    *files.TASKS,
    *multistep.TASKS,
    *custom.TASKS,
    *direct.NO_TOOL,
    *direct.MISSING_VALUE,
]

__all__ = ["TASKS"]
