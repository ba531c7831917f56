"""The ReAct planner: one model turn chooses the next calls, their results come back,
repeat until the model answers."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bigloop._errors import RunFailure
from bigloop.atoms.models.base import Message, ToolCall
from bigloop.atoms.models.prompts import ANSWER_NOW
from bigloop.planners.rules import (
    Answered,
    AnswerRules,
    CallAgain,
    Retry,
    Stop,
    default_rules,
)
from bigloop.policies.more_calls import MoreCalls
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Reason, Step

_MISTAKES = ("unknown_tool", "invalid_arguments")
DEFAULT_MORE_CALLS = MoreCalls()


class ReactPlanner:
    """ReAct: a model turn, then its calls (several at once when independent), until an
    answer.

    Args:
        stop_after_calls: end the run (answer None) after the first turn whose calls were
            all made — for benchmarks that score the calls, not an answer (BFCL). Turns
            with invalid calls are still corrected first.
        rules: judge each answer before the run ends with it (`planners.rules`; default:
            all of them).
        more_calls: extend a turn's calls while each new one covers another item the
            request names (`MoreCalls`; models that can continue their reply); None: off.
        answer_from_results: when a turn's calls only repeat earlier ones (their results
            are in the conversation), or a check told the model to settle, ask for the
            answer without offering tools.
    """

    name = "react"

    def __init__(
        self,
        *,
        stop_after_calls: bool = False,
        rules: AnswerRules | None = None,
        more_calls: MoreCalls | None = DEFAULT_MORE_CALLS,
        answer_from_results: bool = True,
    ) -> None:
        self.stop_after_calls = stop_after_calls
        self.rules = default_rules() if rules is None else rules
        self.more_calls = more_calls
        self.answer_from_results = answer_from_results

    def restore(self, ctx: RunContext) -> list[ToolCall]:
        """The calls the last model turn asked for that have no completed step (a run
        interrupted while calling)."""
        steps = ctx.transcript.steps
        last = next((s for s in reversed(steps) if s.kind == "model"), None)
        if last is None or last.message is None:
            return []
        done = {s.message.tool_call_id for s in steps[last.index + 1 :] if s.message}
        return [c for c in last.message.tool_calls if c.id not in done]

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        pending = self.restore(ctx)
        turn = _State(rules=self.rules.fresh())
        while True:
            if pending:
                made: list[Step] = []
                async for step in ctx.runner.calls(pending):
                    made.append(step)
                    yield step
                pending = []
                repeats = sum(s.error == "repeated" for s in made)
                if repeats:
                    ctx.meter.count_mistakes(repeats)
                if self.stop_after_calls and not any(s.error in _MISTAKES for s in made):
                    return
                turn.answer_only = self.answer_from_results and _has_all_it_will_get(made)
            ctx.meter.check()
            if turn.answer_only:
                ctx.transcript.messages.append(
                    Message(
                        role="user",
                        content=ANSWER_NOW.format(task=ctx.transcript.task),
                        origin="loop",
                    )
                )
            specs = [] if turn.answer_only else ctx.runner.specs
            response = await ctx.model_turn(ctx.transcript.messages, specs=specs)
            if self.more_calls and specs and ctx.can_continue:
                messages = list(ctx.transcript.messages)
                await self.more_calls.extend(
                    response,
                    ctx.transcript.evidence().user_said,
                    functools.partial(ctx.continue_turn, messages),
                    ctx.meter.budget.max_calls_per_turn,
                    [
                        c
                        for m in ctx.transcript.messages
                        if m.role == "assistant"
                        for c in m.tool_calls
                    ],
                )
            reply = response.as_message()
            ctx.transcript.messages.append(reply)
            yield ctx.model_step(response, reply)
            if response.error:
                if response.raw and response.raw == turn.last_malformed:
                    raise RunFailure(
                        "The model wrote the same malformed reply after a correction "
                        f"({response.error}); stopped instead of asking again."
                    )
                turn.last_malformed = response.raw
                ctx.repair(response.error)
            elif response.tool_calls:
                pending = response.tool_calls
            elif (again := self._answered(ctx, response.text, turn)) is None:
                return
            else:
                pending = again

    def _answered(self, ctx: RunContext, text: str, turn: _State) -> list[ToolCall] | None:
        """Judge an answer (`planners.rules`): None when the run ends with it
        (`ctx.finish`); otherwise the calls to make next (none: the model was told what to
        fix)."""
        verdict = turn.rules.judge(Answered.of_run(ctx, text))
        match verdict:
            case None:
                ctx.finish(text)
                return None
            case Stop(message=message):
                raise RunFailure(message)
            case Retry(note=None, problem=problem):
                ctx.meter.count_repair(f"an answer sent back: {problem}")
                turn.answer_only = not verdict.tools
            case Retry(note=str(note)):
                ctx.repair(note)
                turn.answer_only = not verdict.tools
            case CallAgain(calls=calls):
                ctx.transcript.messages.append(Message(role="assistant", tool_calls=calls))
                return calls
        return []


@dataclass(kw_only=True)
class _State:
    """What a ReAct run remembers between turns."""

    rules: AnswerRules  # this run's: each rule remembers how often it fired
    answer_only: bool = False
    last_malformed: str | None = None  # a repeat after its correction ends the run


def _has_all_it_will_get(made: list[Step]) -> bool:
    """A model that only repeats calls already has their results, and one told to settle
    (reason `settle`) has all it will get: the next turn asks for the answer."""
    if not made:
        return False
    repeats = all(s.error == "repeated" for s in made)
    settled = all(s.error is not None for s in made) and any(
        s.refusal is not None and s.refusal.reason == Reason.SETTLE for s in made
    )
    return repeats or settled
