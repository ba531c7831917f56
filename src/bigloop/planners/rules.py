"""Answer rules: judge a final answer before the run ends with it — accept it, or send it
back with a typed problem.

A rule (`AnswerRule`) reads one `Answered` (the answer and the conversation it ends) and
returns None (no objection) or a verdict:

- `Retry`: the model tries again, told `note` (None: no note; `tools=False`: the next
  turn is asked for the answer without tools);
- `CallAgain`: make these calls instead (a refused guess made again, so the clarifying
  check asks the user for the value);
- `Stop`: the run fails with `message`.

`AnswerRules` applies rules in order and remembers how often each fired in the run (a
rule's `times` caps it). Every planner applies them (ReAct and code after each answer,
graph at the join, search to each candidate), and so does `bigloop serve openai`; the
policy registry (`bigloop.parts.PARTS`) names each rule, so `off` switches it off.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from bigloop._errors import RunFailure
from bigloop.atoms.models.base import Message, ToolCall, ToolSpec
from bigloop.atoms.models.prompts import FROM_MEMORY, UNEVALUATED, UNUSED_QUANTITY
from bigloop.policies.base import Evidence, guessable
from bigloop.policies.quantities import numbers, unused_quantity, written
from bigloop.policies.relevance_gate import computes
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Reason, Step


class Problem(StrEnum):
    """Why an answer went back."""

    EMPTY = "empty"
    CALL_AS_TEXT = "call_as_text"
    FROM_MEMORY = "from_memory"
    UNEVALUATED = "unevaluated"
    UNUSED_QUANTITY = "unused_quantity"
    REFUSED_GUESS = "refused_guess"


@dataclass(frozen=True)
class Retry:
    """The model tries again, told `note` (None: nothing is said); `tools=False`: its next
    turn is asked for the answer from the results, without tools."""

    problem: Problem
    note: str | None
    tools: bool = True
    value: str | None = None  # what the note is about (a number from memory, a quantity)


@dataclass(frozen=True)
class CallAgain:
    """Make `calls` instead of answering."""

    problem: Problem
    calls: list[ToolCall]


@dataclass(frozen=True)
class Stop:
    """End the run as failed with `message`."""

    problem: Problem
    message: str


Verdict = Retry | CallAgain | Stop


@dataclass(frozen=True, kw_only=True)
class Answered:
    """An answer and the conversation it ends: what a rule may read.

    Attributes:
        results: the outputs of the calls that succeeded (this run's, or the chat's tool
            messages).
        calls: every call's arguments in the conversation, as JSON.
        steps: the run's steps (empty outside a loop run: a chat served over HTTP).
        schemas: each offered tool's parameter schema by name.
    """

    text: str
    task: str
    evidence: Evidence
    specs: Sequence[ToolSpec]
    results: Sequence[str]
    calls: Sequence[str]
    steps: Sequence[Step] = ()
    schemas: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of_run(cls, ctx: RunContext, text: str, *, since: int = 0) -> Answered:
        """The answer `text` at this point of a loop run; its results are those of the
        calls from step `since` on (a planner's own lookups before it are not the
        request's: the code planner's context calls)."""
        return cls(
            text=text,
            task=ctx.transcript.task,
            evidence=ctx.transcript.evidence(),
            specs=ctx.runner.specs,
            results=[
                str(s.output)
                for s in ctx.transcript.steps[since:]
                if s.kind == "tool" and s.error is None
            ],
            calls=[*calls_in(ctx.transcript.messages), *_step_calls(ctx.transcript.steps)],
            steps=ctx.transcript.steps,
            schemas={name: tool.schema for name, tool in ctx.runner.tools.items()},
        )

    @classmethod
    def of_chat(cls, messages: Sequence[Message], specs: Sequence[ToolSpec], text: str) -> Answered:
        """The answer `text` to a chat (no loop run: its tool messages are the results)."""
        said = [m.content for m in messages if m.role in ("user", "system") and m.content]
        user = [m.content for m in messages if m.role == "user" and m.content]
        task = next((m.content for m in reversed(messages) if m.role == "user"), "")
        results = [m.content for m in messages if m.role == "tool"]
        return cls(
            text=text,
            task=task,
            evidence=Evidence("\n".join([*said, *results]), user="\n".join(user)),
            specs=specs,
            results=results,
            calls=calls_in(messages),
            schemas={s.name: s.parameters for s in specs},
        )

    @property
    def catalog(self) -> set[str]:
        return {s.name for s in self.specs}


def calls_in(messages: Iterable[Message]) -> list[str]:
    """Every call's arguments in `messages`, as JSON."""
    return _dumped(c.arguments for m in messages if m.role == "assistant" for c in m.tool_calls)


