"""Policies: the loop's heuristics as named, swappable parts.

Two protocols:

- `CallCheck` — looks at one call before it is made and returns a `Verdict`: accept it,
  adapt its arguments, reject it (the problem goes back to the model), or ask the user.
  The loop runs its checks in order; an adaptation feeds the next check; the first
  rejection or question ends the checks. A rejection is data (a `Refusal`: reason,
  check, values), as is a question (`Question`); the model reads the sentence
  `bigloop.policies.wording` renders from a refusal. A check that must wait (for a person) also has
  an async `acheck`, which the loop's runner (`check_call`) awaits instead.
- `ToolSelector` — chooses, from the loop's tools, the ones a task's model turns are
  offered. The loop applies its selectors in order.

The defaults (`default_checks`, `default_selectors`) are today's measured behaviour. Every
part has a `name`, so a benchmark can switch one off (`LoopConfig.off`) and an optimizer
can tune it. One check is a safeguard rather than a heuristic: `ApproveIrreversible`, the
gate before calls that cannot be undone, is put back by `with_approval` when a list of
checks leaves it out; switching it off is explicit (`bigloop.policies.approval`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.grounding import grounded, with_normal_forms
from bigloop.policies.moments import moments
from bigloop.policies.wording import render
from bigloop.trace.records import Question, Reason, Refusal

Action = Literal["accept", "adapt", "reject", "ask"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A check's decision on one call.

    Attributes:
        action: accept, adapt (make the call with `arguments`), reject (the `refusal`
            goes back to the model as the call's result) or ask (put the `question` to
            the user).
        arguments: the adapted arguments.
        refusal: why the call is refused, as data (`Refusal`); the model reads the
            sentence `bigloop.policies.wording` renders from it.
        question: what the user is asked (`Question`).
        message: for a check of your own: the problem (reject) or the question (ask), in
            words; it becomes a `Refusal` with reason "other" or a `Question` of kind
            "other".
    """

    action: Action
    arguments: Any = None
    refusal: Refusal | None = None
    question: Question | None = None
    message: str = ""

    def __post_init__(self) -> None:
        if not self.message and self.refusal is not None:  # the words, for who reads them
            object.__setattr__(self, "message", render(self.refusal))
        elif not self.message and self.question is not None:
            object.__setattr__(self, "message", self.question.text)


ACCEPT = Verdict(action="accept")


def refuse(
    check: str, call: ToolCall, reason: Reason, names: Sequence[str] = (), **detail: Any
) -> Verdict:
    """The verdict that refuses `call` for `reason`, naming the arguments `names`."""
    values = {n: call.arguments[n] for n in names} if isinstance(call.arguments, dict) else {}
    refusal = Refusal(reason=reason, check=check, tool=call.name, values=values, detail=detail)
    return Verdict(action="reject", refusal=refusal)


Texts = str | Callable[[], list[str]]
"""A text, or a function returning the texts to join (built only when read)."""


class Evidence:
    """What the conversation has said so far — the task, the user's turns, every tool
    result — as one lower-cased text, built only when a check reads it. The loop's own
    notes and refusals are not part of it (they quote the values they refuse).

    Args:
        source: the text, or a function returning the texts to join.
        answers: the user's answers to the loop's questions, by question.
        guesses: None until a call with arguments returns a result in the run (a call
            without arguments, such as `today()`, shows nothing about the request); then,
            how many calls have been refused since for values from nowhere
            (`Refusal.ungrounded`).
        user: what the user said (the task, their turns, their answers), apart from what
            tools returned: tool results are data, and never speak for the user. Without
            it, all of `source` counts as the user's.
        refusals: the refusals the run's checks have made so far.
        continues: the request continues a conversation whose earlier turns already
            called tools (their results and the state they changed are known to the
            model, if not always in words the request repeats).
        request: the run's request as the user wrote it.
    """

    def __init__(
        self,
        source: Texts,
        *,
        user: Texts | None = None,
        answers: Callable[[], dict[str, str]] | None = None,
        guesses: Callable[[], int | None] | None = None,
        refusals: Callable[[], list[Refusal]] | None = None,
        continues: bool = False,
        request: str | None = None,
    ) -> None:
        self.continues = continues
        self._request = request
        self._source = source
        self._user = user
        self._answers = answers
        self._guesses = guesses
        self._refusals = refusals

    @property
    def request(self) -> str:
        """The request as the user wrote it (case kept; default: all of `source`)."""
        return self._request if self._request is not None else _joined(self._source)

    @cached_property
    def guesses_after_results(self) -> int | None:
        """None before the run's first result from a call with arguments; after it, the
        calls refused since for values that appear nowhere in the request."""
        return None if self._guesses is None else self._guesses()

    def answer_to(self, question: str) -> str | None:
        """The user's answer to the loop's own `question`, if they gave one (the answers
        a resumed run recorded; never text from a tool result)."""
        return None if self._answers is None else self._answers().get(question)

    @cached_property
    def refusals(self) -> list[Refusal]:
        """The run's refusals so far, oldest first."""
        return [] if self._refusals is None else self._refusals()

    def told(self, tool: str, values: dict[str, Any]) -> bool:
        """Whether the model was already told that these values of a call to `tool` came
        from nowhere (by any check): a model that makes the call again insists."""
        return any(r.ungrounded and r.tool == tool and r.values == values for r in self.refusals)

    @cached_property
    def text(self) -> str:
        """The conversation in lower case, plus the normal forms of the numbers and dates
        it writes ("2,480" also as 2480; `with_normal_forms`)."""
        return _lower_text(self._source)

    @cached_property
    def moments(self) -> frozenset[str]:
        """The normal forms of the dates and times people said in words ("6:30 PM next
        Friday" → 18:30:00, 2024-03-08, ...; `bigloop.policies.moments`), from their own
        turns and system prompts (tool results write theirs in machine forms). Matched
        against a whole value, never a part: a date's digits ground no other number."""
        spoken = self._source if self._user is None else self._user
        return frozenset(moments(_joined(spoken).lower()))

    @property
    def said(self) -> str:
        """`text` (kept for checks written against it)."""
        return self.text

    @cached_property
    def user_said(self) -> str:
        """`text`, keeping only the user's own words (no tool results)."""
        return self.text if self._user is None else _lower_text(self._user)

    def mentions(self, value: str | int | float) -> bool:
        """Whether `value`'s words and numbers all occur in the conversation (`grounded`),
        or it is a date or time the conversation says in words (`moments`)."""
        return grounded(value, self.text) or said_as_moment(value, self.moments)

    def user_mentions(self, value: str | int | float) -> bool:
        """Whether the user themselves gave `value` (`mentions`, tool results left out)."""
        return grounded(value, self.user_said) or said_as_moment(value, self.moments)


