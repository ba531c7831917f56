"""Typed records of a run: its steps and its result."""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from bigloop._errors import BigloopError
from bigloop.atoms.models.base import Message, ToolCall, Usage

StepKind = Literal["model", "tool", "ask", "message", "adapt"]
"""Also "message", one exchange between agents of a team (`bigloop.team`), and "adapt", a
value a model converted to fit an atom's input (`bigloop.policies.adapt`)."""
RunStatus = Literal["running", "ok", "budget_exceeded", "failed", "interrupted", "input_required"]
StepError = (
    Literal[
        "malformed_reply",
        "unknown_tool",
        "invalid_arguments",
        "tool_error",
        "repeated",
        "asked",
        "denied",
        "unanswered",
        "invalid_extraction",
    ]
    | RunStatus
)
"""How a step went wrong: the model's reply could not be read (`malformed_reply`), a call
named no tool, had arguments a tool or a check refused, failed in the tool, repeated an
earlier call, was put to the user (`asked`) or refused approval (`denied`); a question
still waits for its answer (`unanswered`); a value could not be converted
(`invalid_extraction`); a team's message step takes the status its receiver's run ended
with."""


class Reason(StrEnum):
    """Why a check stopped a call: the typed half of a refusal, which planners and the
    trace read (the model reads the sentence `bigloop.policies.wording` renders from it)."""

    UNGROUNDED = "ungrounded"
    """A required value appears nowhere in the conversation; made again unchanged, the
    call becomes a question to the user."""
    WANDERING = "wandering"
    """A value from nowhere after the run already has results: the model may have them."""
    SETTLE = "settle"
    """Values from nowhere again after results: calling ends, the planner asks for the
    answer from the results."""
    COPIED_EXAMPLE = "copied_example"
    """A value copied from the tool's own documentation."""
    REWRITTEN_EXPRESSION = "rewritten_expression"
    """An arithmetic argument computes another value than the request's expression."""
    DENIED = "denied"
    """An irreversible call that was not approved."""
    NO_TOOL_FITS = "no_tool_fits"
    """The model's own judgment: the called tool does not do what the request asks (the
    first call of a fresh request); answer in words instead."""
    OTHER = "other"
    """A check's own reason, in its `detail["message"]`."""


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """A check's refusal of one call, as data.

    Attributes:
        reason: why (`Reason`).
        check: the name of the check that refused.
        tool: the call's tool.
        values: the arguments concerned, by name, as the model wrote them.
        detail: what the reason's wording needs besides (e.g. the expression the request
            wrote and the two values; why an approval was refused).
    """

    reason: Reason
    check: str
    tool: str
    values: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ungrounded(self) -> bool:
        """The call's values came from nowhere in the conversation: a guess, or a value
        copied from the tool's documentation (what `settle` counts; only reason
        `ungrounded` becomes a question to the user)."""
        return self.reason in (
            Reason.UNGROUNDED,
            Reason.WANDERING,
            Reason.SETTLE,
            Reason.COPIED_EXAMPLE,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason.value,
            "check": self.check,
            "tool": self.tool,
            "values": self.values,
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Refusal:
        return cls(
            reason=Reason(data["reason"]),
            check=str(data["check"]),
            tool=str(data["tool"]),
            values=dict(data.get("values") or {}),
            detail=dict(data.get("detail") or {}),
        )


QuestionKind = Literal["clarify", "approval", "other"]


@dataclass(frozen=True, kw_only=True)
class Question:
    """A question the loop put to the user, as data.

    Attributes:
        text: what the user is asked.
        kind: "clarify" (a value the call needs), "approval" (may the irreversible call be
            made?) or "other".
        check: the name of the check that asked ("" when a planner asked).
        call: the call the question is about, when there is one: a yes to an approval
            makes exactly this call.
        effect: for an approval, what the call does (`Tool.effect`: "irreversible").
    """

    text: str
    kind: QuestionKind = "other"
    check: str = ""
    call: ToolCall | None = None
    effect: str | None = None

    def to_dict(self) -> dict[str, Any]:
        call = None if self.call is None else asdict(self.call)
        data = {"text": self.text, "kind": self.kind, "check": self.check, "call": call}
        return data | ({"effect": self.effect} if self.effect else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Question:
        call = data.get("call")
        kind = data.get("kind", "other")
        return cls(
            text=str(data["text"]),
            kind=kind if kind in ("clarify", "approval") else "other",
            check=str(data.get("check") or ""),
            call=None if call is None else ToolCall(**call),
            effect=data.get("effect") or None,
        )


@dataclass(kw_only=True)
class Step:
    """One completed step: a model turn, a tool call, or a question to the user ("ask").

    `message` is what the step added to the conversation; replaying the messages of a
    run's steps rebuilds its state, which is how an interrupted run resumes. A call a
    check stopped carries the check's `refusal`; a question to the user its `question`.
    """

    run_id: str
    index: int
    kind: StepKind
    name: str
    input: Any = None
    output: Any = None
    error: StepError | None = None
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    message: Message | None = None
    started_at: float = 0.0
    refusal: Refusal | None = None
    question: Question | None = None


@dataclass(kw_only=True)
class RunResult:
    run_id: str
    task: str
    status: RunStatus
    answer: str | None = None
    error: str | None = None
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    messages: list[Message] = field(default_factory=list)
    """The conversation at the end of the run: pass it as `history` to continue it."""
    question: str | None = None
    """With status "input_required": what the user must answer (`Loop.resume(run_id,
    answer=...)` continues the run with it; so does `Loop.run(answer,
    history=result.messages)`)."""
    pending: Question | None = None
    """With status "input_required": the question as data — its kind ("approval",
    "clarify"), and for an approval the exact call and its effect."""
    planner: str = "react"
    cost: float = 0.0
    """From the atoms' cards: `cost` per model turn or tool call, `cost_per_token`."""

    def __repr__(self) -> str:
        # Short on purpose: asyncio formats the main task's result into an error message
        # (signal handler restore in `asyncio.run`), and a full repr of every step and
        # message cost a third of a 50-step run's overhead.
        return (
            f"RunResult(run_id={self.run_id!r}, status={self.status!r}, "
            f"answer={self.answer!r}, steps={len(self.steps)}, error={self.error!r})"
        )

    @property
    def tool_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "tool"]


def valid_text(text: str) -> str:
    """`text` with each lone surrogate (e.g. "\\ud800", which models and tools can produce
    but UTF-8 cannot encode) replaced by U+FFFD; a valid surrogate pair becomes its
    character. Text that is already valid is returned as is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def message_to_dict(message: Message) -> dict[str, Any]:
    return asdict(message)


def message_from_dict(data: dict[str, Any]) -> Message:
    """A message as `message_to_dict` wrote it. A message stored before messages carried
    their origin, with `name` "bigloop", was the loop's own note."""
    calls = [ToolCall(**c) for c in data.get("tool_calls", [])]
    data = {**data, "tool_calls": calls}
    if data.get("origin") is None and data.get("name") == _OLD_LOOP_NAME:
        data |= {"origin": "loop", "name": None}
    return Message(**data)


_OLD_LOOP_NAME = "bigloop"


FAILURE_CHARS = 2000
"""A run's error text is cut at this length."""


def failure_text(error: Exception, what: str = "run") -> str:
    """A run's error for an exception that ended it: bigloop's own errors say what to do;
    any other (a bug in a model, tool, check or hook) gives its type, message and the
    place it was raised."""
    if isinstance(error, BigloopError):
        return valid_text(str(error))[:FAILURE_CHARS]
    text = f"{type(error).__name__}: {error}"
    if frames := traceback.extract_tb(error.__traceback__):
        where = frames[-1]
        text += f" (raised at {Path(where.filename).name}:{where.lineno} in {where.name})"
    return valid_text(f"The {what} stopped on an unexpected error: {text}")[:FAILURE_CHARS]
