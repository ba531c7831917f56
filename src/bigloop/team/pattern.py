"""What every team pattern shares: run, resume, a sync wrapper, use as a tool, and
asking an agent for a reply."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from bigloop.atoms.models.base import Message
from bigloop.atoms.tool import Tool
from bigloop.team.agent import Agent, task_tool
from bigloop.team.record import Reply, TeamRun
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

        return task_tool(
            name,
            description,
            self.run,
            owner=f"team {name!r}",
            timeout_s=timeout_s,
            idempotent=False,
            effect="write",  # the members' own loops gate what they call
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


async def ask_agent(
    agent: Agent,
    text: str,
    run: TeamRun,
    *,
    history: Sequence[Message] = (),
    answer: Callable[[RunResult], str] | None = None,
) -> Reply:
    """`text` as the agent's task, continuing `history` (default: a fresh conversation),
    traced in the run's store; its answer (read by `answer`, default the run's answer),
    or its failure as an error reply."""
    result = await agent.run(text, history=list(history), store=run.store)
    if result.status != "ok":
        return Reply(
            text=f"Error: {result.error or result.status}",
            error=result.status,
            usage=result.usage,
            run=result.run_id,
        )
    said = answer(result) if answer is not None else result.answer or ""
    return Reply(text=said, usage=result.usage, run=result.run_id)
