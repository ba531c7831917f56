"""The run context: everything a planner may use during one run, and nothing else.

A planner (`Planner.steps(ctx)`) sees the run through three parts and the model:

- `ctx.transcript` (`runtime.transcript.Transcript`): the task, the conversation, the
  completed steps, and the evidence grounding checks read.
- `ctx.meter` (`runtime.meter.Meter`): the run's usage, cost, model turns and corrections
  against its `Budget` — `check()`, `count_repair`, `count_mistakes`.
- `ctx.runner` (`runtime.runner.CallRunner`): the offered tools (`specs`) and every
  tool's spec (`catalog`); `call` / `calls` make tool calls — checked by the loop's
  policies, identical calls made once, non-idempotent calls never repeated after a
  crash, each result a `Step` as soon as it completes; `ask` puts a question to the user.
- on the context itself: `model_turn` / `model_stream` / `continue_turn` (one model turn,
  within the step time limit, counted by the meter), `model_step` (its record),
  `repair` (count a correction and tell the model), `finish` (the answer).

The `Loop` builds the context, drives the planner's steps and records each one (trace
store, `on_step`); a planner never sees the `Loop`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol

from bigloop._errors import BudgetExceeded, UserError
from bigloop.atoms.models.base import (
    CallContinuation,
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.tool import Tool
from bigloop.policies import AnswerCheck, CallCheck
from bigloop.runtime.calls import clip
from bigloop.runtime.meter import Budget, Meter
from bigloop.runtime.runner import AskFn, CallRunner, ResultHook
from bigloop.runtime.transcript import Transcript, replies_in_call_order
from bigloop.trace.records import Step, valid_text
from bigloop.trace.store import TraceStore

__all__ = ["AskFn", "Budget", "Planner", "ResultHook", "RunContext"]


class Planner(Protocol):
    """A scheduling strategy: yields the run's steps until `ctx.finish(answer)`.

    On resume `ctx.transcript.steps` already holds the completed steps; a planner that
    keeps state of its own rebuilds it from them (by convention in a `restore(steps)`
    method) before going on.
    """

    name: str

    def steps(self, ctx: RunContext) -> AsyncIterator[Step]: ...


class RunContext:
    """One run's parts (see the module) and the model.

    Attributes:
        transcript, meter, runner: the run's record, accounting and calls.
        model, settings: the model and its default settings.
        answer_checks: revise the answer `finish` is given.
        answer, question: how the run ended.
        planner: the name of the planner that ran (set by delegating planners).
    """

    def __init__(
        self,
        *,
        run_id: str,
        task: str,
        model: ChatModel,
        settings: ModelSettings,
        system: str | None,
        tools: Mapping[str, Tool],
        catalog: Mapping[str, ToolSpec],
        specs: list[ToolSpec],
        messages: list[Message],
        task_index: int,
        budget: Budget,
        checks: Sequence[CallCheck] = (),
        answer_checks: Sequence[AnswerCheck] = (),
        ask_user: AskFn | None = None,
        store: TraceStore | None = None,
        on_result: Sequence[ResultHook] = (),
        planner: str = "react",
        grounds: tuple[str, ...] = (),
    ) -> None:
        self.model = model
        self.settings = settings
        self.answer_checks = answer_checks
        self.planner = planner
        self.answer: str | None = None
        self.question: str | None = None
        self.transcript = Transcript(
            run_id=run_id,
            task=task,
            system=system,
            messages=messages,
            task_index=task_index,
            grounds=grounds,
        )
        self.meter = Meter(budget=budget)
        self.runner = CallRunner(
            transcript=self.transcript,
            meter=self.meter,
            tools=tools,
            catalog=catalog,
            specs=specs,
            checks=checks,
            ask_user=ask_user,
            store=store,
            on_result=on_result,
        )

    def replay(self, steps: list[Step]) -> None:
        """Rebuild the conversation and the accounting from a run's stored steps (resume):
        their messages (tool results in the order of their calls, as the run showed them
        to the model), usage, model turns and completed calls."""
        self.transcript.steps = list(steps)
        for s in steps:
            if s.message is not None:
                if s.message.role != "tool":
                    replies_in_call_order(self.transcript.messages)
                self.transcript.messages.append(s.message)
            self.meter.usage.add(
                Usage(prompt_tokens=s.prompt_tokens, completion_tokens=s.completion_tokens)
            )
            if s.kind == "model":
                self.meter.model_turns += 1
            elif s.kind == "tool" and s.error is None and isinstance(s.input, dict):
                # a program's calls (the code planner) have no message: their output is
                # what the program got
                said = s.message.content if s.message is not None else str(s.output)
                self.runner.executor.remember(ToolCall(id="", name=s.name, arguments=s.input), said)
        replies_in_call_order(self.transcript.messages)

    def finish(self, answer: str) -> None:
        """End the run with `answer`, as the answer checks revise it (the planner then
        returns)."""
        for check in self.answer_checks:
            answer = check.revise(self.transcript.task, answer)
        self.answer = valid_text(answer)

    def repair(self, problem: str) -> None:
        """Count a correction and tell the model `problem` in the conversation."""
        problem = clip(problem)
        self.meter.count_repair(problem)
        self.transcript.note(problem)

    # ------------------------------------------------------------------ model turns

    async def model_turn(
        self,
        messages: list[Message],
        settings: ModelSettings | None = None,
        specs: list[ToolSpec] | None = None,
    ) -> ModelResponse:
        """One model turn within the per-step time limit, counted in usage and cost.

        Calls beyond `Budget.max_calls_per_turn` are dropped from the reply (`calls` tells
        the model they were not made).

        Raises:
            UserError: the model returned something other than a `ModelResponse`.
        """
        turn = self.model.chat(messages, specs or [], settings or self.settings)
        limit = self.meter.budget.max_step_seconds
        try:
            response = await (asyncio.wait_for(turn, limit) if limit else turn)
        except TimeoutError:
            raise BudgetExceeded(f"A model turn took longer than {limit:g} s.") from None
        if not isinstance(response, ModelResponse):
            raise UserError(
                f"Model {self.model.name!r} returned {type(response).__name__} from chat(), "
                "not a ModelResponse."
            )
        self.meter.count_turn(response.usage, self.model.card)
        response.text, response.raw = valid_text(response.text), valid_text(response.raw)
        cap = self.meter.budget.max_calls_per_turn
        self.runner.not_made = max(0, len(response.tool_calls) - cap)
        del response.tool_calls[cap:]
        return response

    @property
    def can_continue(self) -> bool:
        """Whether the model can continue its reply with more calls (`continue_turn`)."""
        return isinstance(self.model, CallContinuation)

    async def continue_turn(
        self,
        messages: list[Message],
        calls: list[ToolCall],
        stop: Callable[[str], bool] | None = None,
    ) -> ModelResponse:
        """One more call after `calls` in the same reply, from a model that can continue
        its reply (`CallContinuation`; `MoreCalls` decides whether to keep it). Counted in
        usage and cost like a turn, within the per-step time limit."""
        if not isinstance(self.model, CallContinuation):
            return ModelResponse()
        more = self.model.next_call(messages, self.runner.specs, calls, self.settings, stop)
        limit = self.meter.budget.max_step_seconds
        try:
            response = await (asyncio.wait_for(more, limit) if limit else more)
        except TimeoutError:
            raise BudgetExceeded(f"A model turn took longer than {limit:g} s.") from None
        self.meter.count_turn(
            response.usage, self.model.card, turn=False
        )  # part of the turn it continues
        return response

    @property
    def can_stream(self) -> bool:
        """Whether the model streams structured output (`model_stream`)."""
        return callable(getattr(self.model, "stream", None))

    async def model_stream(
        self, messages: list[Message], settings: ModelSettings
    ) -> AsyncIterator[str | Usage]:
        """One structured-output model turn as it is generated: text pieces, then its
        `Usage`. Counted like `model_turn` (also when closed early) and held to the same
        per-step time limit."""
        stream: AsyncIterator[str | Usage] = self.model.stream(messages, settings)  # type: ignore[attr-defined]
        limit = self.meter.budget.max_step_seconds
        deadline = None if limit is None else time.perf_counter() + limit
        usage = Usage()
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.perf_counter())
                try:
                    piece = await asyncio.wait_for(anext(stream), left)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise BudgetExceeded(f"A model turn took longer than {limit:g} s.") from None
                if isinstance(piece, Usage):
                    usage = piece
                yield piece
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
            self.meter.count_turn(usage, self.model.card)

    def model_step(
        self, response: ModelResponse, reply: Message, *, role: str | None = None
    ) -> Step:
        """The `Step` recording a model turn (`reply` is what it added to the conversation)."""
        info: dict[str, Any] = {
            "messages": len(self.transcript.messages) - 1,
            "tools": len(self.runner.specs),
        }
        if role:
            info["role"] = role
        if self.runner.not_made:
            info["calls_not_made"] = self.runner.not_made
        if response.route is not None:
            info["route"] = response.route
        if response.answered_by:
            info["answered_by"] = response.answered_by
        if latency := response.usage.latency():
            info["latency"] = latency
        return Step(
            run_id=self.transcript.run_id,
            index=len(self.transcript.steps),
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
