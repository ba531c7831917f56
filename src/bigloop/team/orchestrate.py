"""Orchestrator–workers: a coordinator splits the task, workers do the parts, the
coordinator merges their results.

1. **Delegate.** The coordinator model writes subtasks under a JSON schema (a grammar on
   the embedded model): each a self-contained request, optionally the numbers of earlier
   subtasks whose results it needs, and — with `choose="model"` — the worker, one of the
   workers' names (an enum, so the model cannot invent one). With `choose="registry"`
   each subtask goes to the top hit of a registry search over the workers' cards. With
   `choose="call"` the coordinator delegates in the model's own tool-call format: each
   worker is offered as a tool (a `Tool` with its schema, an `Agent` as one taking a
   "task"), described by its card, and each call in its reply is a subtask (no "needs":
   they run concurrently); a tool worker gets the call's arguments as they are.
   An unreadable plan is sent back once; a second one falls back to the whole task as
   one subtask.
2. **Work.** Subtasks whose needs are done run concurrently. A worker is an `Agent`
   (runs the subtask as its task, in a fresh conversation) or a `Tool` (the subtask text
   is fitted to its input by a semantic `Adapter`, an "adapt" step). Each delegation is a
   "message" step "coordinator→worker"; a worker's failure is its reply ("Error: ...").
   **Values come from the user's words**, not the coordinator's paraphrase: a plan of one
   subtask hands the worker the task itself (a rewrite only adds what the user never
   said — "get its area, perimeter and angles" turns on flags nobody asked for), and a
   subtask of a larger plan carries the user's request beside it (`share_request`).
3. **Merge.** With one subtask its result is the answer; with several, the coordinator
   answers from the results (a "model" step, role "merge"); with none (no worker fits),
   it answers the task itself.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from bigloop._errors import ModelRetry, ToolFailure, UserError
from bigloop.atoms.models.base import ChatModel, Message, ModelSettings, ToolSpec
from bigloop.atoms.tool import Tool
from bigloop.policies.adapt import Adapter
from bigloop.registry import Registry, SearchMode
from bigloop.team.agent import Agent
from bigloop.team.pattern import TeamPattern, ask_agent
from bigloop.team.prompts import (
    CHOOSE_WORKER,
    DELEGATE_CALLS,
    DELEGATE_SYSTEM,
    DEPENDENCIES,
    MERGE,
    NO_RESULTS,
    WITH_REQUEST,
)
from bigloop.team.record import Reply, TeamRun
from bigloop.trace.store import TraceStore

Worker = Agent | Tool
Choose = Literal["model", "registry", "call"]
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "The request, complete."}},
    "required": ["task"],
}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


@dataclass(kw_only=True)
class Subtask:
    id: int
    """Its number in the plan, from 1."""
    task: str
    worker: str
    needs: list[int] = field(default_factory=list)
    arguments: dict[str, Any] | None = None
    """A tool worker's arguments, as the coordinator called it (`choose="call"`)."""


