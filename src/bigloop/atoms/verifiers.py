"""Verifiers: atoms that score a model's reply — its calls against the request, its answer
against the task and the tool results — as a number in [0, 1] with a reason (the
review's reward/verifier models, §4.2.2).

- `CheckVerifier`: a deterministic check (a cascade check such as `calls_are_valid` or
  `grounded_reply`) as a verifier: 1 when it passes, else 0.
- `ConfidenceVerifier`: the replying model's own confidence (`ModelResponse.confidence`:
  a local model's lowest probability of a decision's token among those its grammar
  allowed: the names and values of a call, the choice to answer),
  read from the reply: no model call. A reply without one scores None.
- `JudgeVerifier`: a model as judge. It reads the conversation, the tools offered and the
  reply, and writes `{"reason": "...", "score": 0-10}` under a JSON-schema grammar (the
  reason first, so that the score follows from it); the score is divided by 10. The
  prompt is data (`JUDGE_SYSTEM`, `JUDGE_REQUEST`), so it can be changed or optimized
  without touching control flow. A reply the judge cannot give is a score of None, never
  a guess.

A `Verifier` is used by `CascadeModel(verifier=..., threshold=...)` as its escalation
signal; `bench/verifiers.py` measures each verifier's precision and recall at telling
right replies from wrong ones, with BFCL's checker as the label.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bigloop.atoms.models.base import (
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
)
from bigloop.atoms.models.prompts import JUDGE_REQUEST, JUDGE_SYSTEM, describe_tools

JUDGEMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 300},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
    },
    "required": ["reason", "score"],
}

Check = Callable[[ModelResponse, list[ToolSpec], list[Message]], bool]
"""A check of a reply: does this reply to these messages, offering these tools, pass?
(The cascade's checks, `calls_are_valid` and `grounded_reply`, are ones.)"""


@dataclass(frozen=True)
class Judgement:
    """A verifier's view of one reply: `score` in [0, 1] (None: it could not judge)."""

    score: float | None
    reason: str
    verifier: str


@runtime_checkable
class Verifier(Protocol):
    """Scores a reply to `messages` offering `tools`."""

    @property
    def name(self) -> str: ...

    async def judge(
        self, messages: list[Message], tools: list[ToolSpec], reply: ModelResponse
    ) -> Judgement: ...


@dataclass(frozen=True)
class CheckVerifier:
    """A deterministic check as a verifier: 1.0 when `check` passes, else 0.0."""

    check: Check
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or getattr(self.check, "__name__", "check")

    async def judge(
        self, messages: list[Message], tools: list[ToolSpec], reply: ModelResponse
    ) -> Judgement:
        passed = self.check(reply, tools, messages)
        return Judgement(1.0 if passed else 0.0, "passes" if passed else "fails", self.name)


@dataclass(frozen=True)
class ConfidenceVerifier:
    """The reply's own `confidence` as its score (see the module's docstring)."""

    @property
    def name(self) -> str:
        return "confidence"

    async def judge(
        self, messages: list[Message], tools: list[ToolSpec], reply: ModelResponse
    ) -> Judgement:
        if reply.confidence is None:
            return Judgement(None, "the model reported no confidence", self.name)
        return Judgement(
            reply.confidence, f"least sure choice at p={reply.confidence:.2f}", self.name
        )


@dataclass(frozen=True)
class JudgeVerifier:
    """`model` as judge (see the module's docstring); `max_tokens` bounds its reason."""

    model: ChatModel
    max_tokens: int = 160

    @property
    def name(self) -> str:
        return f"judge({self.model.name})"

    async def judge(
        self, messages: list[Message], tools: list[ToolSpec], reply: ModelResponse
    ) -> Judgement:
        prompt = [
            Message(role="system", content=JUDGE_SYSTEM),
            Message(role="user", content=judge_request(messages, tools, reply)),
        ]
        settings = ModelSettings(max_tokens=self.max_tokens, response_schema=JUDGEMENT_SCHEMA)
        said = await self.model.chat(prompt, [], settings)
        return _read_judgement(said.text, self.name)


def judge_request(messages: list[Message], tools: list[ToolSpec], reply: ModelResponse) -> str:
    """The judge's request for one reply, rendered from `JUDGE_REQUEST`."""
    return JUDGE_REQUEST.format(
        tools=describe_tools(tools) or "(none)",
        conversation="\n".join(_turn(m) for m in messages if m.role != "system"),
        reply=_reply(reply),
    )


def _turn(message: Message) -> str:
    if message.tool_calls:
        return "assistant called: " + "; ".join(call_code(c) for c in message.tool_calls)
    who = {"tool": "tool result"}.get(message.role, message.role)
    return f"{who}: {message.content}"


def _reply(reply: ModelResponse) -> str:
    """The reply as the step it is: the calls written as code (a 1.5B judge read them as
    JSON "only naming the tool" and scored 59 of 60 replies 0), or the answer."""
    if reply.tool_calls:
        lines = "\n".join(f"    {call_code(c)}" for c in reply.tool_calls)
        return f"It calls (these run exactly as written):\n{lines}"
    return f"It answers without calling a function: {reply.text}"


def call_code(call: ToolCall) -> str:
    """`call` as a line of code: `weather(city="Oslo", days=3)`."""
    arguments = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items()
    )
    return f"{call.name}({arguments})"


def _read_judgement(text: str, name: str) -> Judgement:
    try:
        data = json.loads(text)
        score = int(data["score"])
        reason = str(data.get("reason", ""))
    except (ValueError, TypeError, KeyError):
        return Judgement(None, f"unreadable judgement: {text[:200]!r}", name)
    if not 0 <= score <= 10:
        return Judgement(None, f"score out of range: {score}", name)
    return Judgement(score / 10, reason, name)
