"""The run context: everything a planner may use during one run, and nothing else.

A planner (`Planner.steps(ctx)`) sees the task, the conversation, the offered tools and
the completed steps, and acts only through these methods:

- `model_turn` / `model_stream`: one model turn, within the step time limit, counted in
  the run's usage and cost; `model_step` records it.
- `call` / `calls`: make tool calls — checked by the loop's policies (adapt, reject, ask),
  identical calls made once, non-idempotent calls never repeated after a crash, results
  turned into `Step`s, each as soon as its call completes. At most
  `Budget.max_calls_per_turn` calls of one model turn are made; error text the model is
  shown is cut at `ERROR_CHARS`.
- `ask`: put a question to the user.
- `check_budget`, `count_repair`, `repair`: the run's limits.
- `finish`: the answer.

The `Loop` builds the context, drives the planner's steps and records each one (trace
store, `on_step`); a planner never sees the `Loop`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol

from bigloop._errors import BudgetExceeded, InputRequired, UserError
from bigloop.atoms.models.base import (
    CallContinuation,
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    Origin,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.tool import Tool
from bigloop.policies import AnswerCheck, CallCheck, Evidence, check_call
from bigloop.policies.approval import denied, says_yes
from bigloop.policies.wording import ERROR_PREFIX, render
from bigloop.runtime.call import CallResult, Outcome
from bigloop.runtime.calls import Calls, clip, made
from bigloop.trace.records import Question, Refusal, Step, StepError, StepKind, valid_text
from bigloop.trace.store import TraceStore

_MAX_NESTING = 64
"""Arguments nested deeper are refused before any check or tool sees them."""
_MAX_INT_BITS = 14_000
"""A larger integer argument (about 4,200 digits) cannot even be printed; it is refused."""

AskFn = Callable[[str], "str | Awaitable[str]"]
"""Asks the user a question and returns the answer (sync or async)."""

ResultHook = Callable[["RunContext", CallResult], None]
"""Called after each completed tool call (e.g. to offer the tools `find_tools` found)."""


class Planner(Protocol):
    """A scheduling strategy: yields the run's steps until `ctx.finish(answer)`.

    On resume `ctx.steps` already holds the completed steps; a planner that keeps state
    of its own rebuilds it from them (by convention in a `restore(steps)` method) before
    going on.
    """

    name: str

    def steps(self, ctx: RunContext) -> AsyncIterator[Step]: ...


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
        max_calls_per_turn: calls made from one model turn; the model is told that the
            rest were not made.
    """

    max_steps: int = 8
    max_tokens: int | None = None
    max_seconds: float | None = None
    max_cost: float | None = None
    max_step_seconds: float | None = None
    max_repairs: int = 3
    max_calls_per_turn: int = 16

    def __post_init__(self) -> None:
        if self.max_calls_per_turn < 1:
            raise UserError(
                f"Budget.max_calls_per_turn must be at least 1, not {self.max_calls_per_turn}."
            )


