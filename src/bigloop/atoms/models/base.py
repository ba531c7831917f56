"""The one chat-model interface every model atom implements, and its records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from bigloop.atoms.card import AtomCard

Role = Literal["system", "user", "assistant", "tool"]
Origin = Literal["system", "user", "model", "tool", "loop"]
"""Who wrote a message's text: the user's own words, the model's reply, what a tool
returned, or the loop's own note (a correction, a refusal, a prompt to answer) — which a
grounding check never takes as the user's words, whatever the message's role."""
_ORIGIN_OF_ROLE: dict[str, Origin] = {
    "system": "system",
    "user": "user",
    "assistant": "model",
    "tool": "tool",
}
Effect = Literal["read", "write", "irreversible"]


@dataclass(kw_only=True)
class ToolSpec:
    """What a model is told about a tool: its name, description and argument schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    effect: Effect = "read"
    """What its calls do (`Tool.effect`); not shown to the model. An irreversible call
    needs approval (`bigloop.policies.approval`)."""

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(kw_only=True)
class ToolCall:
    """A call the model asked for. `arguments` is whatever the model wrote (validated later)."""

    id: str
    name: str
    arguments: Any


@dataclass(kw_only=True)
class Message:
    """One turn of a conversation.

    Attributes:
        origin: who wrote `content` (`Origin`); None takes it from the role (a user turn
            is the user's, a tool turn the tool's). The loop's own turns say "loop".
        answers: for the user's answer to a question the loop asked, that question (the
            turn is the user's words, but not a new request).
    """

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    origin: Origin | None = None
    answers: str | None = None

    def __post_init__(self) -> None:
        if self.origin is None:
            self.origin = _ORIGIN_OF_ROLE.get(self.role, "user")


LATENCY_FIELDS = (
    "prompt_evaluated",
    "prompt_new",
    "floor_seconds",
    "prompt_seconds",
    "generation_seconds",
    "runaway",
)
"""`Usage`'s latency account, as a model step records it (`Usage.latency`)."""


@dataclass(kw_only=True)
class Usage:
    """Tokens and seconds. Local models also split the seconds into prompt processing and
    generation (`prompt_seconds`, `generation_seconds`; 0 when the backend does not say),
    and give the latency account: `prompt_evaluated`, the prompt tokens actually read (the
    rest came from the KV cache or a saved prefix state), `prompt_new`, those no earlier
    turn had (what a turn must read at least), and `floor_seconds`, the time reading
    `prompt_new` and writing `completion_tokens` takes at this machine's measured rates
    (`bigloop.atoms.models.rates`; 0 when unknown)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    prompt_seconds: float = 0.0
    generation_seconds: float = 0.0
    prompt_evaluated: int = 0
    prompt_new: int = 0
    floor_seconds: float = 0.0
    runaway: int = 0
    """Generations cut short because they repeated themselves or grew a number."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def prompt_reused(self) -> int:
        """Prompt tokens not read: from the KV cache or a saved prefix state."""
        return max(0, self.prompt_tokens - self.prompt_evaluated)

    @property
    def floor_ratio(self) -> float | None:
        """Model seconds over the floor (None when the floor is unknown)."""
        return self.seconds / self.floor_seconds if self.floor_seconds > 0 else None

    def latency(self) -> dict[str, float | int]:
        """The latency account as data (a model step's `input["latency"]`); empty when
        the backend gives none."""
        if not (self.prompt_evaluated or self.floor_seconds or self.prompt_new):
            return {}
        return {name: getattr(self, name) for name in LATENCY_FIELDS}

    @classmethod
    def from_latency(cls, latency: object, **known: Any) -> Usage:
        """A `Usage` from a step's latency account (what `latency` wrote; anything else
        in it is ignored) and the `known` fields."""
        usage = cls(**known)
        if isinstance(latency, dict):
            for name in LATENCY_FIELDS:
                value = latency.get(name)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    setattr(usage, name, type(getattr(usage, name))(value))
        return usage

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.seconds += other.seconds
        self.prompt_seconds += other.prompt_seconds
        self.generation_seconds += other.generation_seconds
        self.prompt_evaluated += other.prompt_evaluated
        self.prompt_new += other.prompt_new
        self.floor_seconds += other.floor_seconds
        self.runaway += other.runaway


@dataclass(kw_only=True)
class ModelResponse:
    """One model turn: tool calls, or text (a final answer).

    `error` is set when the output could not be read as either; the loop shows it to the
    model so it can correct itself. `raw` is the text the model produced.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    raw: str = ""
    error: str | None = None
    answered_by: str | None = None
    """Which model answered, when this one wraps others (fallback, cascade, hedged, routed)."""
    route: dict[str, Any] | None = None
    """A routed model's decision (order, Pareto front, rejections), for the trace."""
    confidence: float | None = None
    """The model's own confidence in this reply, in [0, 1], where it can tell (a local
    model's greedy grammar-constrained turn: the lowest probability, among the allowed
    tokens, of a chosen token that writes a name or a value of a call, or the choice to
    answer — `bigloop.atoms.models.fast_grammar`); None otherwise."""

    def as_message(self) -> Message:
        """The assistant turn this reply adds to the conversation (unreadable output is
        kept as written, so the correction that follows makes sense)."""
        if self.error:
            return Message(role="assistant", content=self.raw)
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls)


@dataclass(kw_only=True)
class ModelSettings:
    """Sampling settings of one model turn.

    `response_schema` asks for structured output instead of tool calls: the reply is one
    JSON value matching the schema (grammar-constrained on the local model, `response_format`
    on a server), returned as `ModelResponse.text`, and the messages are sent as written,
    without bigloop's tool prompt. Planners use it for plans and judgements.

    `free_text` asks for a reply in free text: no grammar, no tool prompt, the messages
    as written, the reply returned as `ModelResponse.text` (the code planner's fenced
    programs: code inside a JSON string is a form small models get wrong).
    """

    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0
    response_schema: dict[str, Any] | None = None
    free_text: bool = False

    @property
    def as_written(self) -> bool:
        """The messages go as written and the reply comes back as text (structured
        output or free text): no tool prompt, no calls read from it."""
        return self.response_schema is not None or self.free_text


@runtime_checkable
class ChatModel(Protocol):
    """A chat model with tool calling and usage accounting."""

    @property
    def name(self) -> str: ...

    @property
    def card(self) -> AtomCard: ...

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse: ...


@runtime_checkable
class CallContinuation(Protocol):
    """A model that can continue its own reply with one more call (the embedded model):
    see `LocalModel.next_call`. `stop(text so far)` True ends the call's generation."""

    async def next_call(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        calls: list[ToolCall],
        settings: ModelSettings | None = None,
        stop: Callable[[str], bool] | None = None,
    ) -> ModelResponse: ...
