"""Dates and times as people say them, in the forms a tool takes.

A user says "6:30 PM next Friday"; the right call writes `"time": "18:30:00"` and
`"date": "2024-03-08"`. `moments(text)` finds what the text says of dates and times
(dateparser's `search_dates`, English) and returns their normal forms: the ISO date, the
weekday, and for a time of day its 24-hour (`18:30`, `18:30:00`) and 12-hour (`6:30 pm`)
forms, so that grounding (`bigloop.policies.grounding`) finds a value a model normalised.

Relative words ("tomorrow", "next Friday", "the 15th of next month") count from the
conversation's own date when it writes one (the first full date, a system prompt's
"Today is 2024-03-01" coming first), else from today's clock.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

__all__ = ["moments"]

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_FULL_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b{_MONTH} {_DAY},? \d{{4}}\b|\b{_DAY} {_MONTH},? \d{{4}}\b",
    re.IGNORECASE,
)
_TIME_OF_DAY = re.compile(r"\d:\d\d|\d\s*(?:a\.?m\.?|p\.?m\.?)\b|\bnoon\b|\bmidnight\b|o'clock")
_LONGEST = 20_000
"""Characters read at most (a long tool result's dates are written out already)."""


def moments(text: str, today: dt.date | None = None) -> list[str]:
    """The normal forms of the dates and times `text` says (lower case); `today`: the date
    relative words count from (default: the text's first full date, else the clock)."""
    text = text[:_LONGEST]
    base = today or _first_date(text) or dt.date.today()
    return list(_forms(text, base))


def _first_date(text: str) -> dt.date | None:
    for m in _FULL_DATE.finditer(text):
        found = _search(m.group(), dt.date.today())
        if found:
            return found[0][1].date()
    return None


def _forms(text: str, base: dt.date) -> tuple[str, ...]:
    forms: list[str] = []
    for said, when in _search(text, base):
        forms += [when.date().isoformat(), when.strftime("%A").lower()]
        if _TIME_OF_DAY.search(said.lower()):
            hour12 = when.hour % 12 or 12
            half = "am" if when.hour < 12 else "pm"
            forms += [f"{when:%H:%M}", f"{when:%H:%M:%S}", f"{hour12}:{when:%M} {half}"]
            if when.minute == 0:
                forms.append(f"{hour12} {half}")
    return tuple(dict.fromkeys(forms))


@lru_cache(maxsize=256)
def _search(text: str, base: dt.date) -> tuple[tuple[str, dt.datetime], ...]:
    """dateparser's finds in `text`, relative to `base` (cached: a run's checks read the
    same conversation again and again)."""
    from dateparser.search import search_dates  # ~0.1 s to import: only when asked

    settings = {
        "RELATIVE_BASE": dt.datetime.combine(base, dt.time(12, 0)),
        "PREFER_DATES_FROM": "future",
    }
    try:
        found = search_dates(text, languages=["en"], settings=settings)
    except (ValueError, OverflowError):  # a date dateparser itself cannot represent
        return ()
    return tuple(found or ())
