"""Agents as atoms: instructions + a model + tools + memory, callable like any atom.

An `Agent` runs a `Loop` per task. Its memory has two parts: the conversation, continued
from one `run` to the next (`Loop.run(history=...)`), and an optional long-term `Memory`
(notes in a folder, searched with the registry's hybrid search), from which the notes
most relevant to each task are recalled into its system prompt. Its `card` describes it
to a coordinator or a registry (kind "agent", skills from its tools), and `as_tool()`
makes it a tool another loop or agent can call.

    alice = Agent("alice", model, [convert_units], instructions="You convert units.",
                  memory=Memory("notes/alice"))
    result = await alice.run("How many km is 3 miles?")
    Loop(model, [alice.as_tool()]).run_sync("Ask alice how many km 3 miles are.")
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import ChatModel, Message, ModelSettings, ToolSpec
from bigloop.atoms.tool import EFFECTS, Effect, Tool
from bigloop.config import LoopConfig
from bigloop.loop import Loop
from bigloop.parts import PlannerName
from bigloop.policies import default_selectors
from bigloop.policies.clarify import Clarify
from bigloop.runtime.context import Budget, Planner, RunContext
from bigloop.team.memory import Memory
from bigloop.team.prompts import RECALLED
from bigloop.trace.records import RunResult, Step
from bigloop.trace.store import TraceStore

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "what to do, in words"}},
    "required": ["task"],
}


class Agent:
    """A named agent: instructions, a model, tools and memory.

    Args:
        name: a short identifier (letters, digits, "_" or "-"); it names the agent's tool
            and its messages in team traces.
        model: the agent's model.
        tools: the tools it may call.
        instructions: its system prompt (role, style, rules).
        description: what it is for, as others see it on its card (default: the first
            line of `instructions`).
        memory: a long-term store; the `recall` notes most relevant to each task are put
            in its system prompt.
        recall: how many notes to recall per task (0: none).
        planner, budget, settings, top_k, clarify: for its `Loop`.
        store: where its runs are traced (a team passes its own store otherwise).
        max_history: messages of the conversation kept for the next run (older turns
            are dropped, whole exchanges at a time).
    """

    def __init__(
        self,
        name: str,
        model: ChatModel,
        tools: Sequence[Tool] = (),
        *,
        instructions: str = "",
        description: str | None = None,
        memory: Memory | None = None,
        recall: int = 3,
        planner: PlannerName | Planner = "react",
        budget: Budget | None = None,
        settings: ModelSettings | None = None,
        top_k: int | None = None,
        clarify: Clarify | None = None,
        store: TraceStore | None = None,
        max_history: int = 40,
    ) -> None:
        if not _NAME.match(name):
            raise UserError(
                f"Agent name {name!r}: use a short identifier (a letter, then letters, digits, "
                "'_' or '-'), e.g. 'billing'."
            )
        self.name = name
        self.model = model
        self.tools = list(tools)
        self.instructions = instructions
        self.description = description or (instructions.strip().splitlines() or [""])[0]
        self.memory = memory
        self.recall_k = recall
        self.planner = planner
        self.budget = budget
        self.settings = settings
        self.top_k = top_k
        self.clarify = clarify
        self.store = store
        self.max_history = max_history
        self.conversation: list[Message] = []
        """The conversation so far (no system message): the next `run` continues it."""
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, tools={[t.name for t in self.tools]})"

    # ------------------------------------------------------------------ the atom

    @property
    def skills(self) -> list[str]:
        """What it can do: one line per tool, "name: description"."""
        return [f"{t.name}: {t.description}" for t in self.tools]

    @property
    def card(self) -> AtomCard:
        """Its card: kind "agent", its description and skills (what a coordinator or a
        registry search reads), a task as input, its model's cost and privacy."""
        skills = "; ".join(f"{t.name} ({t.description.rstrip('.')})" for t in self.tools)
        text = f"{self.description} Skills: {skills}." if skills else self.description
        model = self.model.card
        return AtomCard(
            name=self.name,
            kind="agent",
            description=text.strip(),
            input_schema=TASK_SCHEMA,
            output_schema={"type": "string"},
            cost=model.cost,
            cost_per_token=model.cost_per_token,
            privacy=model.privacy,
            reliability=model.reliability,
        )

    @property
    def effect(self) -> Effect:
        """The strongest effect of its tools ("irreversible" > "write" > "read")."""
        return max((t.effect for t in self.tools), key=EFFECTS.index, default="read")

    def as_tool(self, *, timeout_s: float = 300.0) -> Tool:
        """The agent as a tool taking a `task`: each call continues its conversation.

        The tool's effect is the strongest of its tools' and it is idempotent only when
        they all are, so approval and resume treat it like the tools it may call."""

        return task_tool(
            self.name,
            self.card.description,
            self.run,
            owner=f"agent {self.name!r}",
            timeout_s=timeout_s,
            effect=self.effect,
            idempotent=all(t.idempotent for t in self.tools),
        )

    # ------------------------------------------------------------------ memory

    def remember(self, text: str) -> None:
        """Keep a note in its long-term memory.

        Raises:
            UserError: the agent has no memory.
        """
        self._memory().remember(text)

    def recall(self, query: str, k: int = 3) -> list[str]:
        """The `k` notes of its long-term memory most relevant to `query`."""
        return self._memory().recall(query, k)

    def _memory(self) -> Memory:
        if self.memory is None:
            raise UserError(f"Agent {self.name!r} has no memory: pass memory=Memory(folder).")
        return self.memory

    def system_prompt(self, task: str) -> str:
        """Its instructions, with the notes recalled for `task`."""
        notes = self.memory.recall(task, self.recall_k) if self.memory and self.recall_k else []
        recalled = RECALLED.format(notes="\n".join(f"- {n}" for n in notes)) if notes else ""
        return "\n\n".join(p for p in (self.instructions.strip(), recalled) if p)

    # ------------------------------------------------------------------ running

    async def run(
        self,
        task: str,
        *,
        history: list[Message] | None = None,
        tools: Sequence[Tool] = (),
        until: Collection[str] = (),
        store: TraceStore | None = None,
    ) -> RunResult:
        """Run `task`, continuing its conversation.

        Args:
            history: continue this conversation instead of its own (which is then left
                as it was); its system messages are replaced by the agent's own.
            tools: more tools for this run only (a team's hand-off tools).
            until: tool names whose successful call ends the run at once.
            store: trace the run here when the agent has no store of its own.
        """
        if history is not None:
            return await self._run(task, history, tools, until, store)
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:  # calls that continue the conversation take turns
            result = await self._run(task, self.conversation, tools, until, store)
            if result.status == "ok":
                self.conversation = _trimmed(
                    [m for m in result.messages if m.role != "system"], self.max_history
                )
        return result

    def run_sync(self, task: str) -> RunResult:
        """`run` for code that is not async."""
        return asyncio.run(self.run(task))

    async def _run(
        self,
        task: str,
        history: list[Message],
        tools: Sequence[Tool],
        until: Collection[str],
        store: TraceStore | None,
    ) -> RunResult:
        system = self.system_prompt(task)
        messages = with_system(system, history)
        selectors = default_selectors(self.top_k)
        if tools:
            selectors.append(_AlwaysOffer(tools))
        loop = Loop(
            self.model,
            [*self.tools, *tools],
            # an agent asks only with its own clarifying check (a worker's question would
            # reach no user)
            config=LoopConfig(clarify="off"),
            system=system or None,
            budget=self.budget,
            settings=self.settings,
            store=self.store or store,
            top_k=self.top_k,
            planner=self.planner,
            clarify=self.clarify,
            selectors=selectors,
        )
        if until:
            loop.planner = _Until(loop.planner, frozenset(until))
        return await loop.run(task, history=messages or None)


