"""The run's transcript: the conversation the model sees and the completed steps — what
a trace records, and what a resume rebuilds."""

from __future__ import annotations

from dataclasses import dataclass, field

from bigloop.atoms.models.base import Message, Origin, ToolCall
from bigloop.policies import Evidence
from bigloop.trace.records import Refusal, Step


@dataclass(kw_only=True)
class Transcript:
    """One run's record.

    Attributes:
        run_id, task: the run.
        system: the user's system prompt.
        messages: the conversation (system, earlier turns, the task, then this run's turns).
        task_index: where the task's user message is in `messages`.
        steps: completed steps, oldest first (on resume: the stored ones too).
        grounds: what the user said outside their turns (their system prompts): it
            grounds values as their turns do.
    """

    run_id: str
    task: str
    system: str | None
    messages: list[Message]
    task_index: int
    grounds: tuple[str, ...] = ()
    steps: list[Step] = field(default_factory=list)

    def note(self, content: str) -> None:
        """Tell the model `content` in the conversation (a turn of the loop's own)."""
        self.messages.append(Message(role="user", content=content, origin="loop"))

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
            continues=any(m.origin == "tool" for m in earlier),  # tool replies, program output
            request=self.task,
        )


def tool_message(call: ToolCall, output: str, origin: Origin = "tool") -> Message:
    return Message(role="tool", content=output, tool_call_id=call.id, name=call.name, origin=origin)


def _said_by(step: Step) -> Origin | None:
    """Who wrote a call step's output: its message's origin (None: not a call's step, or
    the loop's own text)."""
    if step.kind not in ("tool", "ask"):
        return None
    if step.message is not None and step.message.role in ("tool", "user"):
        return step.message.origin
    return "tool" if step.kind == "tool" and step.refusal is None else None


def replies_in_call_order(messages: list[Message]) -> None:
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