def _dumped(arguments: Iterable[Any]) -> list[str]:
    """Each as JSON; arguments no JSON can hold (an integer too long to print, nesting
    past the recursion limit: refused by the loop) are left out."""
    texts = []
    for value in arguments:
        try:
            texts.append(json.dumps(value, ensure_ascii=False))
        except (ValueError, TypeError, RecursionError):
            continue
    return texts


def _step_calls(steps: Iterable[Step]) -> list[str]:
    """The arguments, as JSON, of the run's calls: the conversation does not hold them
    all (a program's calls, `planners.code`; a graph's, until it ends)."""
    return _dumped(s.input for s in steps if s.kind == "tool" and isinstance(s.input, dict))


class AnswerRule(Protocol):
    """Judges an answer: None (no objection) or a verdict.

    Attributes:
        name: its name in the policy registry (`off` takes it).
        times: how often it may fire in one run (None: no limit).
    """

    @property
    def name(self) -> str: ...

    @property
    def times(self) -> int | None: ...

    def judge(self, answer: Answered, fired: int) -> Verdict | None:
        """`fired`: how often this rule has already fired in the run."""
        ...


@dataclass
class AnswerRules:
    """Rules applied in order: the first verdict wins; each rule at most `times` a run."""

    rules: Sequence[AnswerRule] = ()
    fired: Counter[str] = field(default_factory=Counter)

    def judge(self, answer: Answered) -> Verdict | None:
        for rule in self.rules:
            done = self.fired[rule.name]
            if rule.times is not None and done >= rule.times:
                continue
            if (verdict := rule.judge(answer, done)) is not None:
                self.fired[rule.name] += 1
                return verdict
        return None

    def fresh(self) -> AnswerRules:
        """The same rules with nothing fired (one per run)."""
        return AnswerRules(self.rules)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.rules]


# ---------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class EmptyAnswer:
    """An answer without a letter or digit goes back."""

    name: str = "empty_answer"
    times: int | None = None

    def judge(self, answer: Answered, fired: int) -> Verdict | None:
        if any(ch.isalnum() for ch in answer.text):
            return None
        return Retry(Problem.EMPTY, "Your answer was empty. Call a tool or give the answer.")


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


@dataclass(frozen=True)
class CallAsText:
    """An answer that is a tool call written as text goes back: first with a note, then
    asked for the answer without tools; a third such answer ends the run."""

    name: str = "call_as_text"
    times: int | None = None

    def judge(self, answer: Answered, fired: int) -> Verdict | None:
        if not call_fragment(answer.text, answer.catalog):
            return None
        if fired == 0:
            return Retry(
                Problem.CALL_AS_TEXT,
                "Your answer was a tool call written as text, not an answer. Call the tool "
                "with complete arguments, or give the answer in words.",
            )
        if fired == 1:
            return Retry(Problem.CALL_AS_TEXT, None, tools=False)
        return Stop(
            Problem.CALL_AS_TEXT,
            "The model's answer was a tool call, not an answer, after being asked for an "
            f"answer from the results: {answer.text[:200]!r}",
        )


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CALCULATION = re.compile(
    r"[\d.,\s()]*\d[\d.,\s()]*(?:(?:\*\*|[+*/×÷^]|\s-|-\s)[\d.,\s()]*\d[\d.,\s()]*)+"
)
"""An answer that is only arithmetic: numbers joined by operators (a minus sign with a
space beside it: 2024-06-13 is a date)."""


def is_calculation(text: str) -> bool:
    """Whether `text` is only arithmetic left unevaluated ("120 - (120 * 25 / 100)",
    "2 ** 20"; not a date)."""
    return _CALCULATION.fullmatch(text.strip()) is not None


def _given(number: str, text: str) -> bool:
    """Whether `number` ("1,250" written either way; a version or an address such as
    127.0.0.1 part by part) occurs in `text` as a whole number, not as a part of a longer
    one."""
    return numbers([number.replace(",", "")]) <= numbers([text.replace(",", "")])


