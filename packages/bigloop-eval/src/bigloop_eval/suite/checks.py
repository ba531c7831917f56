"""Automatic checks of a run's outcome: each returns (passed, why).

A check sees an `Outcome` — the run's status, answer, whether it asked the user, and the
tools it called — never the task. Kinds:

- `Number`: some number written in the answer is the expected one ("2,480", "$12.96",
  "17.5%" are read as 2480, 12.96, 17.5). With `places` (the request asked for rounding)
  the number must also be written with at most that many decimals: an unrounded
  26.218757 for "round to two decimals" fails.
- `Text`: one of the phrases occurs (case-insensitive, whitespace normalised, whole words).
- `Date`: the date occurs, written as 2024-06-13, June 13, 2024, 13 June 2024 or "Jun 13th".
- `AllOf`: every item of a set occurs, and none of the `forbid` items (set match).
- `Asked`: the run stopped with a question (status "input_required" or an "ask" step).
- `NoTool`: answered without calling any tool, optionally mentioning a keyword.
- `Every`: all of several checks.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Protocol

from bigloop.trace.records import RunResult

_NUMBER = re.compile(r"(?<![\w.])([-−]?)((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)")
_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")


@dataclass(kw_only=True, frozen=True)
class Outcome:
    """What a check sees of a run."""

    status: str
    answer: str | None = None
    asked: bool = False
    tools_called: tuple[str, ...] = ()

    @classmethod
    def of(cls, result: RunResult) -> Outcome:
        return cls(
            status=result.status,
            answer=result.answer,
            asked=result.status == "input_required" or any(s.kind == "ask" for s in result.steps),
            # calls the loop sent back to the model (bad arguments, unknown tool) were not made
            tools_called=tuple(
                s.name
                for s in result.tool_steps
                if s.error not in ("invalid_arguments", "unknown_tool")
            ),
        )


class Check(Protocol):
    def __call__(self, outcome: Outcome) -> tuple[bool, str]: ...


def numbers(text: str) -> list[tuple[float, int]]:
    """Every number written in `text`, with how many decimals it was written with (trailing
    zeros not counted): "$1,234.50 and -3" → [(1234.5, 1), (-3.0, 0)]."""
    found = []
    for sign, digits in _NUMBER.findall(text):
        plain = digits.replace(",", "")
        decimals = len(plain.partition(".")[2].rstrip("0"))
        value = float(plain)
        found.append((-value if sign else value, decimals))
    return found


def normalize(text: str) -> str:
    return " ".join(text.lower().split())


def mentions(text: str, phrase: str) -> bool:
    """`phrase` occurs in `text` as whole words (case-insensitive, whitespace normalised)."""
    pattern = r"(?<!\w)" + re.escape(normalize(phrase)) + r"(?!\w)"
    return re.search(pattern, normalize(text)) is not None


def _answered(outcome: Outcome) -> tuple[str | None, str]:
    """The answer text, or None and why there is none."""
    if outcome.status != "ok":
        return None, f"status {outcome.status}" + (" (asked)" if outcome.asked else "")
    if not (outcome.answer or "").strip():
        return None, "empty answer"
    return outcome.answer or "", ""


@dataclass(kw_only=True, frozen=True)
class Number:
    """Some number in the answer equals `expected`.

    Attributes:
        expected: the exact value (rounded to `places` by the check when given).
        places: the rounding the request asked for: the number must be written with at
            most `places` decimals and be a rounding of `expected` to them (within half a
            unit in the last place, so either neighbour of a half-way value counts).
        tol: absolute tolerance when no rounding was asked; default: exact for whole
            numbers, else max(0.005, 0.1% of |expected|).
    """

    expected: float
    places: int | None = None
    tol: float | None = None

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        answer, why = _answered(outcome)
        if answer is None:
            return False, why
        tol = self.tolerance()
        shown = self.expected if self.places is None else round(self.expected, self.places)
        seen = numbers(answer)
        close = [(v, d) for v, d in seen if abs(v - self.expected) <= tol]
        if self.places is not None and close:
            if any(d <= self.places for _, d in close):
                return True, f"{shown:g} found"
            return False, f"{shown:g} found but not rounded to {self.places} decimals as asked"
        if close:
            return True, f"{shown:g} found"
        return False, f"expected {shown:g} (±{tol:g}); numbers in answer: {[v for v, _ in seen]}"

    def tolerance(self) -> float:
        """How far from `expected` a number in the answer may be."""
        if self.places is not None:
            return 0.5 * 10.0**-self.places * (1 + 1e-6) + 1e-9
        if self.tol is not None:
            return self.tol
        if float(self.expected).is_integer():
            return 1e-9
        return max(0.005, 1e-3 * abs(self.expected))


@dataclass(kw_only=True, frozen=True)
class Text:
    """One of `any_of` occurs in the answer as whole words."""

    any_of: tuple[str, ...]

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        answer, why = _answered(outcome)
        if answer is None:
            return False, why
        if hit := next((p for p in self.any_of if mentions(answer, p)), None):
            return True, f"{hit!r} found"
        return False, f"none of {list(self.any_of)} in the answer"


@dataclass(kw_only=True, frozen=True)
class Date:
    """The date occurs in the answer, in ISO or spelled-out form."""

    expected: dt.date

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        answer, why = _answered(outcome)
        if answer is None:
            return False, why
        text = _ORDINAL.sub(r"\1", normalize(answer).replace(",", " ").replace(" of ", " "))
        text = " ".join(text.split())
        if any(form in text for form in self.forms()):
            return True, f"{self.expected.isoformat()} found"
        return False, f"{self.expected.isoformat()} not in the answer"

    def forms(self) -> list[str]:
        d = self.expected
        day, year = d.day, d.year
        forms = [d.isoformat()]
        for month in {d.strftime("%B").lower(), d.strftime("%b").lower()}:
            forms += [f"{month} {day} {year}", f"{day} {month} {year}"]
        return forms


@dataclass(kw_only=True, frozen=True)
class AllOf:
    """Every item occurs in the answer (whole words), and none of `forbid`."""

    items: tuple[str, ...]
    forbid: tuple[str, ...] = ()

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        answer, why = _answered(outcome)
        if answer is None:
            return False, why
        missing = [i for i in self.items if not mentions(answer, i)]
        extra = [i for i in self.forbid if mentions(answer, i)]
        if not missing and not extra:
            return True, f"all {len(self.items)} items found"
        parts = [f"missing {missing}"] if missing else []
        parts += [f"wrongly included {extra}"] if extra else []
        return False, "; ".join(parts)


@dataclass(kw_only=True, frozen=True)
class Asked:
    """The run stopped to ask the user (the task lacks a value)."""

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        if outcome.asked:
            return True, "asked"
        return False, f"answered without asking (status {outcome.status})"


@dataclass(kw_only=True, frozen=True)
class NoTool:
    """Answered directly: no tool called, a non-empty answer, one of `any_of` in it
    (when given)."""

    any_of: tuple[str, ...] = ()

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        if outcome.tools_called:
            return False, f"called {list(outcome.tools_called)}"
        if self.any_of:
            return Text(any_of=self.any_of)(outcome)
        answer, why = _answered(outcome)
        return (True, "answered without tools") if answer is not None else (False, why)


@dataclass(kw_only=True, frozen=True)
class Every:
    """All of `checks` pass."""

    checks: tuple[Check, ...]

    def __call__(self, outcome: Outcome) -> tuple[bool, str]:
        verdicts = [check(outcome) for check in self.checks]
        return all(ok for ok, _ in verdicts), "; ".join(why for _, why in verdicts)


def number(expected: float, places: int | None = None, tol: float | None = None) -> Number:
    """`Number`, with `math.isclose` float noise removed from whole results."""
    if not math.isclose(expected, round(expected), abs_tol=1e-9):
        return Number(expected=expected, places=places, tol=tol)
    return Number(expected=float(round(expected)), places=places, tol=tol)


def text(*any_of: str) -> Text:
    return Text(any_of=any_of)


def date(iso: str) -> Date:
    return Date(expected=dt.date.fromisoformat(iso))


def all_of(items: tuple[str, ...] | list[str], forbid: tuple[str, ...] | list[str] = ()) -> AllOf:
    return AllOf(items=tuple(items), forbid=tuple(forbid))


def every(*checks: Check) -> Every:
    return Every(checks=checks)
