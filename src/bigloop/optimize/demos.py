"""Demonstrations bootstrapped from successful runs (DSPy's BootstrapFewShot with random
search, in small): the successful training runs' replies form a pool, and a few random
sets of them, varied in the tools they show, become candidates that the dev metric
chooses between."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from bigloop.config import Demo

MAX_DEMO_CHARS = 400
"""A demonstration longer than this (request + reply) costs more prompt than it teaches."""


def demo_pool(demos: Sequence[Demo | None]) -> list[Demo]:
    """Distinct, short demonstrations (one per request)."""
    pool: dict[str, Demo] = {}
    for demo in demos:
        if demo is None or demo.task in pool:
            continue
        data = demo.model_dump(mode="json")
        size = len(demo.task) + len(json.dumps(data["calls"])) + len(demo.answer or "")
        if size <= MAX_DEMO_CHARS:
            pool[demo.task] = demo
    return list(pool.values())


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