@dataclass(kw_only=True)
class RunContext:
    """One run's public state and the operations a planner may perform.

    Attributes:
        run_id, task: the run.
        model, settings, system: the model, its default settings, the user's system prompt.
        tools: every tool of the loop, by name.
        specs: the tools offered to the model (planners may narrow or extend the list).
        catalog: every tool's spec by name (`specs` is drawn from it).
        messages: the conversation (system, earlier turns, the task, then this run's turns).
        task_index: where the task's user message is in `messages`.
        steps: completed steps, oldest first (on resume: the stored ones too).
        budget, usage, cost, model_turns, repairs: accounting.
        answer, question: how the run ended.
        planner: the name of the planner that ran (set by delegating planners).
        grounds: what the user said outside their turns (their system prompts): it
            grounds values as their turns do.
    """

    run_id: str
    task: str
    model: ChatModel
    settings: ModelSettings
    system: str | None
    tools: Mapping[str, Tool]
    catalog: Mapping[str, ToolSpec]
    specs: list[ToolSpec]
    messages: list[Message]
    task_index: int
    budget: Budget
    checks: Sequence[CallCheck] = ()
    answer_checks: Sequence[AnswerCheck] = ()
    ask_user: AskFn | None = None
    store: TraceStore | None = None
    on_result: Sequence[ResultHook] = ()
    planner: str = "react"
    grounds: tuple[str, ...] = ()
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    model_turns: int = 0
    repairs: int = 0
    answer: str | None = None
    question: str | None = None
    started: float = field(default_factory=lambda: time.perf_counter())
    answers: list[str] = field(default_factory=list)
    """The user's answers not yet used (given to `resume`)."""
    executor: Calls = field(init=False)
    """The run's calls as they are made (dedupe, intents: `bigloop.runtime.calls`)."""
    _not_made: int = 0
    """Calls the last model turn asked for beyond `max_calls_per_turn`."""

    def __post_init__(self) -> None:
        self.executor = Calls(
            run_id=self.run_id, tools=self.tools, store=self.store, on_result=[self._ran]
        )

    @property
    def intents(self) -> set[str]:
        """The calls of non-idempotent tools started in this run (a resume sets them from
        the trace: `TraceStore.intents`)."""
        return self.executor.intents

    @intents.setter
    def intents(self, started: set[str]) -> None:
        self.executor.intents = set(started)

    def replay(self, steps: list[Step]) -> None:
        """Rebuild the conversation and the accounting from a run's stored steps (resume):
        their messages (tool results in the order of their calls, as the run showed them
        to the model), usage, model turns and completed calls."""
        self.steps = list(steps)
        for s in steps:
            if s.message is not None:
                if s.message.role != "tool":
                    _replies_in_call_order(self.messages)
                self.messages.append(s.message)
            self.usage.add(
                Usage(prompt_tokens=s.prompt_tokens, completion_tokens=s.completion_tokens)
            )
            if s.kind == "model":
                self.model_turns += 1
            elif s.kind == "tool" and s.error is None and isinstance(s.input, dict):
                # a program's calls (the code planner) have no message: their output is
                # what the program got
                said = s.message.content if s.message is not None else str(s.output)
                self.executor.remember(ToolCall(id="", name=s.name, arguments=s.input), said)
        _replies_in_call_order(self.messages)

    # ------------------------------------------------------------------ the answer

    def finish(self, answer: str) -> None:
        """End the run with `answer`, as the answer checks revise it (the planner then
        returns)."""
        for check in self.answer_checks:
            answer = check.revise(self.task, answer)
        self.answer = valid_text(answer)

    # ------------------------------------------------------------------ budget

    def check_budget(self) -> None:
        """Raise `BudgetExceeded` when a limit of the run is reached."""
        b = self.budget
        if self.model_turns >= b.max_steps:
            raise BudgetExceeded(f"No answer within {b.max_steps} steps.")
        if b.max_tokens is not None and self.usage.total_tokens >= b.max_tokens:
            raise BudgetExceeded(f"Token budget of {b.max_tokens} used up.")
        if b.max_seconds is not None and time.perf_counter() - self.started >= b.max_seconds:
            raise BudgetExceeded(f"Time budget of {b.max_seconds:g} s used up.")
        if b.max_cost is not None and self.cost >= b.max_cost:
            raise BudgetExceeded(f"Cost budget of {b.max_cost:g} used up ({self.cost:g}).")

    def count_repair(self, problem: str, n: int = 1) -> None:
        """Count `n` corrections of the model; raise `BudgetExceeded` past the limit."""
        self.repairs += n
        if self.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model's replies stayed invalid after "
                f"{self.budget.max_repairs} corrections; last: {clip(problem)}"
            )

    def count_mistakes(self, n: int) -> None:
        """Count `n` invalid calls; raise `BudgetExceeded` past the repair limit."""
        self.repairs += n
        if self.repairs > self.budget.max_repairs:
            raise BudgetExceeded(
                f"The model made {self.repairs} invalid calls or replies "
                f"(limit {self.budget.max_repairs})."
            )

    def repair(self, problem: str) -> None:
        """Count a correction and tell the model `problem` in the conversation."""
        problem = clip(problem)
        self.count_repair(problem)
        self.messages.append(Message(role="user", content=problem, origin="loop"))

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
        limit = self.budget.max_step_seconds
        try:
            response = await (asyncio.wait_for(turn, limit) if limit else turn)
        except TimeoutError:
            raise BudgetExceeded(f"A model turn took longer than {limit:g} s.") from None
        if not isinstance(response, ModelResponse):
            raise UserError(
                f"Model {self.model.name!r} returned {type(response).__name__} from chat(), "
                "not a ModelResponse."
            )
        self._count_turn(response.usage)
        response.text, response.raw = valid_text(response.text), valid_text(response.raw)
        cap = self.budget.max_calls_per_turn
        self._not_made = max(0, len(response.tool_calls) - cap)
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
        more = self.model.next_call(messages, self.specs, calls, self.settings, stop)
        limit = self.budget.max_step_seconds
        try:
            response = await (asyncio.wait_for(more, limit) if limit else more)
        except TimeoutError:
            raise BudgetExceeded(f"A model turn took longer than {limit:g} s.") from None
        self._count_turn(response.usage, turn=False)  # part of the turn it continues
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
        limit = self.budget.max_step_seconds
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
            self._count_turn(usage)

    def _count_turn(self, usage: Usage, *, turn: bool = True) -> None:
        self.model_turns += turn
        self.usage.add(usage)
        card = self.model.card
        self.cost += card.cost + card.cost_per_token * usage.total_tokens

    def model_step(
        self, response: ModelResponse, reply: Message, *, role: str | None = None
    ) -> Step:
        """The `Step` recording a model turn (`reply` is what it added to the conversation)."""
        info: dict[str, Any] = {"messages": len(self.messages) - 1, "tools": len(self.specs)}
        if role:
            info["role"] = role
        if self._not_made:
            info["calls_not_made"] = self._not_made
        if response.route is not None:
            info["route"] = response.route
        if response.answered_by:
            info["answered_by"] = response.answered_by
        if latency := response.usage.latency():
            info["latency"] = latency
        return Step(
            run_id=self.run_id,
            index=len(self.steps),
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

    # ------------------------------------------------------------------ tool calls

    def evidence(self) -> Evidence:
        """What the user and the tools have said so far (for grounding checks), and
        apart, what the user said (their turns and answers) — never the loop's own notes
        and refusals, which quote the values they refuse (`Message.origin`)."""

        def texts() -> list[str]:
            said = [m.content for m in self.messages if m.origin in ("user", "tool")]
            ran = [str(s.output) for s in self.steps if _said_by(s) in ("user", "tool")]
            return [*self.grounds, *said, *ran]

        def user() -> list[str]:
            said = [m.content for m in self.messages if m.origin == "user"]
            ran = [str(s.output) for s in self.steps if _said_by(s) == "user"]
            return [*self.grounds, *said, *ran]

        def answers() -> dict[str, str]:
            return {
                str(s.input["question"]): str(s.output)
                for s in self.steps
                if s.kind == "ask" and s.name == "user" and s.error is None
                if isinstance(s.input, dict) and "question" in s.input
            }

        def guesses() -> int | None:
            tools = [s for s in self.steps if s.kind == "tool"]
            first = next((i for i, s in enumerate(tools) if s.error is None and s.input), None)
            if first is None:
                return None
            return sum(s.refusal is not None and s.refusal.ungrounded for s in tools[first + 1 :])

        def refusals() -> list[Refusal]:
            return [s.refusal for s in self.steps if s.refusal is not None]

        earlier = self.messages[: self.task_index]
        return Evidence(
            texts,
            user=user,
            answers=answers,
            guesses=guesses,
            refusals=refusals,
            continues=any(m.role == "tool" and m.origin == "tool" for m in earlier),
            request=self.task,
        )

    def writes(self, name: str) -> bool:
        """Whether tool `name` has side effects (is not idempotent)."""
        tool = self.tools.get(name)
        return tool is not None and not tool.idempotent

    async def calls(self, calls: list[ToolCall]) -> AsyncIterator[Step]:
        """Make one model turn's calls concurrently; add each result to the conversation
        and yield its step as soon as the call completes, so that a run killed between
        two completions keeps the first. Once all are done, the results are put in the
        order of the calls: the model always sees them in the order it asked.

        A call that must wait for the user's answer is recorded as an unanswered "ask"
        step; the others complete and are recorded before the run stops to ask. Calls that
        were the model's mistakes are counted as corrections.
        """
        questions: dict[int, str] = {}
        mistakes = 0
        async with aclosing(self._outcomes(calls)) as outcomes:
            async for i, outcome in outcomes:
                call = calls[i]
                if isinstance(outcome, InputRequired):
                    questions[i] = outcome.question
                    output = f"Not called: waiting for the user's answer to: {outcome.question}"
                    self.messages.append(_tool_message(call, output, "loop"))
                    asked = outcome.record if isinstance(outcome.record, Question) else None
                    yield self.tool_step(
                        call, output, None, kind="ask", error="unanswered", question=asked
                    )
                    continue
                self.messages.append(_tool_message(call, outcome.output, outcome.origin))
                yield self.tool_step(call, outcome.output, outcome)
                mistakes += outcome.model_mistake
        _replies_in_call_order(self.messages)
        if self._not_made:
            made = len(calls)
            self.messages.append(
                Message(
                    role="user",
                    origin="loop",
                    content=f"You asked for {made + self._not_made} calls in one turn; only "
                    f"the first {made} were made (at most {self.budget.max_calls_per_turn} "
                    "per turn). Ask for the others in your next turn if you still need them.",
                )
            )
            self._not_made = 0
        if questions:
            question = questions[min(questions)]
            self.messages.append(Message(role="assistant", content=question, origin="loop"))
            raise InputRequired(question)
        if mistakes:
            self.count_mistakes(mistakes)

    async def _outcomes(
        self, calls: list[ToolCall]
    ) -> AsyncGenerator[tuple[int, CallResult | InputRequired]]:
        """Each call's index and outcome as soon as it completes (calls that complete
        together: in call order). An unexpected error is raised once the others are done."""
        if len(calls) == 1:  # the common case: no task to schedule
            yield 0, await self._attempt(calls[0])
            return
        index = {asyncio.ensure_future(self._attempt(c)): i for i, c in enumerate(calls)}
        pending = set(index)
        failure: BaseException | None = None
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=index.__getitem__):
                    if (error := task.exception()) is not None:
                        failure = failure or error
                    else:
                        yield index[task], task.result()
        finally:  # closed early (the run failed or was cancelled): stop the other calls
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if failure is not None:
            raise failure

    async def _attempt(self, call: ToolCall) -> CallResult | InputRequired:
        try:
            return await self.call(call)
        except InputRequired as e:
            return e

    def tool_step(
        self,
        call: ToolCall,
        output: str,
        result: CallResult | None,
        *,
        kind: StepKind | None = None,
        error: StepError | None = None,
        question: Question | None = None,
    ) -> Step:
        """The `Step` recording a call's result; the last message is its tool message."""
        if kind is None:
            kind = "ask" if result is not None and result.outcome == "asked" else "tool"
        if error is None and result is not None and not result.ok and kind != "ask":
            error = result.outcome
        return Step(
            run_id=self.run_id,
            index=len(self.steps),
            kind=kind,
            name=call.name,
            input=call.arguments,
            output=output,
            error=error,
            seconds=result.seconds if result else 0.0,
            message=self.messages[-1] if self.messages else None,
            started_at=result.started_at if result else time.time(),
            refusal=result.refusal if result else None,
            question=question or (result.question if result else None),
        )

    async def call(self, call: ToolCall) -> CallResult:
        """Check, adapt and make one call; never raises for a model or tool error.

        Identical calls are made once (a repeat gets the first result); a call a check
        flags for the user is put to them instead; a non-idempotent call that a crash
        interrupted is not made again.

        Raises:
            InputRequired: a check asks the user and there is no way to ask now.
        """
        if (problem := _unusable(call.arguments)) is not None:
            output = f"Error: {problem}. Call again with plain values."
            return made(call, "invalid_arguments", output, "loop")
        if (stopped := await self._checked(call)) is not None:
            return stopped
        return await self.executor.make(call)

    def _ran(self, result: CallResult) -> None:
        """After a call ran: its tool's cost, then the result hooks."""
        tool = self.tools.get(result.call.name)
        if tool is not None:
            self.cost += tool.card.cost
        for hook in self.on_result:
            hook(self, result)

    async def _checked(self, call: ToolCall) -> CallResult | None:
        """Run the checks on `call` (adapting its arguments in place); the result that
        replaces the call when a check stops it, None when it is to be made. A question
        goes to the user: an approval's yes lets the call through, any other answer
        denies it; a clarifying answer goes back to the model."""
        spec = self.catalog.get(call.name)
        if spec is None or not self.checks:
            return None
        checked = await check_call(self.checks, call, spec, self.evidence())
        call.arguments = checked.call.arguments
        if checked.refusal is not None:
            return self._refused(call, checked.refusal)
        if checked.question is None:
            return None
        question = checked.question
        try:
            answer = await self.ask(question.text)
        except InputRequired as e:
            e.record = question
            raise
        if question.kind == "approval":
            if says_yes(answer):
                return None
            return self._refused(call, denied(call, "the user did not approve it"))
        output = (
            f"Not called: I asked the user {question.text!r}; they answered "
            f"{answer!r}. Call again with their answer."
        )
        result = made(call, "asked", output, "user")
        result.question = question
        return result

    def _refused(self, call: ToolCall, refusal: Refusal) -> CallResult:
        outcome: Outcome = "denied" if refusal.reason == "denied" else "invalid_arguments"
        result = made(call, outcome, clip(ERROR_PREFIX + render(refusal)), "loop")
        result.refusal = refusal
        return result

    # ------------------------------------------------------------------ the user

    async def ask(self, question: str) -> str:
        """The user's answer to `question`.

        Raises:
            InputRequired: there is no way to ask now (the run stops with the question;
                `Loop.resume(run_id, answer=...)` continues it).
        """
        if self.answers:
            return self.answers.pop(0)
        if self.ask_user is None:
            raise InputRequired(question)
        answer = self.ask_user(question)
        if inspect.isawaitable(answer):
            answer = await answer
        return str(answer)


