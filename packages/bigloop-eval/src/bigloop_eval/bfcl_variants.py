"""New BFCL cases made from a training case by changing its numbers consistently in the
request and in the ground truth, so that BFCL's own checker still scores them: the data
`bigloop optimize --step data` generates (`bigloop.optimize.data`, LoopTool scaled down).
A number is changed only where that is safe to decide without knowing what it means;
a case with none gives no variant, never a guess."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator
from typing import Any

from bigloop_eval.bfcl_data import Case


def number_variant(case: Case, rng: random.Random, new_id: str) -> Case | None:
    """`case` with each number that can be changed safely replaced, in the messages and
    in the ground truth alike; None when no number can be (never a guess).

    A number can be changed when it is a top-level accepted value of the ground truth
    (not 0, not a boolean, not an enumerated choice, nowhere inside a list, a dict or a
    string of the ground truth) and is written exactly once in the messages, as a whole
    token (not in a word, a range, a date, a time or a percentage). Its new value keeps
    the sign, the decimals as written and the leading half of the digits (`_draw`), and
    is no number already in the case. Only Python cases: Java and JavaScript values are
    strings the checker converts.
    """
    if case.language != "python" or not case.answer:
        return None
    text = "\n".join(m["content"] for m in case.messages)
    taken = {float(t) for t in re.findall(r"\d+(?:\.\d+)?", text)}
    taken |= {abs(v) for inside in (False, True) for v in _numbers(case.answer, inside=inside)}
    swaps: dict[str, str] = {}  # the token as written -> its replacement
    values: dict[float, float] = {}  # the value in the ground truth -> its replacement
    for value, form in _changeable(case, text):
        decimals = len(form.partition(".")[2])
        new = _draw(abs(value), decimals, rng, taken)
        if new is None:
            continue
        taken.add(new)
        values[value] = math.copysign(new, value)
        swaps[form] = _token(values[value], decimals)
    if not swaps:
        return None
    pattern = _whole("|".join(re.escape(f) for f in sorted(swaps, key=len, reverse=True)))
    messages = [
        {**m, "content": pattern.sub(lambda hit: swaps[hit.group(0)], m["content"])}
        for m in case.messages
    ]
    answer = [
        {name: {p: [_swapped(v, values) for v in ok] for p, ok in params.items()}}
        for call in case.answer
        for name, params in call.items()
    ]
    return Case(
        id=new_id,
        category=case.category,
        messages=messages,
        functions=case.functions,
        answer=answer,
    )


def _changeable(case: Case, text: str) -> Iterator[tuple[float, str]]:
    """The ground truth's numbers that can be changed, each with the one token writing
    it in `text`."""
    assert case.answer is not None
    unsafe = _unsafe(case)
    accepted = [v for call in case.answer for p in _params(call) for ok in p.values() for v in ok]
    strings = [v for v in accepted if isinstance(v, str)]
    for value in dict.fromkeys(_numbers(case.answer, inside=False)):
        if value == 0 or value in unsafe or "e" in repr(value):
            continue
        forms = [repr(value)]
        if isinstance(value, float) and value.is_integer():
            forms.append(str(int(value)))
        hits = [(f, len(_whole(re.escape(f)).findall(text))) for f in forms]
        written = [f for f, count in hits if count]
        if sum(count for _, count in hits) != 1:
            continue
        form = written[0]
        if any(re.search(rf"(?<!\d){re.escape(form)}(?!\d)", s) for s in strings):
            continue
        if "." in form and any(
            isinstance(v, int) and v == value for v in _numbers(case.answer, inside=False)
        ):
            continue  # an integer written with decimals: its new value must stay whole
        yield value, form


def _unsafe(case: Case) -> set[float]:
    """Numbers the ground truth holds inside a list or dict, or as an enumerated choice:
    changing them would need to know what they mean."""
    assert case.answer is not None
    unsafe: set[float] = set(_numbers(case.answer, inside=True))
    docs = {f["name"]: f.get("parameters", {}).get("properties", {}) for f in case.functions}
    for call in case.answer:
        for name, params in call.items():
            for param, ok in params.items():
                if "enum" in docs.get(name, {}).get(param, {}):
                    unsafe |= {v for v in ok if _is_number(v)}
    return unsafe


def _draw(value: float, decimals: int, rng: random.Random, taken: set[float]) -> float | None:
    """A new magnitude for `value` (positive, written with `decimals`), none of `taken`:
    the same decimals and number of digits, the leading half of the digits kept (a year
    stays in its century, 0.85 becomes 0.8x), within half to twice the value."""
    scale: int = 10**decimals
    written = round(value * scale)
    digits = len(str(written))
    unit: int = 10 ** (digits - digits // 2)
    prefix = written // unit * unit if digits > 1 else 0
    low = max(prefix, math.ceil(written / 2), 1)
    high = min(prefix + unit - 1 if digits > 1 else 9, 2 * written)
    for _ in range(20 if low <= high else 0):
        new = rng.randint(low, high) / scale
        if new != value and new not in taken:
            return new
    return None


def _swapped(value: Any, values: dict[float, float]) -> Any:
    if not _is_number(value) or value not in values:
        return value
    new = values[value]
    return int(new) if isinstance(value, int) else float(new)


def _numbers(answer: list[dict[str, Any]], *, inside: bool) -> list[int | float]:
    """The numbers among the accepted values of the parameters, in order; with `inside`,
    the numbers inside the accepted lists and dicts instead."""
    found: list[int | float] = []

    def walk(node: Any, top: bool) -> None:
        if _is_number(node) and top != inside:
            found.append(node)
        elif isinstance(node, list | dict) and inside:
            for child in node.values() if isinstance(node, dict) else node:
                walk(child, False)

    for call in answer:
        for params in _params(call):
            for ok in params.values():
                for v in ok:
                    walk(v, True)
    return found


def _params(call: dict[str, Any]) -> list[dict[str, list[Any]]]:
    return [p for p in call.values() if isinstance(p, dict)]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _token(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}" if decimals else str(int(value))


def _whole(pattern: str) -> re.Pattern[str]:
    """`pattern` as a whole number: not part of a word, a longer number, a range, a date,
    a time or a percentage (4% is 0.04 to a function)."""
    return re.compile(rf"(?<![\w.,/:-])(?:{pattern})(?![\w%/:-]|[.,]\d)")
