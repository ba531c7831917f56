"""bigloop's everyday-task suite: arithmetic, units, dates, SQL, files, multi-step tasks,
custom tools, tasks no tool fits and tasks that lack a value — each with an automatic
check, computed expected answers, and a fixed dev/test split.

**dev** is for tuning (read its failures, try levers, ablate); **test** is reported and
never tuned on. See `catalog` for how the split is made.

    from bigloop_eval.suite import LoopConfig, run_suite, split, summarize
    results = run_suite(model, split("test"), LoopConfig(), Path("out.jsonl"))
    print(summarize(results).accuracy)

`python bench/suite.py --help` (in the repository) runs it from the command line.
"""

from __future__ import annotations

from bigloop.config import LoopConfig

from .catalog import DEV_SHARE, SplitName, assignment, split
from .checks import Check, Outcome
from .report import Summary, markdown, summarize
from .run import Result, build_loop, load_results, run_suite, run_tasks
from .task import CATEGORIES, Category, Task, Toolbox, Workspace

__all__ = [
    "CATEGORIES",
    "DEV_SHARE",
    "Category",
    "Check",
    "LoopConfig",
    "Outcome",
    "Result",
    "SplitName",
    "Summary",
    "Task",
    "Toolbox",
    "Workspace",
    "assignment",
    "build_loop",
    "load_results",
    "markdown",
    "run_suite",
    "run_tasks",
    "split",
    "summarize",
]