def _tool_message(call: ToolCall, output: str, origin: Origin = "tool") -> Message:
    return Message(role="tool", content=output, tool_call_id=call.id, name=call.name, origin=origin)


def _said_by(step: Step) -> Origin | None:
    """Who wrote a call step's output: its message's origin (None: not a call's step, or
    the loop's own text)."""
    if step.kind not in ("tool", "ask"):
        return None
    if step.message is not None and step.message.role in ("tool", "user"):
        return step.message.origin
    return "tool" if step.kind == "tool" and step.refusal is None else None


def _replies_in_call_order(messages: list[Message]) -> None:
    """Sort the tool messages that end `messages` into the order of the calls they answer
    (the assistant message before them): calls complete, and are recorded, in any order."""
    start = len(messages)
    while start > 0 and messages[start - 1].role == "tool":
        start -= 1
    if start == 0 or not messages[start - 1].tool_calls or start == len(messages):
        return
    rank: dict[str, int] = {}
    for n, c in enumerate(messages[start - 1].tool_calls):
        rank.setdefault(c.id, n)
    last = len(rank)
    messages[start:] = sorted(messages[start:], key=lambda m: rank.get(m.tool_call_id or "", last))


def _unusable(arguments: Any) -> str | None:
    """Why a call's arguments cannot be used at all: nesting deeper than any tool takes,
    or an integer too long to print (None: usable; the tool validates them later)."""
    stack = [(arguments, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > _MAX_NESTING:
            return f"the arguments are nested more than {_MAX_NESTING} levels deep"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
            return "a number in the arguments has more than 4,000 digits"
    return None
