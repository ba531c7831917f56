"""The auto planner: picks a planner per task, then hands the run to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from bigloop.planners.graph import GraphPlanner
from bigloop.planners.react import ReactPlanner
from bigloop.policies.select import listed_items
from bigloop.runtime.context import Planner, RunContext
from bigloop.trace.records import Step


class AutoPlanner:
    """A task graph (`many`) when the task enumerates several items, which it looks up
    concurrently; ReAct (`one`) otherwise. The choice depends only on the task, so a
    resumed run makes the same one.

    Args:
        items: finds the items a task enumerates (default: `listed_items`).
    """

    name = "auto"

    def __init__(
        self,
        *,
        items: Callable[[str], list[str]] = listed_items,
        many: Planner | None = None,
        one: Planner | None = None,
    ) -> None:
        self.items = items
        self.many = many or GraphPlanner(items=items)
        self.one = one or ReactPlanner()

    def choose(self, task: str) -> Planner:
        return self.many if self.items(task) else self.one

    def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        chosen = self.choose(ctx.transcript.task)
        ctx.planner = chosen.name
        return chosen.steps(ctx)
