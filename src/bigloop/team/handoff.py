"""Hand-off: an agent passes the conversation to another, who carries it on.

Each agent is offered a `handoff_to_<name>` tool for every agent it may hand over to
(`routes`; default: all the others). When its model calls one, its run ends at once and
the receiver runs with the whole conversation so far — the user's request, the earlier
agents' turns and tool results — under its own instructions, asked to continue with the
request. The first agent to answer without handing off answers for the team.

Each hand-off is a "message" step "sender→receiver" whose `input` holds the reason the
model gave (`text`) and the conversation handed over (`messages`): a resumed run starts
from the last hand-off, and an agent's finished part is never run again. `RunResult.
messages` is the whole conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bigloop._errors import BudgetExceeded, InputRequired, RunFailure, UserError
from bigloop.atoms.tool import Tool
from bigloop.team.agent import Agent
from bigloop.team.pattern import TeamPattern
from bigloop.team.prompts import HANDED_OFF, HANDOFF_REASON, HANDOFF_TOOL, TAKE_OVER
from bigloop.team.record import TeamRun
from bigloop.trace.records import message_from_dict, message_to_dict
from bigloop.trace.store import TraceStore

PREFIX = "handoff_to_"


class Handoff(TeamPattern):
    """Agents that hand a conversation to each other (see the module docstring).

    Args:
        agents: the agents (distinct names); the first starts unless `start` says.
        start: the name of the agent that gets the task.
        routes: who may hand over to whom, by name (default: everyone to everyone else).
        max_handoffs: hand-offs allowed in one run (a ping-pong ends the run).
        store: where the run, and the agents' runs, are traced.
    """

    pattern = "handoff"

    def __init__(
        self,
        agents: Sequence[Agent],
        *,
        start: str | None = None,
        routes: Mapping[str, Sequence[str]] | None = None,
        max_handoffs: int = 4,
        store: TraceStore | None = None,
    ) -> None:
        self.agents = {a.name: a for a in agents}
        if len(self.agents) != len(agents) or not agents:
            raise UserError("A Handoff needs agents with distinct names.")
        self.start = start or agents[0].name
        if routes is None:
            routes = {a: [b for b in self.agents if b != a] for a in self.agents}
        for sender, receivers in routes.items():
            if unknown := sorted({sender, *receivers, self.start} - set(self.agents)):
                raise UserError(f"Handoff routes name agents that are not in the team: {unknown}.")
        self.routes = {a: list(routes.get(a, [])) for a in self.agents}
        self.max_handoffs = max_handoffs
        self.store = store

    @property
    def model_name(self) -> str:
        return self.agents[self.start].model.name

    @property
    def config(self) -> dict[str, Any]:
        return {"agents": list(self.agents), "start": self.start, "routes": self.routes}

    def tools_for(self, name: str) -> list[Tool]:
        """The hand-off tools agent `name` is offered."""
        return [_handoff_tool(self.agents[r]) for r in self.routes[name]]

    async def _work(self, run: TeamRun) -> str | None:
        current, conversation, task = self.start, [], run.task
        handoffs = run.stored("message")
        if handoffs:  # resumed: carry on from the last hand-off
            last = handoffs[-1]
            current = last.name.split("→", 1)[1]
            conversation = [message_from_dict(m) for m in last.input["messages"]]
            task = TAKE_OVER.format(
                sender=last.name.split("→", 1)[0], reason=last.input["text"], task=run.task
            )
        count = len(handoffs)
        while True:
            agent = self.agents[current]
            tools = self.tools_for(current)
            result = await agent.run(
                task,
                history=conversation,
                tools=tools,
                until={t.name for t in tools},
                store=run.store,
            )
            run.messages = result.messages
            if result.status == "input_required":
                raise InputRequired(result.question or "")
            if result.status != "ok":
                raise RunFailure(f"{current} ended {result.status}: {result.error}")
            handed = next(
                (s for s in result.tool_steps if s.name.startswith(PREFIX) and s.error is None),
                None,
            )
            if handed is None:
                return result.answer
            count += 1
            if count > self.max_handoffs:
                raise BudgetExceeded(
                    f"The agents handed the conversation over {self.max_handoffs} times "
                    "without an answer."
                )
            receiver = handed.name.removeprefix(PREFIX)
            reason = str((handed.input or {}).get("reason", ""))
            conversation = [m for m in result.messages if m.role != "system"]
            run.note(
                current,
                receiver,
                reason,
                messages=[message_to_dict(m) for m in conversation],
                run=result.run_id,
            )
            task = TAKE_OVER.format(sender=current, reason=reason, task=run.task)
            current = receiver


def _handoff_tool(receiver: Agent) -> Tool:
    def handoff(reason: str) -> str:
        return HANDED_OFF.format(name=receiver.name)

    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": HANDOFF_REASON}},
        "required": ["reason"],
    }
    description = HANDOFF_TOOL.format(name=receiver.name, description=receiver.card.description)
    return Tool.from_schema(f"{PREFIX}{receiver.name}", description, schema, handoff, inline=True)
