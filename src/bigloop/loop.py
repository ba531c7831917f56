"""The Loop: a model chooses tools, bigloop validates and calls them, until an answer.

`Loop.run` is the async core; `Loop.run_sync` a thin wrapper. Each model turn and each tool
call becomes a `Step`, handed to `on_step` and committed to the trace store as it
completes, which is also the checkpoint `Loop.resume` continues from.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from bigloop._errors import BudgetExceeded, InputRequired, RunFailure, UserError
from bigloop.atoms.models.base import (
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.models.prompts import ANSWER_NOW, LOOP_NOTE
from bigloop.atoms.tool import Tool
from bigloop.registry import FIND_TOOLS, Registry, find_tools_tool
from bigloop.schedule.call import CallResult, Outcome, call_key, call_tool, prepare_call
from bigloop.schedule.clarify import AskFn, Clarify, ask_user
from bigloop.schedule.graph import GraphPlanner, GraphState, restore
from bigloop.schedule.select import choose_planner, relevant_tools
from bigloop.trace.records import RunResult, RunStatus, Step, StepKind
from bigloop.trace.store import TraceStore

OnStep = Callable[[Step], None]
PlannerName = Literal["react", "graph", "search", "auto"]


class Planner(Protocol):
    """A scheduling strategy: yields the run's steps until `state.answer` is set."""

    name: str

    def steps(self, loop: Loop, state: _State) -> AsyncIterator[Step]: ...


class ReactPlanner:
    """ReAct: one model turn chooses the next calls (several at once when independent),
    their results come back, repeat until the answer."""

    name = "react"

    def steps(self, loop: Loop, state: _State) -> AsyncIterator[Step]:
        return loop._react_steps(state)


@dataclass(kw_only=True)
class Budget:
    """Limits of one run.

    Attributes:
        max_steps: model turns.
        max_tokens: prompt + completion tokens.
        max_seconds: wall time of the run.
        max_cost: cost from the atoms' cards (`cost` per call, `cost_per_token`).
        max_step_seconds: wall time of one model turn.
        max_repairs: invalid replies and calls sent back to the model for correction
            (repeated identical calls count too: runaway loops stop here).
    """

    max_steps: int = 8
    max_tokens: int | None = None
    max_seconds: float | None = None
    max_cost: float | None = None
    max_step_seconds: float | None = None
    max_repairs: int = 3


@dataclass(kw_only=True)
class _State:
    run_id: str
    task: str
    messages: list[Message]
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.perf_counter)
    repairs: int = 0
    model_turns: int = 0
    specs: list[ToolSpec] = field(default_factory=list)
    answer: str | None = None
    done_calls: dict[str, str] = field(default_factory=dict)
    failed_calls: dict[str, str] = field(default_factory=dict)
    answer_only: bool = False
    task_index: int = 0
    pending: list[ToolCall] = field(default_factory=list)
    intents: set[str] = field(default_factory=set)
    inflight: dict[str, asyncio.Future[CallResult]] = field(default_factory=dict)
    answers: list[str] = field(default_factory=list)
    question: str | None = None
    cost: float = 0.0
    graph: GraphState = field(default_factory=GraphState)


