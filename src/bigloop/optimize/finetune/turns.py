"""Training turns: what the model read at one turn of a real run, and what it should write.

A `Turn` holds the plain chat the loop sent (`to_plain_chat` of the run's messages and
offered tools, so training and serving see the same text) and the target reply in the
JSON form the loop asks for; or, for a turn asked in free text (the code planner's), the
messages as written and the reply as text (a fenced program, or the answer).
`Recorder` is the model that captures them: run the real `Loop` with it, and it answers
each turn with the verified target while keeping the prompt it was given.
`as_programs` turns a solution's calls into the code planner's targets.
"""

from __future__ import annotations

import hashlib
import json
import re
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
    ToolCall,
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
        free_text: the turn was asked in free text (`ModelSettings.free_text`): `chat`
            is the messages as written and `reply` a fenced program or an answer.
    """

    chat: list[dict[str, str]]
    reply: str
    source: str
    family: str
    free_text: bool = False

    @property
    def declines(self) -> bool:
        """The target answers without having called a tool (an answer to a request no
        tool fits, or one the model answers itself)."""
        first = all(m["role"] != "assistant" for m in self.chat)
        if self.free_text:
            return first and PROGRAM_FENCE not in self.reply
        return first and self.reply.startswith('{"answer"')

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
    free_text: bool = False,
) -> Turn:
    """The turn the loop prompted with `messages` and `tools`, answered by `reply`; with
    `free_text`, the messages as written and the reply's text (as a model reads and
    writes a free-text turn)."""
    if free_text:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return Turn(chat=chat, reply=reply.text, source=source, family=family, free_text=True)
    return Turn(
        chat=to_plain_chat(messages, tools),
        reply=render_call_reply(reply.as_message()),
        source=source,
        family=family,
    )


PROGRAM_FENCE = "```"
"""What opens a program in a free-text reply (`planners.code`)."""


def as_programs(
    calls: list[tuple[ToolCall, str]],
    request: str,
    computed: Callable[[list[str]], str | None] | None = None,
) -> list[ModelResponse]:
    """A solution's calls (each with its result's text, in order) as the code planner's
    targets: consecutive calls in one program (`planners.code.program_reply`), a new
    program from the first call that uses a value only an earlier call of the program
    returned (a value the request does not state: a model writing that program could not
    know it yet; it reads it from the printed output). `computed`, given the last
    program's results, may name what that program prints instead (an expression of `r1`,
    `r2`, ...: the answer computed in the program, not in the model's head)."""
    from bigloop.planners.code import program_reply

    groups: list[list[tuple[ToolCall, str]]] = []
    for call, output in calls:
        if not groups or _uses_result(call, [out for _, out in groups[-1]], request.lower()):
            groups.append([])
        groups[-1].append((call, output))
    last = computed([out for _, out in groups[-1]]) if computed and groups else None
    return [
        ModelResponse(
            text=program_reply([c for c, _ in group], last if k == len(groups) - 1 else None)
        )
        for k, group in enumerate(groups)
    ]


_WORD = re.compile(r"[\w.@/:-]+")


def _uses_result(call: ToolCall, outputs: list[str], request: str) -> bool:
    """Whether a word of `call`'s argument values is a word of one of `outputs` and not of
    `request` (lowercased; words as `_words` reads them)."""
    given = _words(request)
    returned = {w for out in outputs for w in _words(out)}
    used = {w for leaf in _leaves(call.arguments) for w in _words(leaf)}
    return bool((used & returned) - given)


def _words(text: str) -> set[str]:
    """The words of `text`, lowercased, trailing punctuation cut, and the numbers in
    them ("9" of "9 * 24", "32.2" of "32.2,"): the values a call can carry."""
    words = {w.strip(".:-").lower() for w in _WORD.findall(text)}
    numbers = set(re.findall(r"-?\d+(?:\.\d+)?", text))
    return (words | numbers) - {""}


def _leaves(value: object) -> list[str]:
    """The scalar values inside `value` (dict values and list items, nested), as text."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [str(value)]


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
        free = settings is not None and settings.as_written
        turn = turn_from(
            messages, tools, target, source=self._source, family=self._family, free_text=free
        )
        self.turns.append(turn)
        if self._rival is not None and self._same is not None:
            try:
                own = await self._rival.chat(messages, tools, settings)
                otherwise = not self._same(self._targets[len(self.turns) - 1 :], own)
            except Exception:  # noqa: BLE001 - a rival that fails teaches no pair; the run goes on
                otherwise = False
            if otherwise:
                rejected = own.text if turn.free_text else render_call_reply(own.as_message())
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
