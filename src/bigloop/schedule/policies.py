"""Policies: the loop's heuristics as named, swappable parts.

Two protocols:

- `CallCheck` — looks at one call before it is made and returns a `Verdict`: accept it,
  adapt its arguments, reject it (the problem goes back to the model), or ask the user.
  The loop runs its checks in order; an adaptation feeds the next check; the first
  rejection or question ends the checks. A rejection is data (a `Refusal`: reason,
  check, values), as is a question (`Question`); the model reads the sentence
  `bigloop.schedule.wording` renders from a refusal. A check that must wait (for a person) also has
  an async `acheck`, which the loop's runner (`check_call`) awaits instead.
- `ToolSelector` — chooses, from the loop's tools, the ones a task's model turns are
  offered. The loop applies its selectors in order.

The defaults (`default_checks`, `default_selectors`) are today's measured behaviour. Every
part has a `name`, so a benchmark can switch one off (`LoopConfig.off`) and an optimizer
can tune it. One check is a safeguard rather than a heuristic: `ApproveIrreversible`, the
gate before calls that cannot be undone, is put back by `with_approval` when a list of
checks leaves it out; switching it off is explicit (`bigloop.schedule.approval`).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, Protocol

from bigloop.atoms.builtin.calculator import evaluate
from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.schedule.adapt import coerce
from bigloop.schedule.approval import (
    APPROVAL,
    ASK,
    Approver,
    approval_question,
    denied,
    irreversible,
    says_yes,
)
from bigloop.schedule.grounding import grounded, with_normal_forms
from bigloop.schedule.select import rank_tools, terms, tool_text
from bigloop.schedule.wording import render
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
            sentence `bigloop.schedule.wording` renders from it.
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

_GUESSES = (Reason.UNGROUNDED, Reason.WANDERING, Reason.SETTLE, Reason.COPIED_EXAMPLE)
"""The refusals that tell the model a value of its came from nowhere (`Evidence.told`)."""


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
    """

    def __init__(
        self,
        source: Texts,
        *,
        user: Texts | None = None,
        answers: Callable[[], dict[str, str]] | None = None,
        guesses: Callable[[], int | None] | None = None,
        refusals: Callable[[], list[Refusal]] | None = None,
    ) -> None:
        self._source = source
        self._user = user
        self._answers = answers
        self._guesses = guesses
        self._refusals = refusals

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
        return any(
            r.reason in _GUESSES and r.tool == tool and r.values == values for r in self.refusals
        )

    @cached_property
    def text(self) -> str:
        """The conversation in lower case, plus the normal forms of the numbers and dates
        it writes ("2,480" also as 2480; `with_normal_forms`)."""
        return _lower_text(self._source)

    @property
    def said(self) -> str:
        """`text` (kept for checks written against it)."""
        return self.text

    @cached_property
    def user_said(self) -> str:
        """`text`, keeping only the user's own words (no tool results)."""
        return self.text if self._user is None else _lower_text(self._user)

    def mentions(self, value: str | int | float) -> bool:
        """Whether `value`'s words and numbers all occur in the conversation (`grounded`)."""
        return grounded(value, self.text)

    def user_mentions(self, value: str | int | float) -> bool:
        """Whether the user themselves gave `value` (`mentions`, tool results left out)."""
        return grounded(value, self.user_said)


def _lower_text(source: Texts) -> str:
    return with_normal_forms((source if isinstance(source, str) else "\n".join(source())).lower())


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
class CoerceTypes:
    """Adapts value types to the schema: "3" for an integer, 2 for a float, "a,b" for an
    array of strings."""

    name: str = "coerce_types"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        adapted = coerce(call.arguments, spec.parameters)
        if repr(adapted) == repr(call.arguments):  # == would call 2 and 2.0 equal
            return ACCEPT
        return Verdict(action="adapt", arguments=adapted)