@dataclass(frozen=True)
class CheckAnswers:
    """Once a run: an answer with a number no tool returned and nobody said, while tools
    were offered and none was used (small models answer arithmetic from memory, wrongly);
    or a calculation left unevaluated after a lookup while a tool that computes is
    offered."""

    name: str = "check_answers"
    times: int | None = 1

    def judge(self, answer: Answered, fired: int) -> Verdict | None:
        text = answer.text.strip()
        if answer.results:
            if is_calculation(text) and any(map(computes, answer.specs)):
                return Retry(Problem.UNEVALUATED, UNEVALUATED)
            return None
        if not answer.specs:
            return None
        said = answer.evidence.text
        if is_calculation(text):
            number: str | None = text
        else:
            number = next((n for n in _NUMBER.findall(text) if not _given(n, said)), None)
        if number is None:
            return None
        return Retry(Problem.FROM_MEMORY, FROM_MEMORY.format(number=number), value=number)


@dataclass(frozen=True)
class UseQuantities:
    """Once a run: an answer that repeats a result of the run's calls while a quantity of
    the request went into no call (`policies.quantities`: the model stopped one step
    short)."""

    name: str = "use_quantities"
    times: int | None = 1

    def judge(self, answer: Answered, fired: int) -> Verdict | None:
        if not answer.results:
            return None
        value = unused_quantity(answer.task, list(answer.calls), list(answer.results), answer.text)
        if value is None:
            return None
        return Retry(
            Problem.UNUSED_QUANTITY,
            UNUSED_QUANTITY.format(value=written(value)),
            value=written(value),
        )


ASKED_ABOUT: frozenset[Reason] = frozenset({Reason.UNGROUNDED})
"""The refusals whose call, made again, becomes a question to the user: reason
`ungrounded` is given only by a check that asks about such values."""


@dataclass(frozen=True)
class AskAfterRefusal:
    """Once a run: when the model answers after a call of its was refused for a value the
    request never gave (`about`: the refusal reasons that count) and no call has
    succeeded, make that call again: the clarifying check then asks the user for the
    value, rather than the run ending on an answer from memory. A request that continues
    a conversation which already called tools has its values judged by no check
    (`Clarify`), so there only reason `ungrounded` counts."""

    about: frozenset[Reason] = ASKED_ABOUT
    name: str = "ask_after_refusal"
    times: int | None = 1

    def judge(self, answer: Answered, fired: int) -> Verdict | None:
        tools = [s for s in answer.steps if s.kind in ("tool", "ask")]
        if not tools or any(s.error is None for s in tools):
            return None
        reasons = ASKED_ABOUT if answer.evidence.continues else self.about
        refused = [s for s in tools if _asks_about(s, reasons, answer)]
        if not refused:
            return None
        last = refused[-1]
        call = ToolCall(id=f"ask-{last.index}", name=last.name, arguments=dict(last.input or {}))
        return CallAgain(Problem.REFUSED_GUESS, [call])


def _asks_about(step: Step, reasons: Collection[Reason], answer: Answered) -> bool:
    """Whether `step` was refused for one of `reasons` and, for any reason but
    `ungrounded`, the call is otherwise the request's own: every other required value is
    in the conversation. A call whose other values are made up too (a unit conversion
    of a number nobody said, in reply to "summarize this") is no question for the user."""
    refusal = step.refusal
    if refusal is None or refusal.reason not in reasons:
        return False
    if refusal.reason == Reason.UNGROUNDED:
        return True
    schema = answer.schemas.get(step.name, {})
    required, props = schema.get("required", []), schema.get("properties", {})
    return all(
        answer.evidence.mentions(value)
        for name, value in (step.input or {}).items()
        if name in required
        and name not in refusal.values
        and guessable(value)
        and "enum" not in props.get(name, {})  # a choice, as `Clarify` judges it
    )


def default_rules(
    off: Collection[str] = (), *, ask_about: frozenset[Reason] = ASKED_ABOUT
) -> AnswerRules:
    """Every answer rule, in the order they judge, except those named in `off`."""
    rules: list[AnswerRule] = [
        EmptyAnswer(),
        CallAsText(),
        CheckAnswers(),
        UseQuantities(),
        AskAfterRefusal(about=ask_about),
    ]
    return AnswerRules([r for r in rules if r.name not in off])


async def act_on(ctx: RunContext, verdict: CallAgain | Stop) -> AsyncIterator[Step]:
    """What every planner does with these verdicts: `Stop` fails the run; `CallAgain`
    makes the calls (a refused guess made again: the clarifying check asks the user)."""
    if isinstance(verdict, Stop):
        raise RunFailure(verdict.message)
    ctx.transcript.messages.append(Message(role="assistant", tool_calls=verdict.calls))
    async for step in ctx.runner.calls(verdict.calls):
        yield step
