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
from typing import Any

from bigloop._errors import BudgetExceeded, RunFailure, UserError
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
from bigloop.schedule.call import CallResult, call_key, call_tools, prepare_call
from bigloop.schedule.select import relevant_tools
from bigloop.trace.records import RunResult, RunStatus, Step
from bigloop.trace.store import TraceStore

OnStep = Callable[[Step], None]


@dataclass(kw_only=True)
class Budget:
    """Limits of one run. `max_steps` counts model turns; `max_repairs` the model's
    invalid replies and calls that are sent back to it for correction."""

    max_steps: int = 8
    max_tokens: int | None = None
    max_seconds: float | None = None
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


class Loop:
    """A tool-calling loop over one model and a set of tools.

    Args:
        model: any `ChatModel` (local, OpenAI-compatible, scripted).
        tools: the tools offered to the model.
        system: an optional system prompt placed before bigloop's own instructions.
        budget: step, token, time and repair limits.
        store: where steps are traced; None keeps the run in memory only.
        top_k: offer the model only the k tools most relevant to the task (BM25); None
            offers all, most relevant first.
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
    ) -> None:
        names = [t.name for t in tools]
        if duplicates := {n for n in names if names.count(n) > 1}:
            raise UserError(f"Two tools share the name(s) {sorted(duplicates)}; rename one.")
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.specs = [
            ToolSpec(name=t.name, description=t.description, parameters=t.schema) for t in tools
        ]
        self.system = system
        self.budget = budget or Budget()
        self.settings = settings or ModelSettings()
        self.store = store
        self.config = config or {}
        self.top_k = top_k

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
        messages.append(Message(role="user", content=task))
        state = _State(
            run_id=uuid.uuid4().hex[:12],
            task=task,
            messages=messages,
            specs=relevant_tools(task, self.specs)[: self.top_k],
        )
        if self.store:
            self.store.start_run(state.run_id, task, self.model.name, self._config())
        return await self._drive(state, [], on_step)

    def run_sync(self, task: str, *, on_step: OnStep | None = None) -> RunResult:
        """`run` for code that is not async."""
        return asyncio.run(self.run(task, on_step=on_step))

    async def resume(self, run_id: str, *, on_step: OnStep | None = None) -> RunResult:
        """Continue an interrupted run from its last completed step.

        Completed tool calls are never repeated: the conversation is rebuilt from the
        stored steps, and only calls the last model turn asked for but that never
        completed are run.

        Raises:
            UserError: there is no store, or no such run.
        """
        if self.store is None:
            raise UserError("Loop.resume needs a TraceStore: pass store=TraceStore().")
        summary = self.store.run(run_id)
        steps = self.store.steps(summary.run_id)
        messages = [Message(role="system", content=self.system)] if self.system else []
        messages.append(Message(role="user", content=summary.task))
        messages += [s.message for s in steps if s.message is not None]
        state = _State(
            run_id=summary.run_id,
            task=summary.task,
            messages=messages,
            steps=steps,
            specs=relevant_tools(summary.task, self.specs)[: self.top_k],
        )
        for s in steps:
            state.usage.add(
                Usage(prompt_tokens=s.prompt_tokens, completion_tokens=s.completion_tokens)
            )
            if s.kind == "model":
                state.model_turns += 1
            elif s.error is None and s.message is not None:
                state.done_calls[call_key(_call_of(s))] = s.message.content
        if summary.status == "ok":
            state.answer = summary.answer
            return self._result(state, "ok", None)
        self.store.mark_running(summary.run_id)
        return await self._drive(state, _pending_calls(steps), on_step)

    async def _drive(
        self, state: _State, pending: list[ToolCall], on_step: OnStep | None
    ) -> RunResult:
        status: RunStatus = "failed"
        error: str | None = None
        try:
            async for step in self._steps(state, pending):
                state.steps.append(step)
                if self.store:
                    self.store.add_step(step)
                if on_step:
                    on_step(step)
            status = "ok"
        except BudgetExceeded as e:
            status, error = "budget_exceeded", str(e)
        except RunFailure as e:
            error = str(e)
        except (asyncio.CancelledError, KeyboardInterrupt):
            if self.store:
                self.store.finish_run(state.run_id, "interrupted", None, "interrupted")
            raise
        return self._result(state, status, error)

    async def _steps(self, state: _State, pending: list[ToolCall]) -> AsyncIterator[Step]:
        """The loop itself: one model turn, then its tool calls, until an answer."""
        if pending:
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
            response = await self.model.chat(state.messages, specs, self.settings)
            state.model_turns += 1
            state.usage.add(response.usage)
            reply = _reply_message(response)
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

    async def _call(self, state: _State, calls: list[ToolCall]) -> AsyncIterator[Step]:
        rejected = self._prepare(state, calls)
        state.answer_only = all(call_key(c) in state.done_calls for c in calls)
        seen = state.done_calls | state.failed_calls
        fresh = [c for c in calls if call_key(c) not in seen]
        results = {id(r.call): r for r in rejected}
        runnable = [c for c in fresh if id(c) not in results]
        results.update({id(r.call): r for r in await call_tools(runnable, self.tools)})
        for call in calls:
            result = results.get(id(call)) or _repeated(call, state)
            if result.ok:
                state.done_calls[call_key(call)] = result.output
            elif result.outcome != "repeated":
                state.failed_calls[call_key(call)] = result.output
            message = Message(
                role="tool", content=result.output, tool_call_id=call.id, name=call.name
            )
            state.messages.append(message)
            yield Step(
                run_id=state.run_id,
                index=len(state.steps),
                kind="tool",
                name=call.name,
                input=call.arguments,
                output=result.output,
                error=None if result.ok else result.outcome,
                seconds=result.seconds,
                message=message,
                started_at=result.started_at,
            )
            if result.model_mistake or result.outcome == "repeated":
                state.repairs += 1
        if state.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model made {state.repairs} invalid calls or replies "
                f"(limit {self.budget.max_repairs})."
            )

    def _prepare(self, state: _State, calls: list[ToolCall]) -> list[CallResult]:
        """Adapt each call in place (`prepare_call`); the ones with problems become results
        that tell the model what to fix, and are not made."""
        specs = {s.name: s for s in self.specs}
        context = "\n".join(m.content for m in state.messages if m.role in ("user", "tool"))
        rejected = []
        for call in calls:
            if call.name not in specs:
                continue
            adapted, problems = prepare_call(call, specs[call.name], context)
            call.arguments = adapted.arguments
            if problems:
                rejected.append(
                    CallResult(
                        call=call,
                        outcome="invalid_arguments",
                        output="Error: " + "; ".join(problems),
                        seconds=0.0,
                        started_at=time.time(),
                    )
                )
        return rejected

    def _model_step(self, state: _State, response: ModelResponse, reply: Message) -> Step:
        return Step(
            run_id=state.run_id,
            index=len(state.steps),
            kind="model",
            name=self.model.name,
            input={"messages": len(state.messages) - 1, "tools": len(self.specs)},
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
        state.repairs += 1
        if state.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model's replies stayed invalid after "
                f"{self.budget.max_repairs} corrections; last: {problem}"
            )
        state.messages.append(Message(role="user", content=problem, name=LOOP_NOTE))

    def _check_budget(self, state: _State) -> None:
        b = self.budget
        if state.model_turns >= b.max_steps:
            raise BudgetExceeded(f"No answer within {b.max_steps} steps.")
        if b.max_tokens is not None and state.usage.total_tokens >= b.max_tokens:
            raise BudgetExceeded(f"Token budget of {b.max_tokens} used up.")
        if b.max_seconds is not None and time.perf_counter() - state.started >= b.max_seconds:
            raise BudgetExceeded(f"Time budget of {b.max_seconds:g} s used up.")

    def _result(self, state: _State, status: RunStatus, error: str | None) -> RunResult:
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
        )

    def _config(self) -> dict[str, Any]:
        return {"tools": list(self.tools), "max_steps": self.budget.max_steps, **self.config}


def _reply_message(response: ModelResponse) -> Message:
    if response.error:
        return Message(role="assistant", content=response.raw)
    return Message(role="assistant", content=response.text, tool_calls=response.tool_calls)


def _repeated(call: ToolCall, state: _State) -> CallResult:
    key = call_key(call)
    if key in state.done_calls:
        output = state.done_calls[key]
    else:
        output = (
            f"You already made this exact call and it failed ({state.failed_calls[key]}). "
            "Use another tool or other arguments."
        )
    return CallResult(
        call=call, outcome="repeated", output=output, seconds=0.0, started_at=time.time()
    )


def _call_of(step: Step) -> ToolCall:
    return ToolCall(id="", name=step.name, arguments=step.input)


def _pending_calls(steps: list[Step]) -> list[ToolCall]:
    """Calls the last model turn asked for that have no completed tool step."""
    last = next((s for s in reversed(steps) if s.kind == "model"), None)
    if last is None or last.message is None:
        return []
    done = {s.message.tool_call_id for s in steps[last.index + 1 :] if s.message}
    return [c for c in last.message.tool_calls if c.id not in done]
