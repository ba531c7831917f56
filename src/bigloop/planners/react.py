"""The ReAct planner: one model turn chooses the next calls, their results come back,
repeat until the model answers."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass

from bigloop._errors import RunFailure
from bigloop.atoms.models.base import Message, ToolCall
from bigloop.atoms.models.prompts import ANSWER_NOW, FROM_MEMORY, UNEVALUATED, UNUSED_QUANTITY
from bigloop.policies.base import Evidence, guessable
from bigloop.policies.more_calls import MoreCalls
from bigloop.policies.quantities import numbers, unused_quantity, written
from bigloop.policies.relevance_gate import computes
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Reason, Step

_MISTAKES = ("unknown_tool", "invalid_arguments")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
DEFAULT_MORE_CALLS = MoreCalls()


ASKED_ABOUT: frozenset[Reason] = frozenset({Reason.UNGROUNDED})
"""The refusals whose call, made again, becomes a question to the user: reason
`ungrounded` is given only by a check that asks about such values."""


def _refused_guess(ctx: RunContext, reasons: Collection[Reason]) -> ToolCall | None:
    """The last call refused for one of `reasons` (`ReactPlanner.ask_about`), when no call
    of the run has succeeded: made again, it becomes the question to the user. A request
    that continues a conversation which already called tools has its values judged by no
    check (`Clarify`), so there only reason `ungrounded` counts."""
    tools = [s for s in ctx.steps if s.kind in ("tool", "ask")]
    if any(s.error is None for s in tools):
        return None
    evidence = ctx.evidence()
    if evidence.continues:
        reasons = ASKED_ABOUT
    refused = [s for s in tools if _asks_about(s, reasons, ctx, evidence)]
    if not refused:
        return None
    last = refused[-1]
    return ToolCall(id=f"ask-{last.index}", name=last.name, arguments=dict(last.input or {}))


def _asks_about(
    step: Step, reasons: Collection[Reason], ctx: RunContext, evidence: Evidence
) -> bool:
    """Whether `step` was refused for one of `reasons` and, for any reason but
    `ungrounded`, the call is otherwise the request's own: every other required value is
    in the conversation. A call whose other values are made up too (a unit conversion
    of a number nobody said, in reply to "summarize this") is no question for the user."""
    refusal = step.refusal
    if refusal is None or refusal.reason not in reasons:
        return False
    if refusal.reason == Reason.UNGROUNDED:
        return True
    schema = tool.schema if (tool := ctx.tools.get(step.name)) is not None else {}
    required, props = schema.get("required", []), schema.get("properties", {})
    return all(
        evidence.mentions(value)
        for name, value in (step.input or {}).items()
        if name in required
        and name not in refusal.values
        and guessable(value)
        and "enum" not in props.get(name, {})  # a choice, as `Clarify` judges it
    )


_JSON_CALL = re.compile(r'^\s*[\[{].*"(?:name|tool_calls|arguments|tool)"\s*:', re.S)


def call_fragment(text: str, tools: Collection[str]) -> bool:
    """Whether a final answer is a tool call written as text (often cut short:
    `read_file({`) rather than an answer: it starts with a tool's name and "(", or it is
    JSON with a call's keys."""
    head = text.strip()
    name = head.split("(", 1)[0].strip()
    if "(" in head and name in tools:
        return True
    return bool(_JSON_CALL.match(head))


def _unsupported(ctx: RunContext, answer: str) -> str | None:
    """What of `answer` no tool computed, when no tool call has succeeded (None: the answer
    is supported, or tools were used): the answer itself when it is a calculation left
    unevaluated ("120 - (120 * 25 / 100)"), else a number that neither the request nor a
    tool result gave as a whole number (125 is not given by "$1,250")."""
    if _looked_up(ctx):
        return None
    if _CALCULATION.fullmatch(answer.strip()):
        return answer.strip()
    text = ctx.evidence().text
    return next((n for n in _NUMBER.findall(answer) if not _given(n, text)), None)


