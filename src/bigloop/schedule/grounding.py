"""Grounding: whether a value a model wrote comes from the conversation.

One rule, shared by every policy that needs it (clarifying questions, dropping invented
optional arguments): a value is grounded when each of its words and numbers occurs in
what the user and the tools have said.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]+")


def grounded(value: str | int | float, context: str) -> bool:
    """Whether every word and number of `value` occurs in `context` (lower case): an
    expression built from the task's numbers is grounded; a name the task never said is
    not. A word of up to three letters also counts when it abbreviates a word of the
    context ("km" for "kilometers", "C" for "celsius")."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    tokens = _TOKEN.findall(str(value).lower())
    if all(t in context for t in tokens):
        return True
    words = set(_TOKEN.findall(context))
    return all(
        t in context or (len(t) <= 3 and t.isalpha() and any(_abbreviates(t, w) for w in words))
        for t in tokens
    )


def _abbreviates(short: str, word: str) -> bool:
    """`short` starts like `word` and its letters appear in `word` in order."""
    if not word.startswith(short[0]):
        return False
    rest = iter(word)
    return all(ch in rest for ch in short)
