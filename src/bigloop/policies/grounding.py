"""Grounding: whether a value a model wrote comes from the conversation.

One rule, shared by every policy that needs it (clarifying questions, dropping invented
optional arguments): a value is grounded when each of its words and numbers occurs in
what the user and the tools have said.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from typing import Any

_TOKEN = re.compile(r"[^\W_]+")
_COMPOSED = re.compile(r"[()=*/+<>]|\bselect\b")
_QUERY = re.compile(r"\bselect\b")
_QUOTED = re.compile(r"'([^']*)'")
_DOUBLE_QUOTED = re.compile(r'"([^"]*)"')
_FORMAT = re.compile(r"(?:%[a-z]|[-/:., ])+")  # strftime('%Y-%m', ...): the query's syntax
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_CURRENCIES = {
    "usd": ("dollar", "$", "us"),
    "eur": ("euro", "€"),
    "gbp": ("pound", "sterling", "£", "british"),
    "jpy": ("yen", "¥", "japan"),
    "chf": ("franc", "swiss"),
    "cny": ("yuan", "renminbi", "chinese"),
    "inr": ("rupee", "india"),
    "cad": ("canadian",),
    "aud": ("australian",),
    "sek": ("krona", "swedish"),
    "nok": ("krone", "norwegian"),
}
_NUMBER_WORDS = {
    word: n
    for n, words in enumerate(
        [
            ("zero",),
            ("one", "first"),
            ("two", "second"),
            ("three", "third"),
            ("four", "fourth"),
            ("five", "fifth"),
            ("six", "sixth"),
            ("seven", "seventh"),
            ("eight", "eighth"),
            ("nine", "ninth"),
            ("ten", "tenth"),
        ]
    )
    for word in words
}
"""Numbers people write as words ("four decimal places" gives 4)."""
_THOUSANDS = re.compile(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b)")
_MONTHS = {
    name.lower(): i
    for i in range(1, 13)
    for name in (calendar.month_name[i], calendar.month_abbr[i])
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(?:of\s+)?(\d{{4}})\b")


def grounded(value: str | int | float, context: str) -> bool:
    """Whether every word and number of `value` occurs in `context` (lower case): a name
    the task never said is not grounded. A word of up to three letters also counts when
    it abbreviates a word of the context ("km" for "kilometers", "C" for "celsius").

    A composed value — an expression, a query — is the model's own writing, and may use
    what the model knows (3.785 liters a gallon): its quoted strings must come from the
    context, and, when it has numbers, at least one of them (`ceil(1000 / 24)` for "1,000
    eggs, 24 per box"; `SELECT ... WHERE city = 'Oslo'` needs "Oslo"). A date needs only
    its year (the day of "Christmas 2030" is knowledge).
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).lower()
    if _DATE.fullmatch(text.strip()):
        return text.strip()[:4] in context
    if _COMPOSED.search(text):
        quoted = _QUOTED.findall(text) + _DOUBLE_QUOTED.findall(text)
        if _QUERY.search(text):  # a query's numbers are its own (LIMIT 1): only its literals
            return all(grounded(q, context) for q in quoted if not _FORMAT.fullmatch(q))
        numbers = _NUMBER.findall(_QUOTED.sub("", text))
        anchored = not numbers or any(_covered(n, context) for n in numbers)
        return anchored and all(grounded(q, context) for q in quoted)
    return _covered(text, context)


def _covered(text: str, context: str) -> bool:
    tokens = _TOKEN.findall(text)
    if all(t in context for t in tokens):
        return True
    if _PROSE.search(text) and len(tokens) >= _PROSE_WORDS:  # the model's own writing
        return any(t in context for t in tokens if len(t) >= 4)
    if (m := _FILE_NAME.fullmatch(text.strip())) is not None:  # an extension is its format
        tokens = _TOKEN.findall(m.group(1))
    words = set(_TOKEN.findall(context))
    return all(_said(part, context, words) for t in tokens for part in _PARTS.findall(t))


_PROSE = re.compile(r"\s")
_PROSE_WORDS = 5
"""A value of this many words or more, with spaces, is prose the model wrote (a message,
a description): grounded when one of its longer words occurs in the context."""
_FILE_NAME = re.compile(r"([^\s/\\]*[a-z][^\s/\\]*)\.[a-z][a-z0-9]{0,4}")
"""A file name: a stem with a letter, then an extension that starts with one."""
_PARTS = re.compile(r"[a-z]+|\d+")
"""A token's words and numbers apart ("file1" is "file" and 1)."""


def _said(part: str, context: str, words: set[str]) -> bool:
    """Whether one word or number of a value occurs in the context: as written, as its
    singular ("documents" for "document"), or, up to three letters, as an abbreviation
    ("km" for "kilometers")."""
    if part in context:
        return True
    if len(part) > 3 and part.endswith("s") and part[:-1] in context:
        return True
    return len(part) <= 3 and part.isalpha() and any(_abbreviates(part, w) for w in words)


def scalars(value: Any) -> Iterator[str | int | float]:
    """The strings and numbers in a JSON value (booleans and nulls left out)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from scalars(v)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield value


def with_normal_forms(text: str) -> str:
    """`text` (lower case) followed by the normal forms of the values it writes the way
    people do, so that a value a model normalised counts as grounded: "2,480" → 2480,
    "yen" → JPY (currency codes),
    "17.5%" → 0.175 (or 17.5/100), "four" or "fourth" → 4, "July 4, 2024" → 2024-07-04,
    "February 2024" → 2024-02-01 and
    2024-02-29 (its first and last days) and 2024-03-01 (the day after, for ranges that
    exclude their end)."""
    forms = [m.group().replace(",", "") for m in _THOUSANDS.finditer(text)]
    for m in _PERCENT.finditer(text):
        forms += [_decimal(float(m.group(1)) / 100), "100"]  # 17.5% is 0.175, or 17.5/100
    for day, month, year in _DAY_MONTH_YEAR.findall(text):
        forms.append(_date(year, month, day))
    for month, day, year in _MONTH_DAY_YEAR.findall(text):
        forms.append(_date(year, month, day))
    for month, year in _MONTH_YEAR.findall(text):
        y, number = int(year), _MONTHS[month]
        last = calendar.monthrange(y, number)[1]
        after = f"{y + number // 12:04d}-{number % 12 + 1:02d}-01"  # the end, exclusive
        forms += [_date(year, month, "1"), _date(year, month, str(last)), after]
    forms += [code for code, names in _CURRENCIES.items() if any(n in text for n in names)]
    forms += [str(n) for word, n in _NUMBER_WORDS.items() if re.search(rf"\b{word}\b", text)]
    return "\n".join([text, *forms]) if forms else text


def _decimal(value: float) -> str:
    return f"{value:.10f}".rstrip("0").rstrip(".")


def _date(year: str, month: str, day: str) -> str:
    return f"{int(year):04d}-{_MONTHS[month]:02d}-{int(day):02d}"


def _abbreviates(short: str, word: str) -> bool:
    """`short` starts like `word` and its letters appear in `word` in order."""
    if not word.startswith(short[0]):
        return False
    rest = iter(word)
    return all(ch in rest for ch in short)