def _unevaluated(ctx: RunContext, answer: str) -> bool:
    """Whether the answer is a calculation left unevaluated although a tool call has
    succeeded and an offered tool computes arithmetic (`relevance_gate.computes`;
    `_unsupported` covers runs without a successful call). The note does not quote it: a
    shortened copy would be copied back."""
    if not _CALCULATION.fullmatch(answer.strip()) or not any(map(computes, ctx.specs)):
        return False
    return _looked_up(ctx)


def _looked_up(ctx: RunContext) -> bool:
    """Whether a tool call of this run has succeeded."""
    return any(s.kind == "tool" and s.error is None for s in ctx.steps)


_CALCULATION = re.compile(
    r"[\d.,\s()]*\d[\d.,\s()]*(?:(?:[+*/×÷^]|\s-|-\s)[\d.,\s()]*\d[\d.,\s()]*)+"
)
"""An answer that is only arithmetic: numbers joined by operators (a minus sign with a
space beside it: 2024-06-13 is a date)."""


def _given(number: str, text: str) -> bool:
    """Whether `number` ("1,250" written either way; a version or an address such as
    127.0.0.1 part by part) occurs in `text` as a whole number, not as a part of a longer
    one."""
    return numbers([number.replace(",", "")]) <= numbers([text.replace(",", "")])


def _left_out(ctx: RunContext, answer: str) -> float | None:
    """A quantity of the request that no call of the conversation took, while `answer`
    repeats a result of this run's successful calls (`unused_quantity`; None: none)."""
    results = [s.output for s in ctx.steps if s.kind == "tool" and s.error is None]
    if not results:
        return None
    calls = [
        json.dumps(c.arguments, ensure_ascii=False)
        for m in ctx.messages
        if m.role == "assistant"
        for c in m.tool_calls
    ]
    return unused_quantity(ctx.task, calls, [str(r) for r in results], answer)


