"""The run's call runner: the only way a planner makes tool calls or asks the user.

Each call is checked by the loop's policies (adapt, reject, ask), made once when
identical calls repeat, never repeated after a crash when its tool is not idempotent,
and turned into a `Step` as soon as it completes. At most `Budget.max_calls_per_turn`
calls of one model turn are made; error text the model is shown is cut at `ERROR_CHARS`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import InitVar, dataclass, field
from typing import Any

from bigloop._errors import InputRequired
from bigloop.atoms.models.base import Message, ToolCall, ToolSpec
from bigloop.atoms.tool import Tool
from bigloop.policies import CallCheck, check_call
from bigloop.policies.approval import denied, says_yes
from bigloop.policies.wording import ERROR_PREFIX, render
from bigloop.runtime.call import CallResult, Outcome
from bigloop.runtime.calls import Calls, clip, made
from bigloop.runtime.meter import Meter
from bigloop.runtime.transcript import Transcript, replies_in_call_order, tool_message
from bigloop.trace.records import Question, Refusal, Step, StepError, StepKind
from bigloop.trace.store import TraceStore

_MAX_NESTING = 64
"""Arguments nested deeper are refused before any check or tool sees them."""
_MAX_INT_BITS = 14_000
"""A larger integer argument (about 4,200 digits) cannot even be printed; it is refused."""

AskFn = Callable[[str], "str | Awaitable[str]"]
"""Asks the user a question and returns the answer (sync or async)."""

ResultHook = Callable[["CallRunner", CallResult], None]
"""Called after each completed tool call (e.g. to offer the tools `find_tools` found)."""


@dataclass(kw_only=True)
class CallRunner:
    """Makes one run's tool calls and asks its user (see the module).

    Attributes:
        tools: every tool of the loop, by name.
        catalog: every tool's spec by name (`specs` is drawn from it).
        specs: the tools offered to the model (planners may narrow or extend the list).
        not_made: calls the last model turn asked for beyond `max_calls_per_turn`.
        executor: the run's calls as they are made (dedupe, intents: `runtime.calls`).
    """

    transcript: Transcript
    meter: Meter
    tools: Mapping[str, Tool]
    catalog: Mapping[str, ToolSpec]
    specs: list[ToolSpec]
    checks: Sequence[CallCheck] = ()
    ask_user: AskFn | None = None
    store: InitVar[TraceStore | None] = None
    on_result: Sequence[ResultHook] = ()
    not_made: int = 0
    executor: Calls = field(init=False)

    def __post_init__(self, store: TraceStore | None) -> None:
        self.executor = Calls(
            run_id=self.transcript.run_id, tools=self.tools, store=store, on_result=[self._ran]
        )

    @property
    def intents(self) -> set[str]:
        """The calls of non-idempotent tools started in this run (a resume sets them from
        the trace: `TraceStore.intents`)."""
        return self.executor.intents

    @intents.setter
    def intents(self, started: set[str]) -> None:
        self.executor.intents = set(started)

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
                    self.transcript.messages.append(tool_message(call, output, "loop"))
                    asked = outcome.record if isinstance(outcome.record, Question) else None
                    yield self.tool_step(
                        call, output, None, kind="ask", error="unanswered", question=asked
                    )
                    continue
                self.transcript.messages.append(tool_message(call, outcome.output, outcome.origin))
                yield self.tool_step(call, outcome.output, outcome)
                mistakes += outcome.model_mistake
        replies_in_call_order(self.transcript.messages)
        if self.not_made:
            made = len(calls)
            self.transcript.messages.append(
                Message(
                    role="user",
                    origin="loop",
                    content=f"You asked for {made + self.not_made} calls in one turn; only "
                    f"the first {made} were made (at most {self.meter.budget.max_calls_per_turn} "
                    "per turn). Ask for the others in your next turn if you still need them.",
                )
            )
            self.not_made = 0
        if questions:
            question = questions[min(questions)]
            self.transcript.messages.append(
                Message(role="assistant", content=question, origin="loop")
            )
            raise InputRequired(question)
        if mistakes:
            self.meter.count_mistakes(mistakes)

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
            run_id=self.transcript.run_id,
            index=len(self.transcript.steps),
            kind=kind,
            name=call.name,
            input=call.arguments,
            output=output,
            error=error,
            seconds=result.seconds if result else 0.0,
            message=self.transcript.messages[-1] if self.transcript.messages else None,
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
            self.meter.cost += tool.card.cost
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
        checked = await check_call(self.checks, call, spec, self.transcript.evidence())
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
        if self.ask_user is None:
            raise InputRequired(question)
        answer = self.ask_user(question)
        if inspect.isawaitable(answer):
            answer = await answer
        return str(answer)


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
