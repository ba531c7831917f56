"""More calls: a reply's calls extended while each new call covers something new that the
user's request names.

Small models stop after the first of several calls a request needs ("the boiling points of
water and iron" gets one call). A model that can continue its own reply
(`CallContinuation`: the embedded model) is made to write one more call; the call is kept
when it is new and takes, from the user's own words, a value no earlier call used ("iron").
The first refused call ends the reply. A kept call goes through the call checks like any.

A continuation that is bound to be refused stops as soon as that is certain (`doomed`):
once it has written a whole argument value that no earlier call used and the user never
said, no later token can make it kept. That is the same verdict, a few tokens sooner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bigloop.atoms.models.base import ModelResponse, ToolCall
from bigloop.policies.grounding import scalars


@dataclass(kw_only=True)
class MoreCalls:
    """Extend a model turn's calls one at a time while each new call is kept (see module).

    Args:
        max_calls: at most this many calls in the extended reply (also capped by the
            budget's calls per turn).
    """

    name = "more_calls"
    max_calls: int = 8

    async def extend(
        self,
        response: ModelResponse,
        user: str,
        next_call: Callable[[list[ToolCall], Callable[[str], bool]], Awaitable[ModelResponse]],
        limit: int | None = None,
        earlier: list[ToolCall] | None = None,
    ) -> int:
        """Add kept calls to `response` (its usage and raw text grow with them); the number
        of calls added.

        Args:
            response: a model turn; nothing happens unless it made calls.
            user: what the user said, in lower case (kept calls take a value from it).
            next_call: the model's next call after the given ones (`CallContinuation`),
                given a test of its text so far that says when to stop generating it.
            limit: at most this many calls in all (besides `max_calls`).
            earlier: calls made in earlier turns (a forced call must not repeat them).
        """
        if not response.tool_calls or response.error:
            return 0
        limit = min(self.max_calls, limit or self.max_calls)
        added = 0
        while len(response.tool_calls) < limit:
            made = [*(earlier or []), *response.tool_calls]
            more = await next_call(response.tool_calls, doomed(made, user))
            response.usage.add(more.usage)
            if not more.tool_calls or refusal(more.tool_calls[0], made, user):
                break
            response.tool_calls.append(more.tool_calls[0])
            response.raw = more.raw
            added += 1
        return added


def refusal(call: ToolCall, calls: list[ToolCall], user: str) -> str | None:
    """Why `call` does not extend `calls` (None: it does): it repeats one of them with the
    same values, or none of its values is new and said by the user (`user`, lower case)."""
    values = sorted(_norm(v) for v in scalars(call.arguments))
    if any(
        c.name == call.name and sorted(map(_norm, scalars(c.arguments))) == values for c in calls
    ):
        return "a repeat"
    used = {_norm(v) for c in calls for v in scalars(c.arguments)}
    novel = [v for v in scalars(call.arguments) if _norm(v) not in used]
    if not novel:
        return "nothing new"
    if not all(_said(v, user) for v in novel):
        return "a value the user did not say"
    for c in calls:  # another item goes where the earlier call had one of the same kind
        if c.name == call.name and any(
            key in c.arguments and _kind(value) != _kind(c.arguments[key])
            for key, value in call.arguments.items()
        ):
            return "a value of another kind"
    return None


def doomed(calls: list[ToolCall], user: str) -> Callable[[str], bool]:
    """A test of a continuation's text so far (`{"name": ..., "arguments": {...`): True once
    `refusal` is certain to refuse the call, because an argument value is new (no call of
    `calls` used it) and the user (`user`, lower case) never said it. A string still being
    written counts once no value the user said or a call used can start with it."""
    used = {_norm(v) for c in calls for v in scalars(c.arguments)}

    def test(text: str) -> bool:
        start = text.find('"arguments"')
        if start < 0:
            return False
        for value, whole in _values(text[start + len('"arguments"') :]):
            if whole and _norm(value) not in used and not _said(value, user):
                return True
            if not whole and _cannot_become_said(str(value), used, user):
                return True
        return False

    return test


_NUMBER_LIKE = frozenset("0123456789.eE+-_infatyINFATY \t\n")
"""Characters of text `float()` may read as a number ("1_000", " 12 ", "inf", "nan")."""


def _cannot_become_said(partial: str, used: set[str], user: str) -> bool:
    """Whether no string value starting with `partial` can be said by the user or equal a
    value a call used (text that could still become a number is left alone)."""
    core = partial.strip()
    if not core or set(core) <= _NUMBER_LIKE:
        return False
    if any(u.startswith(core.lower()) for u in used):
        return False
    return core.lower().replace("_", " ").strip() not in user


def _values(text: str) -> Iterator[tuple[str | int | float, bool]]:
    """The argument values at a JSON text's start (after `"arguments"`), with whether each is
    whole: strings once closed, numbers once something follows them; a string value still
    being written comes last, not whole (keys are told from values by position)."""
    stack: list[str] = []
    want_value = True  # the text starts at ': {' after "arguments"
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"' or (want_value and (ch == "-" or ch.isdigit())):
            end, value, whole = _scalar(text, i)
            if want_value and value is not None:
                yield value, whole
            if end is None:
                return
            i = end
            continue
        if ch in "{[":
            stack.append(ch)
            want_value = ch == "["
        elif ch in "}]" and stack:
            stack.pop()
        elif ch == ":":
            want_value = True
        elif ch == ",":
            want_value = bool(stack) and stack[-1] == "["
        i += 1


def _scalar(text: str, i: int) -> tuple[int | None, str | int | float | None, bool]:
    """The string or number starting at `text[i]`: where it ends (None: at the text's end,
    still being written), its value (None: unreadable or a number not yet ended) and
    whether it is whole."""
    n = len(text)
    end = i + 1
    if text[i] == '"':
        while end < n and text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        if end >= n:
            return None, _partial_string(text[i + 1 :]), False
        try:
            return end + 1, json.loads(text[i : end + 1]), True
        except ValueError:
            return None, None, False
    while end < n and (text[end].isdigit() or text[end] in ".eE+-"):
        end += 1
    if end >= n:
        return None, None, False  # more digits may follow
    try:
        return end, json.loads(text[i:end]), True
    except ValueError:
        return end, None, False


def _partial_string(raw: str) -> str:
    """The text of an unclosed JSON string's body so far (a cut escape left out)."""
    for cut in range(min(len(raw), 6) + 1):
        try:
            value = json.loads('"' + raw[: len(raw) - cut] + '"')
        except ValueError:
            continue
        return str(value)
    return ""


def _kind(value: Any) -> str:
    """ "number" for numbers and numeric text ("40"), "text" for other text; else the type."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return type(value).__name__
    try:
        float(value)
    except ValueError:
        return "text"
    return "number"


def _norm(value: str | int | float) -> str:
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        return str(value).strip().lower()


def _said(value: str | int | float, user: str) -> bool:
    """Whether `value` occurs as written (a whole word or phrase; "_" for a space) in
    `user`."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = re.escape(str(value).strip().lower().replace("_", " "))
    return bool(text) and re.search(rf"(?<!\w){text}(?!\w)", user) is not None
