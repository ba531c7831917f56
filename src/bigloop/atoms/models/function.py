"""Models driven by code, for running whole loops offline.

`FunctionModel` asks a Python function for each turn; `ScriptedModel` replays a list of
replies. A reply given as text goes through the same lenient parser as a real model's
output, so malformed calls exercise the real repair path. They test plumbing only.
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from bigloop._errors import ModelUnavailable
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import Message, ModelResponse, ModelSettings, ToolSpec, Usage
from bigloop.atoms.models.parse import to_response

Reply = str | ModelResponse
ReplyFn = Callable[..., Reply | Awaitable[Reply]]
"""`fn(messages, tools)` or `fn(messages, tools, settings)`, sync or async."""


class FunctionModel:
    """A chat model whose every turn is computed by `fn(messages, tools)` — or by
    `fn(messages, tools, settings)` when it takes a third parameter (to see the sampling
    temperature or the structured-output schema a planner asked for).

    Args:
        card: the model's card (cost, latency, privacy) for routing and budgets; default:
            a free local model.
    """

    def __init__(
        self, fn: ReplyFn, *, name: str = "function", card: AtomCard | None = None
    ) -> None:
        self._fn = fn
        self._wants_settings = len(inspect.signature(fn).parameters) >= 3
        self._name = name
        self._card = card
        self._ids = itertools.count(1)

    @property
    def name(self) -> str:
        return self._name

    @property
    def card(self) -> AtomCard:
        if self._card is not None:
            return self._card
        return AtomCard(name=self._name, kind="model", description="scripted model (tests)")

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        start = time.perf_counter()
        if self._wants_settings:
            reply = self._fn(messages, tools, settings or ModelSettings())
        else:
            reply = self._fn(messages, tools)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, ModelResponse):
            return reply
        if settings is not None and settings.as_written:
            response = ModelResponse(text=reply, raw=reply)
        else:
            response = to_response(reply, self._ids)
        response.usage = Usage(
            prompt_tokens=sum(len(m.content.split()) for m in messages),
            completion_tokens=len(reply.split()),
            seconds=time.perf_counter() - start,
        )
        return response

    async def stream(
        self, messages: list[Message], settings: ModelSettings
    ) -> AsyncIterator[str | Usage]:
        """Structured output as a stream: the reply in pieces of a few characters (so
        streaming consumers see partial output), then its usage."""
        response = await self.chat(messages, [], settings)
        for i in range(0, len(response.text), 7):
            yield response.text[i : i + 7]
        yield response.usage


class ScriptedModel(FunctionModel):
    """Replays `replies` in order, one per turn; running out is a `ModelUnavailable`."""

    def __init__(
        self, replies: Sequence[Reply], *, name: str = "scripted", card: AtomCard | None = None
    ) -> None:
        script = iter(list(replies))

        def next_reply(messages: list[Message], tools: list[ToolSpec]) -> Reply:
            try:
                return next(script)
            except StopIteration:
                raise ModelUnavailable(f"{name}: the script has no more replies.") from None

        super().__init__(next_reply, name=name, card=card)