@dataclass(kw_only=True)
class DropInventedOptionals:
    """Omits optional string or number arguments the conversation never mentions.

    A value the user did not give, for a parameter they need not give, was invented by
    the model ("unit": "cm" for a request in inches); the tool's own default is the
    better guess.
    """

    name: str = "drop_invented_optionals"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not isinstance(call.arguments, dict):
            return ACCEPT
        schema = spec.parameters
        optional = set(schema.get("properties", {})) - set(schema.get("required", []))
        kept = {
            name: value
            for name, value in call.arguments.items()
            if not (name in optional and guessable(value) and not evidence.mentions(value))
        }
        if len(kept) == len(call.arguments):
            return ACCEPT
        return Verdict(action="adapt", arguments=kept)


@dataclass(kw_only=True)
class RejectCopiedExamples:
    """Rejects string arguments taken from the examples of the tool's own documentation.

    Small models copy a description's example ("e.g. San Francisco, CA") into the call. A
    value of at least `min_chars` characters that the tool's docs give as an example
    (after "e.g.", "for example", "such as", "like", "for instance" or "example") but the
    conversation never mentions is sent back to the model. A value the docs list as a
    choice ("can be 'START' or 'STOP'") is a choice, not an example.
    """

    name: str = "reject_copied_examples"
    min_chars: int = 3

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not isinstance(call.arguments, dict):
            return ACCEPT
        docs = json.dumps(spec.parameters, ensure_ascii=False) + " " + spec.description
        props = spec.parameters.get("properties", {})
        copied = [
            name
            for name, value in call.arguments.items()
            if isinstance(value, str)
            and len(value) >= self.min_chars
            and value not in props.get(name, {}).get("enum", ())  # a choice, not an example
            and _given_as_example(value, docs)
            and value.lower() not in evidence.said
        ]
        if not copied:
            return ACCEPT
        verdict = refuse(self.name, call, Reason.COPIED_EXAMPLE, copied)
        assert verdict.refusal is not None
        if evidence.told(call.name, verdict.refusal.values):  # said once; the model insists:
            return ACCEPT  # the next checks (a question to the user, the tool itself) decide
        return verdict


@dataclass(kw_only=True)
class FaithfulExpressions:
    """Rejects an arithmetic argument that rewrites an expression of the request.

    Small models drop parentheses: asked "(45 + 12) / 3", they write `45 + 12 / 3`. When a
    string argument is an arithmetic expression with exactly the numbers of an expression
    the user wrote, it must compute the same value; otherwise the model is shown both.
    """

    name: str = "faithful_expressions"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not isinstance(call.arguments, dict):
            return ACCEPT
        for name, value in call.arguments.items():
            if not isinstance(value, str) or not _OPERATOR.search(value):
                continue
            written = _value(value)
            if written is None:
                continue
            for expression in _expressions(evidence.text):
                meant = _value(expression)
                same_numbers = sorted(_numbers(expression)) == sorted(_numbers(value))
                if meant is not None and same_numbers and abs(meant - written) > 1e-9:
                    return refuse(
                        self.name,
                        call,
                        Reason.REWRITTEN_EXPRESSION,
                        [name],
                        name=name,
                        value=value,
                        written=written,
                        expression=expression.strip(),
                        meant=meant,
                    )
        return ACCEPT


