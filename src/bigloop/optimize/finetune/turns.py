"""Training turns: what the model read at one turn of a real run, and what it should write.

A `Turn` holds the plain chat the loop sent (`to_plain_chat` of the run's messages and
offered tools, so training and serving see the same text) and the target reply in the
JSON form the loop asks for. `Recorder` is the model that captures them: run the real
`Loop` with it, and it answers each turn with the verified target while keeping the
prompt it was given.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolSpec,
    Usage,
)
from bigloop.atoms.models.prompts import render_call_reply, to_plain_chat


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One training example.

    Attributes:
        chat: the messages the model read (role/content), system prompt first.
        reply: what it should have written, e.g. `{"tool_calls": [...]}`.
        source: where the example comes from (a bench example id).
        family: the kind of task (a BFCL category, a suite family), for reports.
    """

    chat: list[dict[str, str]]
    reply: str
    source: str
    family: str

    @property
    def declines(self) -> bool:
        """The target answers without having called a tool (an answer to a request no
        tool fits, or one the model answers itself)."""
        return self.reply.startswith('{"answer"') and all(
            m["role"] != "assistant" for m in self.chat
        )

    @property
    def request(self) -> str:
        """The user's request: the last user turn's text (for dedupe against tests)."""
        return next((m["content"] for m in reversed(self.chat) if m["role"] == "user"), "")


@dataclass(frozen=True, kw_only=True)
class Pair:
    """A preference example: at one state of a verified run (`chat`, what the model read),
    the verified reply (`chosen`) and the model's own, different one (`rejected`)."""

    chat: list[dict[str, str]]
    chosen: str
    rejected: str
    source: str
    family: str

    def turns(self) -> tuple[Turn, Turn]:
        """The chosen and the rejected reply as turns of the same chat."""
        return (
            Turn(chat=self.chat, reply=self.chosen, source=self.source, family=self.family),
            Turn(chat=self.chat, reply=self.rejected, source=self.source, family=self.family),
        )


Same = Callable[[list[ModelResponse], ModelResponse], bool]
"""Whether a model's reply (second) is a decision the verified run allows at this turn:
the targets not yet used (first; the current one first) say what is left to do, so
calls that match some of them (the same tool results, in any order or together) or an
answer the task's check accepts count as the same (the bench knows which)."""


def turn_from(
    messages: list[Message],
    tools: list[ToolSpec],
    reply: ModelResponse,
    *,
    source: str,
    family: str,
) -> Turn:
    """The turn the loop prompted with `messages` and `tools`, answered by `reply`."""
    return Turn(
        chat=to_plain_chat(messages, tools),
        reply=render_call_reply(reply.as_message()),
        source=source,
        family=family,
    )


class Recorder:
    """A chat model that answers with `targets` in order and records each prompt as a
    `Turn`; past the last target it answers "" (the run ends without an answer).

    A target that calls a tool the loop did not offer at its turn (a tool selector left
    it out) ends the recording there: a turn that teaches a call to a tool its prompt
    never showed would teach the model to invent tools. `unoffered` then names the tool.

    With a `rival` model (and `same`, the bench's judge of equal decisions), each turn also
    asks the rival what it would write at that state of the verified run; where it decides
    otherwise, the turn becomes a `Pair` (verified reply chosen, the rival's rejected).
    """

    def __init__(
        self,
        targets: Iterable[ModelResponse],
        *,
        source: str,
        family: str,
        rival: ChatModel | None = None,
        same: Same | None = None,
    ) -> None:
        self._targets = list(targets)
        self._source = source
        self._family = family
        self._rival = rival
        self._same = same
        self.turns: list[Turn] = []
        self.pairs: list[Pair] = []
        self.unoffered: str | None = None

    @property
    def name(self) -> str:
        return "recorder"

    @property
    def card(self) -> AtomCard:
        return AtomCard(name="recorder", kind="model", description="replays verified targets")

    async def chat(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> ModelResponse:
        if len(self.turns) >= len(self._targets) or self.unoffered is not None:
            return ModelResponse(text="", usage=Usage())
        target = self._targets[len(self.turns)]
        offered = {t.name for t in tools}
        if missing := next((c.name for c in target.tool_calls if c.name not in offered), None):
            self.unoffered = missing
            return ModelResponse(text="", usage=Usage())
        turn = turn_from(messages, tools, target, source=self._source, family=self._family)
        self.turns.append(turn)
        if self._rival is not None and self._same is not None:
            try:
                own = await self._rival.chat(messages, tools, settings)
                otherwise = not self._same(self._targets[len(self.turns) - 1 :], own)
            except Exception:  # noqa: BLE001 - a rival that fails teaches no pair; the run goes on
                otherwise = False
            if otherwise:
                rejected = render_call_reply(own.as_message())
                self.pairs.append(
                    Pair(
                        chat=turn.chat,
                        chosen=turn.reply,
                        rejected=rejected,
                        source=self._source,
                        family=self._family,
                    )
                )
        return target


def save_turns(turns: list[Turn], path: Path) -> str:
    """Write `turns` as JSON lines; returns their sha256 (the data's identity)."""
    return _save(turns, path)


def save_pairs(pairs: list[Pair], path: Path) -> str:
    """Write `pairs` as JSON lines; returns their sha256."""
    return _save(pairs, path)


def load_turns(path: Path) -> list[Turn]:
    """The turns `save_turns` wrote.

    Raises:
        UserError: the file is missing or a line is not a turn.
    """
    return _load(path, "training turns", Turn)


def load_pairs(path: Path) -> list[Pair]:
    """The pairs `save_pairs` wrote.

    Raises:
        UserError: the file is missing or a line is not a pair.
    """
    return _load(path, "preference pairs", Pair)


_Row = TypeVar("_Row", Turn, Pair)


def _save(items: list[Turn] | list[Pair], path: Path) -> str:
    text = "".join(json.dumps(asdict(i), ensure_ascii=False) + "\n" for i in items)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()


def _load(path: Path, what: str, kind: Callable[..., _Row]) -> list[_Row]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [kind(**json.loads(line)) for line in lines if line.strip()]
    except (OSError, ValueError, TypeError) as e:
        raise UserError(f"Cannot read {what} from {path}: {e}") from None


def ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    """The word n-grams of `text`, lowercased (for near-copy checks)."""
    words = text.lower().split()
    return {tuple(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))} if words else set()


def overlap(request: str, held_out: set[tuple[str, ...]], n: int = 8) -> float:
    """The share of `request`'s word n-grams found in `held_out`'s."""
    grams = ngrams(request, n)
    return len(grams & held_out) / len(grams) if grams else 0.0
