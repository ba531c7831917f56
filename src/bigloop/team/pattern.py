"""What every team pattern shares: run, resume, a sync wrapper, and use as a tool."""

from __future__ import annotations

import asyncio
from typing import Any

from bigloop.atoms.tool import Tool
from bigloop.team.agent import TASK_SCHEMA
from bigloop.team.record import TeamRun
from bigloop.trace.records import RunResult
from bigloop.trace.store import TraceStore


class TeamPattern:
    """A team pattern: subclasses set `pattern` and implement `_work(run)` (the answer),
    which asks for every exchange and model turn through `run` so that a resume replays
    them."""

    pattern = "team"
    store: TraceStore | None = None

    async def run(self, task: str) -> RunResult:
        """Run the team on `task`; every message between its agents is a step."""
        run = TeamRun.start(
            task, pattern=self.pattern, model=self.model_name, config=self.config, store=self.store
        )
        return await run.drive(self._work(run))

    async def resume(self, run_id: str) -> RunResult:
        """Continue an interrupted run: recorded exchanges are not made again.

        Raises:
            UserError: there is no store, no such run, or it is not a run of this pattern.
        """
        run = TeamRun.reopen(run_id, pattern=self.pattern, store=self.store)
        if isinstance(run, RunResult):
            return run
        return await run.drive(self._work(run))

    def run_sync(self, task: str) -> RunResult:
        """`run` for code that is not async."""
        return asyncio.run(self.run(task))

    def as_tool(self, name: str, description: str, *, timeout_s: float = 600.0) -> Tool:
        """The team as one tool taking a `task` (a loop or an agent can delegate to it)."""

        async def run(task: str) -> str:
            result = await self.run(task)
            if result.status != "ok":
                raise RuntimeError(f"team {name!r} ended {result.status}: {result.error}")
            return result.answer or ""

        return Tool.from_schema(
            name, description, TASK_SCHEMA, run, timeout_s=timeout_s, idempotent=False
        )

    @property
    def model_name(self) -> str:
        """What the trace store records as the run's model."""
        return self.pattern

    @property
    def config(self) -> dict[str, Any]:
        """What the trace store records as the run's configuration."""
        return {}

    async def _work(self, run: TeamRun) -> str | None:
        raise NotImplementedError