class Loop:
    """A tool-calling loop over one model and a set of tools.

    Args:
        model: any `ChatModel` (local, OpenAI-compatible, scripted).
        tools: the tools offered to the model.
        system: an optional system prompt placed before bigloop's own instructions.
        budget: step, token, cost, time and repair limits.
        store: where steps are traced; None keeps the run in memory only.
        top_k: offer the model only the k tools most relevant to the task (BM25); None
            offers all, most relevant first.
        planner: "react" (a model turn per step), "graph" (plan a task graph, run it
            concurrently, join; `GraphPlanner`), "search" (tree search over candidate
            calls; `SearchPlanner`), "auto" (graph when the task lists several items,
            else react), or a planner object.
        registry: select the offered tools by searching this registry (hybrid BM25 +
            dense) for the task, `top_k` of them (default 5); the model also gets
            `find_tools` to search it for more. Its tools join `tools`.
        clarify: when to ask the user instead of guessing an argument; None never asks.
        ask: how to ask (returns the answer). Without it, a run that must ask stops with
            status "input_required" and the question; `resume(run_id, answer=...)`
            continues it.
    """

    def __init__(
        self,
        model: ChatModel,
        tools: Sequence[Tool] = (),
        *,
        system: str | None = None,
        budget: Budget | None = None,
        settings: ModelSettings | None = None,
        store: TraceStore | None = None,
        config: dict[str, Any] | None = None,
        top_k: int | None = None,
        planner: PlannerName | Planner = "react",
        clarify: Clarify | None = None,
        ask: AskFn | None = None,
        registry: Registry | None = None,
    ) -> None:
        if registry is not None:
            tools = [*tools, *registry.tools_for([c.name for c in registry.cards])]
            tools = [*{t.name: t for t in tools}.values(), find_tools_tool(registry)]
            top_k = top_k or 5
        names = [t.name for t in tools]
        if duplicates := {n for n in names if names.count(n) > 1}:
            raise UserError(f"Two tools share the name(s) {sorted(duplicates)}; rename one.")
        if isinstance(planner, str) and planner not in ("react", "graph", "search", "auto"):
            raise UserError(
                f"Unknown planner {planner!r}; use react, graph, search or auto "
                "(or pass a planner object)."
            )
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.specs = [
            ToolSpec(name=t.name, description=t.description, parameters=t.schema) for t in tools
        ]
        self._spec_by_name = {s.name: s for s in self.specs}
        self.system = system
        self.budget = budget or Budget()
        self.settings = settings or ModelSettings()
        self.store = store
        self.config = config or {}
        self.top_k = top_k
        self.planner = planner
        self.clarify = clarify
        self.ask = ask
        self.registry = registry

    async def run(
        self,
        task: str,
        *,
        history: list[Message] | None = None,
        on_step: OnStep | None = None,
    ) -> RunResult:
        """Run `task` to an answer or until the budget runs out.

        Args:
            history: an earlier run's `messages`, to continue that conversation.
        """
        if history:
            messages = list(history)
        else:
            messages = [Message(role="system", content=self.system)] if self.system else []
        state = _State(
            run_id=uuid.uuid4().hex[:12],
            task=task,
            messages=messages,
            specs=self._select(task),
            task_index=len(messages),
        )
        messages.append(Message(role="user", content=task))
        planner = self._planner_for(task)
        if self.store:
            self.store.start_run(state.run_id, task, self.model.name, self._config(planner))
        return await self._drive(state, planner, on_step)

    def run_sync(self, task: str, *, on_step: OnStep | None = None) -> RunResult:
        """`run` for code that is not async."""
        return asyncio.run(self.run(task, on_step=on_step))

    async def resume(
        self, run_id: str, *, answer: str | None = None, on_step: OnStep | None = None
    ) -> RunResult:
        """Continue an interrupted run from its last completed step.

        Completed tool calls are never repeated: the state is rebuilt from the stored
        steps, and only calls that never completed are run — except calls to tools that
        are not idempotent, which are reported to the model instead of being repeated.

        Args:
            answer: the user's answer, for a run that stopped with "input_required".

        Raises:
            UserError: there is no store, or no such run.
        """
        if self.store is None:
            raise UserError("Loop.resume needs a TraceStore: pass store=TraceStore().")
        summary = self.store.run(run_id)
        steps = self.store.steps(summary.run_id)
        messages = [Message(role="system", content=self.system)] if self.system else []
        state = _State(
            run_id=summary.run_id,
            task=summary.task,
            messages=messages,
            steps=steps,
            specs=self._select(summary.task),
            task_index=len(messages),
            intents=self.store.intents(summary.run_id),
        )
        messages.append(Message(role="user", content=summary.task))
        messages += [s.message for s in steps if s.message is not None]
        for s in steps:
            state.usage.add(
                Usage(prompt_tokens=s.prompt_tokens, completion_tokens=s.completion_tokens)
            )
            if s.kind == "model":
                state.model_turns += 1
            elif s.kind == "tool" and s.error is None and s.message is not None:
                state.done_calls[call_key(_call_of(s))] = s.message.content
        if summary.status == "ok":
            state.answer = summary.answer
            return self._result(state, "ok", None)
        planner = self._planner_named(str(summary.config.get("planner", "react")))
        if summary.status == "input_required" and answer is not None:
            question = summary.error or ""
            note = f"Answer to the question {question!r}: {answer}"
            step = Step(
                run_id=state.run_id,
                index=len(state.steps),
                kind="ask",
                name="user",
                input={"question": question},
                output=answer,
                message=Message(role="user", content=note, name=LOOP_NOTE),
                started_at=time.time(),
            )
            self.store.add_step(step)
            state.steps.append(step)
            state.messages.append(step.message)  # type: ignore[arg-type]
        if planner.name == "graph":
            restore(self, state.steps, state)
        else:
            state.pending = _pending_calls(state.steps)
        self.store.mark_running(summary.run_id)
        return await self._drive(state, planner, on_step)

    def as_tool(self, name: str, description: str, *, timeout_s: float = 300.0) -> Tool:
        """This loop as one tool taking a `task`: a sub-loop another loop (or a workflow)
        can call. The sub-run's trace goes to this loop's store."""

        async def run(task: str) -> str:
            result = await self.run(task)
            if result.status != "ok":
                raise RuntimeError(f"sub-loop {name!r} ended {result.status}: {result.error}")
            return result.answer or ""

        schema = {
            "type": "object",
            "properties": {"task": {"type": "string", "description": "what to do, in words"}},
            "required": ["task"],
        }
        return Tool.from_schema(name, description, schema, run, timeout_s=timeout_s)

    def _select(self, task: str) -> list[ToolSpec]:
        """The tools offered for `task`: the registry's top k (plus `find_tools`), or the
        loop's tools ranked by relevance (`top_k` of them)."""
        if self.registry is None:
            return relevant_tools(task, self.specs)[: self.top_k]
        by_name = self._spec_by_name
        hits = self.registry.search(task, k=self.top_k or 5)
        chosen = [by_name[h.card.name] for h in hits if h.card.name in by_name]
        return [*chosen, by_name[FIND_TOOLS]]

    def _planner_for(self, task: str) -> Planner:
        if not isinstance(self.planner, str):
            return self.planner
        name = choose_planner(task) if self.planner == "auto" else self.planner
        return self._planner_named(name)

    def _planner_named(self, name: str) -> Planner:
        if not isinstance(self.planner, str) and self.planner.name == name:
            return self.planner
        if name == "graph":
            return GraphPlanner()
        if name == "search":
            from bigloop.schedule.search import SearchPlanner

            return SearchPlanner()
        return ReactPlanner()

    async def _drive(self, state: _State, planner: Planner, on_step: OnStep | None) -> RunResult:
        status: RunStatus = "failed"
        error: str | None = None
        try:
            async for step in planner.steps(self, state):
                self._record(state, step, on_step)
            status = "ok"
        except InputRequired as e:
            status, error, state.question = "input_required", e.question, e.question
        except BudgetExceeded as e:
            status, error = "budget_exceeded", str(e)
        except RunFailure as e:
            error = str(e)
        except (asyncio.CancelledError, KeyboardInterrupt):
            if self.store:
                self.store.finish_run(state.run_id, "interrupted", None, "interrupted")
            raise
        return self._result(state, status, error, planner.name)

    def _record(self, state: _State, step: Step, on_step: OnStep | None) -> None:
        state.steps.append(step)
        if self.store:
            self.store.add_step(step)
        if on_step:
            on_step(step)

    async def _react_steps(self, state: _State) -> AsyncIterator[Step]:
        """ReAct: one model turn, then its tool calls, until an answer."""
        if state.pending:
            pending, state.pending = state.pending, []
            async for step in self._call(state, pending):
                yield step
        while True:
            self._check_budget(state)
            # A model that repeats a call already has its result: ask for the answer.
            specs = [] if state.answer_only else state.specs
            if state.answer_only:
                state.messages.append(
                    Message(role="user", content=ANSWER_NOW.format(task=state.task), name=LOOP_NOTE)
                )
                state.answer_only = False
            response = await self._model_turn(state, state.messages, self.settings, specs)
            reply = response.as_message()
            state.messages.append(reply)
            yield self._model_step(state, response, reply)
            if response.error:
                self._repair(state, response.error)
                continue
            if not response.tool_calls:
                if response.text.strip():
                    state.answer = response.text
                    return
                self._repair(state, "Your answer was empty. Call a tool or give the answer.")
                continue
            async for step in self._call(state, response.tool_calls):
                yield step

    async def _model_turn(
        self,
        state: _State,
        messages: list[Message],
        settings: ModelSettings,
        specs: list[ToolSpec] | None = None,
    ) -> ModelResponse:
        """One model turn, within the per-step time budget; counted in the run's usage."""
        turn = self.model.chat(messages, specs or [], settings)
        limit = self.budget.max_step_seconds
        try:
            response = await (asyncio.wait_for(turn, limit) if limit else turn)
        except TimeoutError:
            raise BudgetExceeded(f"A model turn took longer than {limit:g} s.") from None
        state.model_turns += 1
        state.usage.add(response.usage)
        card = self.model.card
        state.cost += card.cost + card.cost_per_token * response.usage.total_tokens
        return response

    async def _call(
        self, state: _State, calls: list[ToolCall], *, repeats_are_mistakes: bool = True
    ) -> AsyncIterator[Step]:
        """Make one model turn's calls concurrently; yield their steps in the calls' order.

        A call that must wait for the user's answer is recorded as an unanswered "ask"
        step; the others complete and are recorded before the run stops to ask.
        """
        outcomes: list[CallResult | BaseException]
        if len(calls) == 1:  # the common case: no task to schedule
            try:
                outcomes = [await self._call_one(state, calls[0])]
            except InputRequired as e:
                outcomes = [e]
        else:
            outcomes = await asyncio.gather(
                *(self._call_one(state, c) for c in calls), return_exceptions=True
            )
        question = None
        results = []
        for call, outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, InputRequired):
                question = question or outcome.question
                output = f"Not called: waiting for the user's answer to: {outcome.question}"
                state.messages.append(_tool_message(call, output))
                yield self._step(state, "ask", call, output, None, "unanswered")
                continue
            if isinstance(outcome, BaseException):
                raise outcome
            results.append(outcome)
            state.messages.append(_tool_message(call, outcome.output))
            kind: StepKind = "ask" if outcome.outcome == "asked" else "tool"
            error = None if outcome.ok or kind == "ask" else outcome.outcome
            yield self._step(state, kind, call, outcome.output, outcome, error)
            if outcome.model_mistake or (repeats_are_mistakes and outcome.outcome == "repeated"):
                state.repairs += 1
        if question is not None:
            state.messages.append(Message(role="assistant", content=question))
            raise InputRequired(question)
        state.answer_only = all(r.outcome == "repeated" for r in results)
        if state.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model made {state.repairs} invalid calls or replies "
                f"(limit {self.budget.max_repairs})."
            )

    def _step(
        self,
        state: _State,
        kind: StepKind,
        call: ToolCall,
        output: str,
        result: CallResult | None,
        error: str | None,
    ) -> Step:
        return Step(
            run_id=state.run_id,
            index=len(state.steps),
            kind=kind,
            name=call.name,
            input=call.arguments,
            output=output,
            error=error,
            seconds=result.seconds if result else 0.0,
            message=state.messages[-1],
            started_at=result.started_at if result else time.time(),
        )

    async def _call_one(self, state: _State, call: ToolCall) -> CallResult:
        """Check, adapt and make one call; never raises for a model or tool error.

        Identical calls are made once (a repeat gets the first result); a call the
        clarification policy flags is put to the user instead; a non-idempotent call that
        a crash interrupted is not made again.
        """
        spec = self._spec_by_name.get(call.name)
        if spec is not None:
            context = self._context(state)
            adapted, problems = prepare_call(call, spec, context)
            call.arguments = adapted.arguments
            if problems:
                return _result(call, "invalid_arguments", "Error: " + "; ".join(problems))
            if self.clarify and (question := self.clarify.question(call, spec, context)):
                answer = await self._ask(state, question)
                output = (
                    f"Not called: I asked the user {question!r}; they answered {answer!r}. "
                    "Call again with their answer."
                )
                return _result(call, "asked", output)
        key = call_key(call)
        if key in state.done_calls:
            return _result(call, "repeated", state.done_calls[key])
        if key in state.failed_calls:
            return _result(
                call,
                "repeated",
                f"You already made this exact call and it failed ({state.failed_calls[key]}). "
                "Use another tool or other arguments.",
            )
        if key in state.inflight:
            first = await asyncio.shield(state.inflight[key])
            return _result(call, "repeated", first.output)
        tool = self.tools.get(call.name)
        if tool is not None and not tool.idempotent:
            if key in state.intents:
                return _result(
                    call,
                    "tool_error",
                    f"Error: this call to {call.name} was started before the run was "
                    "interrupted, and its outcome is unknown. It was not repeated because "
                    f"{call.name} is not idempotent; check its effect before calling again.",
                )
            state.intents.add(key)
            if self.store:
                self.store.add_intent(state.run_id, key)
        future: asyncio.Future[CallResult] = asyncio.get_running_loop().create_future()
        state.inflight[key] = future
        try:
            result = await call_tool(call, self.tools)
        finally:
            del state.inflight[key]
        future.set_result(result)
        if result.ok and call.name == FIND_TOOLS:
            self._offer_found(state, result.output)
        if result.ok:
            state.done_calls[key] = result.output
        elif not result.model_mistake:
            state.failed_calls[key] = result.output
        if tool is not None:
            state.cost += tool.card.cost
        return result

    def _offer_found(self, state: _State, output: str) -> None:
        """Offer the tools `find_tools` found from the next model turn on."""
        offered = {s.name for s in state.specs}
        by_name = self._spec_by_name
        for line in output.splitlines():
            name = line.split(":", 1)[0].strip("- ").strip()
            if name in by_name and name not in offered:
                state.specs.insert(len(state.specs) - 1, by_name[name])
                offered.add(name)

    async def _ask(self, state: _State, question: str) -> str:
        if state.answers:
            return state.answers.pop(0)
        if self.ask is None:
            raise InputRequired(question)
        return await ask_user(self.ask, question)

    def _context(self, state: _State) -> str:
        texts = [m.content for m in state.messages if m.role in ("user", "tool")]
        texts += state.graph.outputs.values()
        return "\n".join(texts)

    def _model_step(
        self,
        state: _State,
        response: ModelResponse,
        reply: Message,
        *,
        role: str | None = None,
    ) -> Step:
        info: dict[str, Any] = {"messages": len(state.messages) - 1, "tools": len(state.specs)}
        if role:
            info["role"] = role
        if (decision := getattr(self.model, "last_route", None)) is not None:
            info["route"] = decision.to_dict()
        if answered_by := getattr(self.model, "last", None):
            info["answered_by"] = answered_by
        return Step(
            run_id=state.run_id,
            index=len(state.steps),
            kind="model",
            name=self.model.name,
            input=info,
            output=response.raw
            or reply.content
            or [{"name": c.name, "arguments": c.arguments} for c in response.tool_calls],
            error="malformed_reply" if response.error else None,
            seconds=response.usage.seconds,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            message=reply,
            started_at=time.time() - response.usage.seconds,
        )

    def _repair(self, state: _State, problem: str) -> None:
        self._repair_count(state, problem)
        state.messages.append(Message(role="user", content=problem, name=LOOP_NOTE))

    def _repair_count(self, state: _State, problem: str) -> None:
        state.repairs += 1
        if state.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model's replies stayed invalid after "
                f"{self.budget.max_repairs} corrections; last: {problem}"
            )

    def _check_budget(self, state: _State) -> None:
        b = self.budget
        if state.model_turns >= b.max_steps:
            raise BudgetExceeded(f"No answer within {b.max_steps} steps.")
        if b.max_tokens is not None and state.usage.total_tokens >= b.max_tokens:
            raise BudgetExceeded(f"Token budget of {b.max_tokens} used up.")
        if b.max_seconds is not None and time.perf_counter() - state.started >= b.max_seconds:
            raise BudgetExceeded(f"Time budget of {b.max_seconds:g} s used up.")
        if b.max_cost is not None and state.cost >= b.max_cost:
            raise BudgetExceeded(f"Cost budget of {b.max_cost:g} used up ({state.cost:g}).")

    def _result(
        self, state: _State, status: RunStatus, error: str | None, planner: str = "react"
    ) -> RunResult:
        if self.store:
            self.store.finish_run(state.run_id, status, state.answer, error)
        state.usage.seconds = sum(s.seconds for s in state.steps if s.kind == "model")
        return RunResult(
            run_id=state.run_id,
            task=state.task,
            status=status,
            answer=state.answer,
            error=error,
            steps=state.steps,
            usage=state.usage,
            messages=state.messages,
            question=state.question,
            planner=planner,
        )

    def _config(self, planner: Planner) -> dict[str, Any]:
        return {
            "tools": list(self.tools),
            "max_steps": self.budget.max_steps,
            **self.config,
            "planner": planner.name,  # the one chosen ("auto" resolved), for resume
        }


def _result(call: ToolCall, outcome: Outcome, output: str) -> CallResult:
    return CallResult(
        call=call, outcome=outcome, output=output, seconds=0.0, started_at=time.time()
    )


def _tool_message(call: ToolCall, output: str) -> Message:
    return Message(role="tool", content=output, tool_call_id=call.id, name=call.name)


def _call_of(step: Step) -> ToolCall:
    return ToolCall(id="", name=step.name, arguments=step.input)


def _pending_calls(steps: list[Step]) -> list[ToolCall]:
    """Calls the last model turn asked for that have no completed tool step."""
    last = next((s for s in reversed(steps) if s.kind == "model"), None)
    if last is None or last.message is None:
        return []
    done = {s.message.tool_call_id for s in steps[last.index + 1 :] if s.message}
    return [c for c in last.message.tool_calls if c.id not in done]
