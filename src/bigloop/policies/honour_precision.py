"""`honour_precision`: the answer rounded to the precision the request asks for (an answer
check)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(kw_only=True)
class HonourPrecision:
    """Rounds the answer's numbers to the precision the request asks for.

    Tools return full precision ("26.2187574565"); a request that says "round to two
    decimals", "to the cent" or "to the nearest whole degree" wants 26.22. Numbers written
    with more decimals than asked are rounded; others are left as they are.
    """

    name: str = "honour_precision"

    def revise(self, task: str, answer: str) -> str:
        places = asked_places(task)
        if places is None:
            return answer

        def rounded(m: re.Match[str]) -> str:
            digits = m.group()
            if len(digits.partition(".")[2]) <= places:
                return digits
            return f"{round(float(digits), places):.{places}f}"

        return _DECIMAL.sub(rounded, answer)


_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "zero": 0}


PLACES = re.compile(
    r"\b(\d|one|two|three|four|five|six|zero)\s+(?:decimal|decimal places?|decimals|"
    r"digits? after the (?:decimal )?point|places)\b"
)


_NEAREST = re.compile(
    r"\b(?:round(?:ed)?|nearest|to the)\s+(?:to\s+)?(?:the\s+)?(?:nearest\s+)?"
    r"(whole|integer|tenth|hundredth|thousandth|cent|penny|[a-z]+)\b"
)


_DECIMAL = re.compile(r"(?<![\d.])\d+\.\d+(?![\d.])")


def asked_places(task: str) -> int | None:
    """The decimal places a request asks for ("round to two decimals" → 2, "to the cent"
    → 2, "nearest whole degree" → 0), or None when it asks for none."""
    text = task.lower()
    if m := PLACES.search(text):
        word = m.group(1)
        return int(word) if word.isdigit() else _WORDS[word]
    if "round" not in text and "nearest" not in text and "to the cent" not in text:
        return None
    for m in _NEAREST.finditer(text):
        unit = m.group(1)
        if unit in ("tenth",):
            return 1
        if unit in ("hundredth", "cent", "penny"):
            return 2
        if unit == "thousandth":
            return 3
        if unit in ("whole", "integer") or "nearest" in m.group():
            return 0
    return None
