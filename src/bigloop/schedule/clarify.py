"""Clarifying questions: when a call cannot be filled from the conversation, ask.

A small model given a tool with a required argument the user never stated fills it with a
guess ("receiver_id": "colleague"). `Clarify` decides, per call, whether to ask the user
instead: a required argument is missing, or (with `ungrounded=True`) its value appears
nowhere in the task, the earlier turns or the tool results. The decision is traced as an
"ask" step.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bigloop.atoms.models.base import ToolCall, ToolSpec

_TOKEN = re.compile(r"[^\W_]+")

AskFn = Callable[[str], "str | Awaitable[str]"]
"""Asks the user a question and returns the answer (sync or async)."""


@dataclass(kw_only=True)
class Clarify:
    """When the loop asks instead of guessing.

    Attributes:
        missing: ask when a required argument is absent.
        ungrounded: ask when a required string or number argument's value is mentioned
            nowhere in the conversation (values from enums and booleans are exempt).
    """

    missing: bool = True
    ungrounded: bool = True

    def question(self, call: ToolCall, spec: ToolSpec, context: str) -> str | None:
        """The question to ask before making `call`, or None to make it."""
        if not isinstance(call.arguments, dict):
            return None
        props = spec.parameters.get("properties", {})
        required = spec.parameters.get("required", [])
        haystack = context.lower()
        unknown = []
        for name in required:
            if name not in call.arguments:
                if self.missing:
                    unknown.append(name)
                continue
            value = call.arguments[name]
            schema = props.get(name, {})
            guessable = isinstance(value, str | int | float) and not isinstance(value, bool)
            if self.ungrounded and guessable and "enum" not in schema:
                if not grounded(value, haystack):
                    unknown.append(name)
        if not unknown:
            return None
        what = " and ".join(_describe(n, props.get(n, {})) for n in unknown)
        return f"To call {call.name}, what is {what}?"


async def ask_user(ask: AskFn, question: str) -> str:
    answer = ask(question)
    if inspect.isawaitable(answer):
        answer = await answer
    return str(answer)


def grounded(value: str | int | float, context: str) -> bool:
    """Whether every word and number of `value` occurs in `context` (lower case): an
    expression built from the task's numbers is grounded; a name the task never said is
    not. A word of up to three letters also counts when it abbreviates a word of the
    context ("km" for "kilometers", "C" for "celsius")."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    words = set(_TOKEN.findall(context))
    return all(
        t in context or (len(t) <= 3 and t.isalpha() and any(_abbreviates(t, w) for w in words))
        for t in _TOKEN.findall(str(value).lower())
    )


def _abbreviates(short: str, word: str) -> bool:
    """`short` starts like `word` and its letters appear in `word` in order."""
    if not word.startswith(short[0]):
        return False
    rest = iter(word)
    return all(ch in rest for ch in short)


def _describe(name: str, schema: dict[str, object]) -> str:
    description = str(schema.get("description") or "").rstrip(". ")
    return f"the {name} ({description})" if description else f"the {name}"
