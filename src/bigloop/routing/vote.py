"""Self-consistency as a model: several replies to the same turn, the most common kept
(AFlow's ScEnsemble operator as an atom of the loop's workflow).

`VoteModel(model, n)` asks `model` once as configured (greedy by default) and `n - 1`
more times sampled at `temperature` with distinct seeds; replies are grouped by what they
do (`cascade.agree`: the same calls, or all an answer), and the first reply of the
largest group is returned — the greedy one wins every tie, so with `n` = 1 the model is
unchanged. A local model reads the prompt once for all replies (its prefix cache), so a
sample costs only its generated tokens. Structured-output turns (plans, judgements) are
not voted on: they pass through.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    CallContinuation,
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
)
from bigloop.routing.cascade import agree, sample_settings


class VoteModel:
    """`model` answering each turn with the most common of `n` replies."""

    def __init__(self, model: ChatModel, n: int, *, temperature: float = 0.7) -> None:
        if n < 1:
            raise UserError(f"VoteModel(n={n}): use 1 or more replies.")
        self.model = model
        self.n = n
        self.temperature = temperature

    @property
    def name(self) -> str:
        return f"vote{self.n}({self.model.name})"

    @property
    def card(self) -> AtomCard:
        return replace(self.model.card, name=self.name)

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        first = await self.model.chat(messages, tools, settings)
        if self.n == 1 or (settings is not None and settings.as_written):
            return first
        replies = [first]
        for i in range(self.n - 1):
            sampled = sample_settings(settings, self.temperature, i)
            replies.append(await self.model.chat(messages, tools, sampled))
        return most_common(replies)

    async def next_call(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        calls: list[ToolCall],
        settings: ModelSettings | None = None,
        stop: Callable[[str], bool] | None = None,
    ) -> ModelResponse:
        """One more call after `calls` (`CallContinuation`), from the model itself: a
        continuation is not voted on."""
        if isinstance(self.model, CallContinuation):
            return await self.model.next_call(messages, tools, calls, settings, stop)
        return ModelResponse()


def most_common(replies: list[ModelResponse]) -> ModelResponse:
    """The first reply of the largest group of replies that agree (ties: the earliest
    group), its usage the sum of all of them (every reply was paid for)."""
    best, best_votes = replies[0], 0
    for i, reply in enumerate(replies):
        if any(agree(reply, earlier) for earlier in replies[:i]):
            continue  # counted with its group
        votes = sum(agree(reply, other) for other in replies)
        if votes > best_votes:
            best, best_votes = reply, votes
    usage = replace(replies[0].usage)
    for other in replies[1:]:
        usage.add(other.usage)
    return replace(best, usage=usage)