@dataclass(kw_only=True)
class ApproveIrreversible:
    """Makes a call to an irreversible tool only when `approve` says yes (exactly `True`).

    With `ask`, the user is the approver: the call becomes a question
    (`approval_question`) until the user has answered it — yes makes exactly that call,
    anything else denies it. Without an approver — a run nobody can be asked in — every
    irreversible call is denied. The denial goes back to the model as the call's result
    ("denied: needs approval ..."); what the conversation says (a tool result's "call
    delete_all now") never approves. Runs after the other checks (`with_approval`), so the
    approver sees the call that would be made. See `bigloop.schedule.approval`.

    Attributes:
        approve: the approver; a sync one also works in `run_checks`, an async one needs
            `check_call` (the loop's runner).
    """

    approve: Approver | None = None
    ask: bool = False
    name: str = APPROVAL

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not irreversible(spec):
            return ACCEPT
        if self.approve is None and self.ask:
            question = approval_question(call)
            said = evidence.answer_to(question)
            if said is None:
                asked = Question(text=question, kind="approval", check=self.name, call=call)
                return Verdict(action="ask", question=asked)
            return ACCEPT if says_yes(said) else _denied(call, "the user did not approve it")
        if self.approve is None:
            return _denied(call, "nobody could be asked to approve it")
        answer = self.approve(call, spec)
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()
            return _denied(call, "its approval could not be awaited")  # see `check_call`
        return _approved(call, answer)

    async def acheck(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        """`check`, awaiting an async approver."""
        if not irreversible(spec) or self.approve is None:
            return self.check(call, spec, evidence)
        answer = self.approve(call, spec)
        if inspect.isawaitable(answer):
            answer = await answer
        return _approved(call, answer)


def _approved(call: ToolCall, answer: object) -> Verdict:
    return ACCEPT if answer is True else _denied(call, "its approval was refused")


def _denied(call: ToolCall, why: str) -> Verdict:
    return Verdict(action="reject", refusal=denied(call, why))


@dataclass(kw_only=True)
class RelevanceGate:
    """Offers no tool when the request is clearly about something else.

    A conversation with at least `min_terms` content words, none of which appears in any
    tool's name, description or parameters, gets no tools: the model then answers instead
    of forcing an unrelated call. Shorter requests always get every tool, and so does a
    conversation in which a tool was already called.
    """

    min_terms: int = 3
    name: str = "relevance_gate"
    reads_conversation: bool = True
    """The loop gives it the whole conversation's words (earlier requests, tool results),
    not only the last request: a follow-up ("and the other one?") is about the same
    tools."""

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]:
        wanted = {t for t in terms(task) if not t.isdigit()}
        if len(wanted) < self.min_terms:
            return specs
        vocabulary = {
            t
            for spec in specs
            for t in terms(tool_text(spec) + " " + json.dumps(spec.parameters, ensure_ascii=False))
        }
        return specs if wanted & vocabulary else []


@dataclass(kw_only=True)
class RankTools:
    """Orders tools by BM25 relevance to the task (small models favour the first one
    listed); keeps the first `top_k` (None: all)."""

    top_k: int | None = None
    name: str = "rank_tools"

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]:
        return rank_tools(task, specs)[: self.top_k]


@dataclass(kw_only=True)
class HonourPrecision:
    """Rounds the answer's numbers to the precision the request asks for.

    Tools return full precision ("26.2187574565"); a request that says "round to two
    decimals", "to the cent" or "to the nearest whole degree" wants 26.22. Numbers written
    with more decimals than asked are rounded; others are left as they are.
    """

    name: str = "honour_precision"

    def revise(self, task: str, answer: str) -> str:
        places = asked_places(task)
        if places is None:
            return answer

        def rounded(m: re.Match[str]) -> str:
            digits = m.group()
            if len(digits.partition(".")[2]) <= places:
                return digits
            return f"{round(float(digits), places):.{places}f}"

        return _DECIMAL.sub(rounded, answer)


_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "zero": 0}
_PLACES = re.compile(
    r"\b(\d|one|two|three|four|five|six|zero)\s+(?:decimal|decimal places?|decimals|"
    r"digits? after the (?:decimal )?point|places)\b"
)
_NEAREST = re.compile(
    r"\b(?:round(?:ed)?|nearest|to the)\s+(?:to\s+)?(?:the\s+)?(?:nearest\s+)?"
    r"(whole|integer|tenth|hundredth|thousandth|cent|penny|[a-z]+)\b"
)
_DECIMAL = re.compile(r"(?<![\d.])\d+\.\d+(?![\d.])")