class ReactPlanner:
    """ReAct: a model turn, then its calls (several at once when independent), until an
    answer.

    Args:
        stop_after_calls: end the run (answer None) after the first turn whose calls were
            all made — for benchmarks that score the calls, not an answer (BFCL). Turns
            with invalid calls are still corrected first.
        check_answers: send back, once, an answer that gives a number no tool returned
            and the request never said, while tools were offered and none was used (small
            models answer arithmetic from memory, wrongly), and an answer that is a
            calculation left unevaluated while a tool that computes is offered.
        more_calls: extend a turn's calls while each new one covers another item the
            request names (`MoreCalls`; models that can continue their reply); None: off.
        ask_after_refusal: when the model answers after a call of its was refused for a
            value the request never gave, and no call has succeeded, make that call again
            instead (once): the clarifying check then asks the user for the value, rather
            than the run ending on an answer from memory.
        ask_about: the refusal reasons `ask_after_refusal` acts on: `ASKED_ABOUT`, and
            `Reason.COPIED_EXAMPLE` when the clarifying check asks about values from
            nowhere (it then asks about the copied value, which the request never gave).
        answer_from_results: when a turn's calls only repeat earlier ones (their results
            are in the conversation), or a check told the model to settle, ask for the
            answer without offering tools.
        use_quantities: send back, once, an answer that repeats a tool's result while a
            quantity of the request went into no call (`policies.quantities`: the model
            stopped one step short).
    """

    name = "react"

    def __init__(
        self,
        *,
        stop_after_calls: bool = False,
        check_answers: bool = True,
        more_calls: MoreCalls | None = DEFAULT_MORE_CALLS,
        ask_after_refusal: bool = True,
        ask_about: Collection[Reason] = ASKED_ABOUT,
        answer_from_results: bool = True,
        use_quantities: bool = True,
    ) -> None:
        self.stop_after_calls = stop_after_calls
        self.check_answers = check_answers
        self.more_calls = more_calls
        self.ask_after_refusal = ask_after_refusal
        self.ask_about = frozenset(ask_about)
        self.answer_from_results = answer_from_results
        self.use_quantities = use_quantities

    def restore(self, ctx: RunContext) -> list[ToolCall]:
        """The calls the last model turn asked for that have no completed step (a run
        interrupted while calling)."""
        steps = ctx.steps
        last = next((s for s in reversed(steps) if s.kind == "model"), None)
        if last is None or last.message is None:
            return []
        done = {s.message.tool_call_id for s in steps[last.index + 1 :] if s.message}
        return [c for c in last.message.tool_calls if c.id not in done]

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        pending = self.restore(ctx)
        turn = _State(
            checked=not self.check_answers,
            ask_after_refusal=self.ask_after_refusal,
            quantities_checked=not self.use_quantities,
        )
        while True:
            if pending:
                made: list[Step] = []
                async for step in ctx.calls(pending):
                    made.append(step)
                    yield step
                pending = []
                repeats = sum(s.error == "repeated" for s in made)
                if repeats:
                    ctx.count_mistakes(repeats)
                if self.stop_after_calls and not any(s.error in _MISTAKES for s in made):
                    return
                turn.answer_only = self.answer_from_results and _has_all_it_will_get(made)
            ctx.check_budget()
            if turn.answer_only:
                ctx.messages.append(
                    Message(role="user", content=ANSWER_NOW.format(task=ctx.task), origin="loop")
                )
            specs = [] if turn.answer_only else ctx.specs
            response = await ctx.model_turn(ctx.messages, specs=specs)
            if self.more_calls and specs and ctx.can_continue:
                messages = list(ctx.messages)
                await self.more_calls.extend(
                    response,
                    ctx.evidence().user_said,
                    functools.partial(ctx.continue_turn, messages),
                    ctx.budget.max_calls_per_turn,
                    [c for m in ctx.messages if m.role == "assistant" for c in m.tool_calls],
                )
            reply = response.as_message()
            ctx.messages.append(reply)
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
        """Judge an answer: None when the run ends with it (`ctx.finish`); otherwise the
        calls to make next (none: the model was told what to fix)."""
        if not any(ch.isalnum() for ch in text):
            ctx.repair("Your answer was empty. Call a tool or give the answer.")
        elif call_fragment(text, ctx.catalog):
            turn.fragments += 1
            if turn.fragments > 2:
                raise RunFailure(
                    "The model's answer was a tool call, not an answer, after being asked "
                    f"for an answer from the results: {text[:200]!r}"
                )
            if turn.fragments == 1:
                ctx.repair(
                    "Your answer was a tool call written as text, not an answer. Call the "
                    "tool with complete arguments, or give the answer in words."
                )
            else:
                ctx.count_repair("an answer that was a tool call")
                turn.answer_only = True
        elif not turn.checked and ctx.specs and (number := _unsupported(ctx, text)):
            turn.checked = True
            ctx.repair(FROM_MEMORY.format(number=number))
        elif not turn.checked and _unevaluated(ctx, text):
            turn.checked = True
            ctx.repair(UNEVALUATED)
        elif not turn.quantities_checked and (value := _left_out(ctx, text)) is not None:
            turn.quantities_checked = True
            ctx.repair(UNUSED_QUANTITY.format(value=written(value)))
        elif (
            turn.ask_after_refusal and (refused := _refused_guess(ctx, self.ask_about)) is not None
        ):
            # the model gave up on a value it had to guess: the user has it
            turn.ask_after_refusal = False  # once per run
            ctx.messages.append(Message(role="assistant", tool_calls=[refused]))
            return [refused]
        else:
            ctx.finish(text)
            return None
        return []


@dataclass(kw_only=True)
class _State:
    """What a ReAct run remembers between turns."""

    checked: bool
    ask_after_refusal: bool
    quantities_checked: bool
    answer_only: bool = False
    last_malformed: str | None = None  # a repeat after its correction ends the run
    fragments: int = 0  # answers that were a call: retried with the tools, then without


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