class Orchestrator(TeamPattern):
    """A coordinator model and its workers (see the module docstring).

    Args:
        coordinator: the model that delegates and merges.
        workers: agents and tools, by their names.
        name: the coordinator's name in the trace.
        choose: "model" (the coordinator names each subtask's worker, from their cards),
            "registry" (a registry search over the cards, `search` mode) or "call" (the
            coordinator calls the workers as tools, in the model's tool-call format).
        adapter: fits subtasks to tool workers' inputs (default: one on the coordinator).
        max_subtasks: the most subtasks a plan may have.
        merge: False: the answer is the results, one per line, without a merge turn (when
            what matters is what the workers did, e.g. a benchmark that scores calls).
        share_request: a subtask of a plan of several carries the user's request beside
            it, so the worker takes values from the user's own words; a plan of one
            subtask always hands over the task itself.
        settings: the coordinator's settings.
        store: where the run, and its workers' runs, are traced.
    """

    pattern = "orchestrator"

    def __init__(
        self,
        coordinator: ChatModel,
        workers: Sequence[Worker],
        *,
        name: str = "coordinator",
        choose: Choose = "model",
        search: SearchMode = "hybrid",
        adapter: Adapter | None = None,
        max_subtasks: int = 6,
        merge: bool = True,
        share_request: bool = True,
        settings: ModelSettings | None = None,
        store: TraceStore | None = None,
    ) -> None:
        if not workers:
            raise UserError("An Orchestrator needs at least one worker (an Agent or a Tool).")
        names = [w.name for w in workers]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise UserError(f"Workers share the name(s) {dupes}; rename one.")
        if choose not in ("model", "registry", "call"):
            raise UserError(f"choose={choose!r}: use 'model', 'registry' or 'call'.")
        self.coordinator = coordinator
        self.workers = {w.name: w for w in workers}
        self.name = name
        self.choose = choose
        self.search = search
        self.adapter = adapter or Adapter(coordinator)
        self.max_subtasks = max_subtasks
        self.merge = merge
        self.share_request = share_request
        self.settings = settings or ModelSettings()
        self.store = store
        self._registry: Registry | None = None

    @property
    def model_name(self) -> str:
        return self.coordinator.name

    @property
    def config(self) -> dict[str, Any]:
        return {
            "workers": list(self.workers),
            "choose": self.choose,
            "share_request": self.share_request,
        }

    def plan_schema(self) -> dict[str, Any]:
        """The JSON schema the coordinator's plan must match."""
        properties: dict[str, Any] = {"task": {"type": "string"}}
        if self.choose == "model":
            properties["worker"] = {"enum": list(self.workers)}
        properties["needs"] = {"type": "array", "items": {"type": "integer", "minimum": 1}}
        item = {"type": "object", "properties": properties, "required": list(properties)[:-1]}
        return {
            "type": "object",
            "properties": {
                "subtasks": {"type": "array", "items": item, "maxItems": self.max_subtasks}
            },
            "required": ["subtasks"],
        }

    async def _work(self, run: TeamRun) -> str:
        plan = await self._plan(run)
        results = await self._execute(run, plan)
        if len(plan) == 1:
            return results[plan[0].id]
        if not self.merge:
            return "\n".join(results[s.id] for s in plan)
        lines = "\n".join(f"[{s.id}] {s.task} -> {results[s.id]}" for s in plan) or NO_RESULTS
        messages = [Message(role="user", content=MERGE.format(task=run.task, results=lines))]
        settings = replace(self.settings, response_schema=ANSWER_SCHEMA)
        text = await run.model_turn(self.coordinator, messages, settings, role="merge")
        return _answer(text)

    # ------------------------------------------------------------------ delegate

    def worker_specs(self) -> list[ToolSpec]:
        """The workers as tools (`choose="call"`): a tool with its own schema, an agent
        as one that takes the "task" to do; each described by its card."""
        return [
            ToolSpec(
                name=w.name,
                description=w.card.description,
                parameters=w.schema if isinstance(w, Tool) else TASK_SCHEMA,
            )
            for w in self.workers.values()
        ]

    async def _plan(self, run: TeamRun) -> list[Subtask]:
        if self.choose == "call":
            return await self._plan_by_calls(run)
        workers = "\n".join(f"- {w.name}: {w.card.description}" for w in self.workers.values())
        system = DELEGATE_SYSTEM.format(
            choose=CHOOSE_WORKER if self.choose == "model" else "", workers=workers
        )
        messages = [Message(role="system", content=system), Message(role="user", content=run.task)]
        settings = replace(self.settings, response_schema=self.plan_schema())
        for attempt in range(2):
            text = await run.model_turn(
                self.coordinator, messages, settings, role="delegate", turn=attempt
            )
            try:
                return self._parse(text)
            except ValueError as e:
                messages = [
                    *messages,
                    Message(role="assistant", content=text),
                    Message(role="user", content=f"{e} Write the subtasks again."),
                ]
        return [Subtask(id=1, task=run.task, worker=self._best(run.task))]

    async def _plan_by_calls(self, run: TeamRun) -> list[Subtask]:
        """The subtasks the coordinator's calls name (none when it answers instead)."""
        messages = [
            Message(role="system", content=DELEGATE_CALLS),
            Message(role="user", content=run.task),
        ]
        text = await run.model_turn(
            self.coordinator, messages, self.settings, role="delegate", tools=self.worker_specs()
        )
        try:
            calls = json.loads(text)["tool_calls"]
        except (ValueError, KeyError, TypeError):
            return []
        plan = []
        for i, call in enumerate(calls[: self.max_subtasks], start=1):
            worker = self.workers.get(call["name"])
            if worker is None:
                continue
            arguments = call.get("arguments") or {}
            if isinstance(worker, Tool):
                task = f"{worker.name}({json.dumps(arguments, ensure_ascii=False)})"
                plan.append(Subtask(id=i, task=task, worker=worker.name, arguments=arguments))
            else:
                task = str(arguments.get("task") or run.task)
                plan.append(Subtask(id=i, task=task, worker=worker.name))
        return plan

    def _parse(self, text: str) -> list[Subtask]:
        """The subtasks of a plan.

        Raises:
            ValueError: the plan is not JSON of the schema, names no worker, or a subtask
                needs one that is not before it.
        """
        try:
            data = json.loads(text)
            raw = data["subtasks"]
        except (ValueError, KeyError, TypeError):
            raise ValueError("The reply is not a JSON object with a list of subtasks.") from None
        if not isinstance(raw, list):
            raise ValueError('"subtasks" must be a list.')
        plan = []
        for i, item in enumerate(raw[: self.max_subtasks], start=1):
            if not isinstance(item, dict) or not str(item.get("task", "")).strip():
                raise ValueError(f"Subtask {i} has no task.")
            task = str(item["task"]).strip()
            worker = item.get("worker") if self.choose == "model" else self._best(task)
            if worker not in self.workers:
                raise ValueError(f"Subtask {i}: {worker!r} is not a worker.")
            needs = item.get("needs") or []
            if not isinstance(needs, list) or any(
                not isinstance(n, int) or not 1 <= n < i for n in needs
            ):
                raise ValueError(f"Subtask {i} may only need earlier subtasks (1 to {i - 1}).")
            plan.append(Subtask(id=i, task=task, worker=str(worker), needs=sorted(set(needs))))
        return plan

    def _best(self, task: str) -> str:
        """The worker whose card best matches `task` (registry search)."""
        if self._registry is None:
            registry = Registry()
            registry.add_cards(w.card for w in self.workers.values())
            registry.build(dense=self.search != "bm25")
            self._registry = registry
        hits = self._registry.search(task, k=1, mode=self.search)
        return hits[0].card.name if hits else next(iter(self.workers))

    # ------------------------------------------------------------------ work

    async def _execute(self, run: TeamRun, plan: list[Subtask]) -> dict[int, str]:
        """Every subtask's result, by id; independent subtasks run concurrently."""
        if len(plan) == 1 and plan[0].arguments is None:  # the user's words, not a paraphrase
            plan = [replace(plan[0], task=run.task)]
        results: dict[int, str] = {}
        pending = list(plan)
        while pending:
            ready = [s for s in pending if set(s.needs) <= results.keys()]
            outputs = await asyncio.gather(
                *(self._delegate(run, s, results, alone=len(plan) == 1) for s in ready)
            )
            results.update(zip((s.id for s in ready), outputs, strict=True))
            pending = [s for s in pending if s.id not in results]
        return results

    async def _delegate(
        self, run: TeamRun, sub: Subtask, results: dict[int, str], *, alone: bool
    ) -> str:
        text = sub.task
        if sub.needs:
            earlier = "\n".join(f"[{n}] {results[n]}" for n in sub.needs)
            text = DEPENDENCIES.format(task=sub.task, results=earlier)
        if self.share_request and not alone:
            text = WITH_REQUEST.format(request=run.task, part=text)
        worker = self.workers[sub.worker]

        async def send() -> Reply:
            if isinstance(worker, Agent):
                return await ask_agent(worker, text, run)
            return await self._call_tool(worker, text, run, sub.arguments)

        step = await run.exchange(self.name, worker.name, text, send, subtask=sub.id)
        return str(step.output or "")

    async def _call_tool(
        self, tool: Tool, text: str, run: TeamRun, arguments: dict[str, Any] | None
    ) -> Reply:
        """`tool` called with `arguments` (the coordinator's call), else with those the
        adapter fits from the subtask's `text`."""
        try:
            if arguments is None:
                arguments = await self.adapter.fit(
                    text,
                    tool.schema,
                    target=tool.name,
                    description=tool.description,
                    source=self.name,
                    run_id=run.run_id,
                    on_step=run.on_step,
                )
            return Reply(text=await tool.call(arguments))
        except ModelRetry as e:
            return Reply(text=f"Error: {e}", error="invalid_arguments")
        except ToolFailure as e:
            return Reply(text=f"Error: {e}", error="tool_error")


def _answer(text: str) -> str:
    """The "answer" of a structured reply (the text itself if it is not one)."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict) and isinstance(data.get("answer"), str):
        return str(data["answer"])
    return text
