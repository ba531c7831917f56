"""The auto planner: picks a planner per task, then hands the run to it.

Which planners it picks from is a measured decision, kept as data (`CODE_OR_NOT`): the
code planner is a candidate only while it scores higher than ReAct/graph on the suite's
dev split. Nothing is chosen from the task's words; the graph-or-ReAct choice reads the
task's structure (does it enumerate several items?).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from bigloop.planners.graph import GraphPlanner
from bigloop.planners.react import ReactPlanner
from bigloop.policies.select import listed_items
from bigloop.runtime.context import Planner, RunContext
from bigloop.trace.records import Step


@dataclass(frozen=True)
class DevScore:
    """One planner's score on the suite's dev split, as a committed result records it."""

    planner: str
    right: int
    tasks: int
    source: str

    @property
    def rate(self) -> float:
        return self.right / self.tasks


CODE_OR_NOT: tuple[DevScore, ...] = (
    DevScore("react/graph", 26, 57, "bench/results/code_planner/dev-auto-calls-revision.dev.md"),
    DevScore("code", 11, 57, "bench/results/code_planner/dev-code-calls.dev.md"),
)
"""Same revision, one after the other (`bench/suite.py --split dev [--planner code]`): the
figures `auto` decides on. Re-measure and update them when either planner changes."""


def code_chosen(scores: tuple[DevScore, ...] = CODE_OR_NOT) -> bool:
    """Whether the code planner scored highest on dev (a tie keeps ReAct/graph)."""
    best = max(scores, key=lambda s: (s.rate, s.planner != "code"))
    return best.planner == "code"


class AutoPlanner:
    """The code planner (`code`) when `scores` say it wins on dev; otherwise a task
    graph (`many`) when the task enumerates several items, which it looks up
    concurrently, and ReAct (`one`) for the rest. The choice depends only on the task
    and the recorded scores, so a resumed run makes the same one.

    Args:
        items: finds the items a task enumerates (default: `listed_items`).
        code: builds the code planner (it needs the sandbox: built only when chosen).
        scores: the measured decision (default: `CODE_OR_NOT`).
    """

    name = "auto"

    def __init__(
        self,
        *,
        items: Callable[[str], list[str]] = listed_items,
        many: Planner | None = None,
        one: Planner | None = None,
        code: Callable[[], Planner] | None = None,
        scores: tuple[DevScore, ...] = CODE_OR_NOT,
    ) -> None:
        self.items = items
        self.many = many or GraphPlanner(items=items)
        self.one = one or ReactPlanner()
        self.code = code if code is not None and code_chosen(scores) else None
        self._coder: Planner | None = None

    def choose(self, task: str) -> Planner:
        if self.code is not None:
            self._coder = self._coder or self.code()
            return self._coder
        return self.many if self.items(task) else self.one

    def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        chosen = self.choose(ctx.transcript.task)
        ctx.planner = chosen.name
        return chosen.steps(ctx)