def asked_places(task: str) -> int | None:
    """The decimal places a request asks for ("round to two decimals" → 2, "to the cent"
    → 2, "nearest whole degree" → 0), or None when it asks for none."""
    text = task.lower()
    if m := _PLACES.search(text):
        word = m.group(1)
        return int(word) if word.isdigit() else _WORDS[word]
    if "round" not in text and "nearest" not in text and "to the cent" not in text:
        return None
    for m in _NEAREST.finditer(text):
        unit = m.group(1)
        if unit in ("tenth",):
            return 1
        if unit in ("hundredth", "cent", "penny"):
            return 2
        if unit == "thousandth":
            return 3
        if unit in ("whole", "integer") or "nearest" in m.group():
            return 0
    return None


def default_answer_checks() -> list[AnswerCheck]:
    return [HonourPrecision()]


def default_checks(
    clarify: CallCheck | None = None, approve: Approver | None = None
) -> list[CallCheck]:
    """Type coercion, invented optionals dropped, copied doc examples and rewritten
    expressions rejected, then `clarify` when given, and last the approval of
    irreversible calls by `approve` (none: denied)."""
    checks: list[CallCheck] = [
        CoerceTypes(),
        DropInventedOptionals(),
        RejectCopiedExamples(),
        FaithfulExpressions(),
    ]
    if clarify is not None:
        checks.append(clarify)
    return [*checks, ApproveIrreversible(approve=approve)]


def with_approval(
    checks: Sequence[CallCheck], approve: Approver | Literal["ask"] | None = None
) -> list[CallCheck]:
    """`checks` with the approval gate last, where it judges the call the other checks
    leave: the list's own gate (any check named "approve_irreversible"), or a new
    `ApproveIrreversible` when the list left it out, so that a custom list of checks
    cannot drop it by accident. `approve` goes to a gate that has no approver of its own
    ("ask": the user approves by answering a question); `approve_all` switches the gate
    off."""
    others = [c for c in checks if c.name != APPROVAL]
    gates = [c for c in checks if c.name == APPROVAL] or [ApproveIrreversible()]
    return [*others, *(_given(gate, approve) for gate in gates)]


def _given(gate: CallCheck, approve: Approver | Literal["ask"] | None) -> CallCheck:
    if approve is None or not isinstance(gate, ApproveIrreversible) or gate.approve is not None:
        return gate
    if approve == ASK:
        return replace(gate, ask=True)
    assert not isinstance(approve, str)
    return replace(gate, approve=approve)


def default_selectors(top_k: int | None = None) -> list[ToolSelector]:
    return [RelevanceGate(), RankTools(top_k=top_k)]


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


_EXAMPLE = re.compile(r"\b(?:e\.\s?g\.?|eg\b|for example|for instance|such as|examples?|like)")
_SENTENCE_END = re.compile(r"[.!?;]\s")
_EXAMPLE_REACH = 60
"""How far before a value the docs' "e.g.", "such as"… may stand and still introduce it
(a list of examples: "e.g. Paris, Berlin or Rome")."""


def _given_as_example(value: str, docs: str) -> bool:
    """Whether `docs` writes `value` as an example: after "e.g.", "for example", "such
    as"… in the same sentence, at most `_EXAMPLE_REACH` characters before it."""
    lowered, start = docs.lower(), 0
    while (at := docs.find(value, start)) >= 0:
        before = lowered[max(0, at - _EXAMPLE_REACH) : at]
        markers = list(_EXAMPLE.finditer(before))
        if markers and not _SENTENCE_END.search(before[markers[-1].end() :]):
            return True
        start = at + 1
    return False


_OPERATOR = re.compile(r"[-+*/×÷^]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_EXPRESSION = re.compile(r"[\d(][\d\s.+\-*/×÷^()]*[\d)]")


def _expressions(text: str) -> list[str]:
    """Arithmetic the text writes: "(45 + 12) / 3" in "what is (45 + 12) / 3?"."""
    found = (m.group() for m in _EXPRESSION.finditer(text))
    return [e for e in found if _OPERATOR.search(e) and _NUMBER.search(e)]


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(text)]


def _value(expression: str) -> float | None:
    try:
        return float(evaluate(expression))
    except (ValueError, ArithmeticError, TypeError, RecursionError):
        return None


def guessable(value: Any) -> bool:
    """A value a model could have guessed: a string or a number (not a boolean)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)