def _lower_text(source: Texts) -> str:
    return with_normal_forms(_joined(source).lower())


_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[t ](.+)")


def said_as_moment(value: str | int | float, forms: frozenset[str]) -> bool:
    """Whether `value` is one of `forms` as a whole, or a date and a time ("2024-03-08
    18:30:00", "2024-03-08T18:30") that both are."""
    if not isinstance(value, str) or not forms:
        return False
    text = value.strip().lower()
    if text in forms:
        return True
    both = _DATE_TIME.fullmatch(text)
    return both is not None and both.group(1) in forms and both.group(2) in forms


def _joined(source: Texts) -> str:
    return source if isinstance(source, str) else "\n".join(source())


class CallCheck(Protocol):
    """Decides about one call before it is made."""

    name: str

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict: ...


class AnswerCheck(Protocol):
    """Revises the final answer before the run returns it."""

    name: str

    def revise(self, task: str, answer: str) -> str: ...


class ToolSelector(Protocol):
    """Chooses the tools offered for a task, from the ones given (in order)."""

    name: str

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]: ...


@dataclass(kw_only=True)
class Checked:
    """The outcome of a loop's checks on one call: the call to make, or why not."""

    call: ToolCall
    refusal: Refusal | None = None
    question: Question | None = None
    by: list[str] = field(default_factory=list)
    """Names of the checks that adapted, rejected or asked."""

    @property
    def problem(self) -> str | None:
        """The refusal as the model reads it (`wording.render`); None when not refused."""
        return None if self.refusal is None else render(self.refusal)

    @property
    def denied(self) -> bool:
        """The approval gate refused the call (not the model's mistake: its arguments
        may be right)."""
        return self.refusal is not None and self.refusal.reason == Reason.DENIED


def run_checks(
    checks: Sequence[CallCheck], call: ToolCall, spec: ToolSpec, evidence: Evidence
) -> Checked:
    """Apply `checks` in order to `call` (an async approver denies: see `check_call`)."""
    out = Checked(call=call)
    for check in checks:
        if _settled(out, check.name, check.check(out.call, spec, evidence)):
            break
    return out


async def check_call(
    checks: Sequence[CallCheck], call: ToolCall, spec: ToolSpec, evidence: Evidence
) -> Checked:
    """`run_checks` for the loop: a check with an async `acheck` (an approval waiting
    for a person or a service) is awaited."""
    out = Checked(call=call)
    for check in checks:
        acheck = getattr(check, "acheck", None)
        if acheck is not None:
            verdict = await acheck(out.call, spec, evidence)
        else:
            verdict = check.check(out.call, spec, evidence)
        if _settled(out, check.name, verdict):
            break
    return out


def _settled(out: Checked, name: str, verdict: Verdict) -> bool:
    """Apply one verdict to `out`; whether it ends the checks."""
    if verdict.action == "accept":
        return False
    out.by.append(name)
    if verdict.action == "adapt":
        out.call = ToolCall(id=out.call.id, name=out.call.name, arguments=verdict.arguments)
        return False
    if verdict.action == "reject":
        out.refusal = verdict.refusal or Refusal(
            reason=Reason.OTHER, check=name, tool=out.call.name, detail={"message": verdict.message}
        )
    else:
        out.question = verdict.question or Question(text=verdict.message, check=name, call=out.call)
    return True


def guessable(value: Any) -> bool:
    """A value a model could have guessed: a string or a number (not a boolean)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)
