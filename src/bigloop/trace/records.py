"""Typed records of a run: its steps and its result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bigloop.atoms.models.base import Message, ToolCall, Usage

StepKind = Literal["model", "tool", "ask", "message", "adapt"]
"""Also "message", one exchange between agents of a team (`bigloop.team`), and "adapt", a
value a model converted to fit an atom's input (`bigloop.schedule.adapt`)."""
RunStatus = Literal["running", "ok", "budget_exceeded", "failed", "interrupted", "input_required"]


@dataclass(kw_only=True)
class Step:
    """One completed step: a model turn, a tool call, or a question to the user ("ask").

    `message` is what the step added to the conversation; replaying the messages of a
    run's steps rebuilds its state, which is how an interrupted run resumes.
    """

    run_id: str
    index: int
    kind: StepKind
    name: str
    input: Any = None
    output: Any = None
    error: str | None = None
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    message: Message | None = None
    started_at: float = 0.0


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
    answer=...)` continues the run with it)."""
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
    calls = [ToolCall(**c) for c in data.get("tool_calls", [])]
    return Message(**{**data, "tool_calls": calls})
