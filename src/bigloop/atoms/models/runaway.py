"""Cutting runaway generation short: a reply that only repeats itself or grows a number.

Inside the call grammar a small model can write a string or a number that never ends
("100 * 1000000000…" until the turn's token limit: 540 tokens, 69 s, for a call that was
then dropped as truncated). `Runaway` is a llama.cpp stopping criterion that ends the
generation as soon as its last tokens are one short cycle repeated, or a run of digits no
argument needs; the reader then keeps the calls that were complete before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_PERIOD = 16
"""Cycles of up to this many tokens are looked for (a phrase said again and again: ", the
rise of Christianity in Egypt and Turkey" 40 times, seen on BFCL parallel)."""
MIN_SPAN = 32
"""A cycle must cover at least this many tokens..."""
MIN_REPEATS = 8
"""... and repeat at least this many times (a short cycle: "0, 0, 0, …" ends a list of
ten zeros at most)..."""
MIN_PHRASE_REPEATS = 4
"""... or this many times, a cycle longer than 4 tokens."""
MAX_DIGITS = 24
"""Longer runs of digits are no argument's value (int64 has 19 digits)."""
_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")


def repeating(tokens: Sequence[int]) -> bool:
    """Whether `tokens` ends in one cycle of at most `MAX_PERIOD` tokens repeated over at
    least `MIN_SPAN` tokens, `MIN_REPEATS` times (`MIN_PHRASE_REPEATS` for a cycle longer
    than 4 tokens)."""
    for period in range(1, MAX_PERIOD + 1):
        span = max(MIN_SPAN, (MIN_REPEATS if period <= 4 else MIN_PHRASE_REPEATS) * period)
        if len(tokens) < span:
            continue
        tail = tokens[-span:]
        if all(tail[i] == tail[i - period] for i in range(period, span)):
            return True
    return False


@dataclass(kw_only=True)
class Runaway:
    """A llama.cpp stopping criterion: True once the generated tokens run away.

    Args:
        start: where generation starts in the token ids it is given (the prompt's length;
            None: as many as it is first given).
        text: detokenizes token ids (to see runs of digits across tokens).
        stop: also ends the generation when True for the text generated so far (the
            caller's own test; not counted as a runaway).
    """

    start: int | None
    text: Callable[[list[int]], str]
    stop: Callable[[str], bool] | None = None
    stopped: bool = field(default=False, init=False)
    """Whether `stop` ended the generation."""
    cut: bool = field(default=False, init=False)
    """Whether it stopped the generation."""

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        """`input_ids`: every token id so far (a numpy array from llama.cpp)."""
        if self.start is None:
            self.start = len(input_ids)
        generated = [int(t) for t in input_ids[self.start :]]
        if repeating(generated) or _DIGITS.search(self.text(generated[-(MAX_DIGITS + 8) :])):
            self.cut = True
        elif self.stop is not None and not self.stopped:
            self.stopped = self.stop(self.text(generated))
        return self.cut or self.stopped
