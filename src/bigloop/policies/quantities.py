"""Quantities of a request that an answer left out: the data of the planner rule
`use_quantities`.

Small models stop one step short: "save $350 a month, how much after 3 years?" gets
calculator("350 * 12") and the answer 4200, a tool's result, with the request's 3 never
used. `unused_quantity` finds such a number: one the request gives, that no call of the
conversation took (in any form a calculation writes it: 19% as 19, 0.19, 1.19 or 0.81)
and that the answer does not give, while the answer repeats a number a tool returned.
Parts of dates, times, codes and a rounding instruction ("round to 2 decimals") are not
quantities.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bigloop.policies.honour_precision import PLACES

_QUANTITY = re.compile(r"(?<![\w.:/#-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)(?![\w:/#-]|\.\d)")
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def quantities(request: str) -> list[tuple[float, bool]]:
    """The numbers `request` gives as quantities, each with whether it is a percentage, in
    order and without repeats ("3 years" → 3; "2024-03-01", "10:30", "B12", "#4" and the 2
    of "round to 2 decimals" are no quantities)."""
    text = PLACES.sub(" ", request.lower())
    found: dict[tuple[float, bool], None] = {}
    for m in _QUANTITY.finditer(text):
        found[(float(m.group(1).replace(",", "") + (m.group(2) or "")), bool(m.group(3)))] = None
    return list(found)


def numbers(texts: Iterable[str]) -> set[float]:
    """Every number written in `texts` ("2024-03-01" gives 2024, 3 and 1; "1,250" 1 and
    250 as well as 1250)."""
    out: set[float] = set()
    for text in texts:
        out.update(float(n) for n in _ANY_NUMBER.findall(text.replace(",", "")))
        out.update(float(n) for n in _ANY_NUMBER.findall(text))
    return out


def _forms(value: float, percent: bool) -> list[float]:
    if not percent:
        return [value]
    share = value / 100
    return [value, share, 1 + share, 1 - share]


def _among(value: float, found: set[float]) -> bool:
    return any(abs(value - f) <= 1e-9 * max(1.0, abs(f)) for f in found)


def unused_quantity(
    request: str, calls: Iterable[str], results: Iterable[str], answer: str
) -> float | None:
    """The first quantity of `request` that no call's arguments (`calls`, as text) took
    and `answer` does not give, when `answer` repeats a number of a tool result
    (`results`); None otherwise (see the module)."""
    given = numbers([answer])
    if not given or not any(_among(n, given) for n in numbers(results)):
        return None
    used = numbers(calls) | given
    for value, percent in quantities(request):
        if not any(_among(form, used) for form in _forms(value, percent)):
            return value
    return None


def written(value: float) -> str:
    """`value` as the request would write it (3.0 → "3")."""
    return f"{value:g}" if value != int(value) else str(int(value))
