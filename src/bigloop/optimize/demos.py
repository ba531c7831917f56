"""Demonstrations bootstrapped from successful runs (DSPy's BootstrapFewShot with random
search, in small): the successful training runs' replies form a pool, and a few random
sets of them, varied in the tools they show, become candidates that the dev metric
chooses between."""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Sequence

from bigloop.config import Demo

SPREAD = 2.0
"""A demonstration more than this many times the size of the bench's typical successful
run (the median, request + reply) costs more prompt than it teaches. Relative, because
what is long differs by task: one call for a simple request (~200 characters), several
for a request that names several items (~500)."""


def size(demo: Demo) -> int:
    """A demonstration's length in characters: request, calls and answer."""
    data = demo.model_dump(mode="json")
    return len(demo.task) + len(json.dumps(data["calls"])) + len(demo.answer or "")


def demo_pool(demos: Sequence[Demo | None], *, spread: float = SPREAD) -> list[Demo]:
    """Distinct demonstrations (one per request), none longer than `spread` times the
    median size of all of them."""
    distinct: dict[str, Demo] = {}
    for demo in demos:
        if demo is not None and demo.task not in distinct:
            distinct[demo.task] = demo
    if not distinct:
        return []
    limit = spread * statistics.median(size(d) for d in distinct.values())
    return [d for d in distinct.values() if size(d) <= limit]


def demo_sets(
    pool: Sequence[Demo], *, sizes: Sequence[int] = (2, 4), per_size: int = 2, seed: int = 0
) -> list[list[Demo]]:
    """`per_size` random sets of each size, each drawn to show as many different tools
    as the pool allows (a set of four calls to one function teaches less)."""
    rng = random.Random(seed)
    sets: list[list[Demo]] = []
    for size in sizes:
        if len(pool) < size:
            continue
        for _ in range(per_size):
            chosen = _varied(list(pool), size, rng)
            if chosen not in sets:
                sets.append(chosen)
    return sets


def _varied(pool: list[Demo], size: int, rng: random.Random) -> list[Demo]:
    rng.shuffle(pool)
    chosen: list[Demo] = []
    shown: set[str] = set()
    for demo in pool:
        tools = {c.name for c in demo.calls} or {"(answer)"}
        if not tools & shown:
            chosen.append(demo)
            shown |= tools
        if len(chosen) == size:
            return chosen
    rest = [d for d in pool if d not in chosen]
    return chosen + rest[: size - len(chosen)]