def task_tool(
    name: str,
    description: str,
    run: Callable[[str], Awaitable[RunResult]],
    *,
    owner: str,
    **options: Any,
) -> Tool:
    """A tool taking a `task`, which it `run`s; its result is the run's answer.

    A run that does not end "ok" is the tool's failure, naming `owner` ("agent 'alice'").
    `options` are the tool's (`timeout_s`, `effect`, `idempotent`)."""

    async def call(task: str) -> str:
        result = await run(task)
        if result.status != "ok":
            raise RuntimeError(f"{owner} ended {result.status}: {result.error}")
        return result.answer or ""

    return Tool.from_schema(name, description, TASK_SCHEMA, call, **options)


def with_system(system: str, messages: Sequence[Message]) -> list[Message]:
    """`messages` without their system messages, after `system` as the one system
    message (none when it is empty)."""
    earlier = [m for m in messages if m.role != "system"]
    return ([Message(role="system", content=system)] if system else []) + earlier


class _AlwaysOffer:
    """A tool selector that offers `tools` whatever the selectors before it chose (a
    team's hand-off tools must not be gated out by relevance to the task)."""

    name = "always_offer"

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.specs = [
            ToolSpec(name=t.name, description=t.description, parameters=t.schema, effect=t.effect)
            for t in tools
        ]

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]:
        offered = {s.name for s in specs}
        return [*specs, *(s for s in self.specs if s.name not in offered)]


class _Until:
    """A planner that ends the run after a successful call to one of `names` (a hand-off):
    the model does not get another turn."""

    def __init__(self, inner: Planner, names: frozenset[str]) -> None:
        self.inner = inner
        self.names = names
        self.name = inner.name

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        steps = self.inner.steps(ctx)
        try:
            async for step in steps:
                yield step
                if step.kind == "tool" and step.name in self.names and step.error is None:
                    ctx.answer = str(step.output)
                    return
        finally:  # stop the inner planner (and any call it still has running)
            if (close := getattr(steps, "aclose", None)) is not None:
                await close()


def _trimmed(messages: list[Message], limit: int) -> list[Message]:
    """The last `limit` messages or fewer, starting at a user turn (never inside an
    exchange of calls and results)."""
    if len(messages) <= limit:
        return messages
    start = len(messages) - limit
    while start < len(messages) and messages[start].role != "user":
        start += 1
    return messages[start:]
