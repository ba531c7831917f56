"""Policy and schedule search: which of a bench's knobs (policies on or off, planner,
clarification) to turn, by successive halving — every candidate on a few dev examples,
the better half on twice as many, until one rung covers all of dev — with seconds per
example as a second objective beside accuracy (`pareto_front`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example
from bigloop.optimize.evaluate import Evaluator, Scores


@dataclass(kw_only=True)
class Trial:
    """A candidate's scores on the largest rung it reached."""

    config: LoopConfig
    label: str
    scores: Scores
    rung: int


def candidates(
    base: LoopConfig, knobs: Sequence[dict[str, object]]
) -> list[tuple[str, LoopConfig]]:
    """The base config and one candidate per knob: a label and the config it gives.
    An "off" knob adds to the base's switched-off policies."""
    out = [("base", base)]
    for knob in knobs:
        update = dict(knob)
        if "off" in update:
            off = [str(p) for p in update["off"]]  # type: ignore[attr-defined]
            update["off"] = sorted({*base.off, *off})
        config = LoopConfig.model_validate({**base.model_dump(), **update})
        label = ", ".join(f"{k}={v}" for k, v in knob.items())
        out.append((label, config))
    return out


async def successive_halving(
    evaluator: Evaluator,
    pool: Sequence[tuple[str, LoopConfig]],
    dev: Sequence[Example],
    *,
    first: int = 8,
    eta: int = 2,
) -> list[Trial]:
    """Every trial, at the rung it reached; the last rung's are scored on all of `dev`.
    Ties go to the faster candidate, then to the earlier one (the base first)."""
    alive = list(enumerate(pool))
    size = min(first, len(dev))
    trials: dict[int, Trial] = {}
    rung = 0
    while True:
        ranked = []
        for order, (label, config) in alive:
            scores = await evaluator.score(config, dev[:size])
            trials[order] = Trial(config=config, label=label, scores=scores, rung=rung)
            ranked.append((-scores.mean, scores.seconds, order))
        if size >= len(dev):
            break
        ranked.sort()
        keep = max(1, math.ceil(len(alive) / eta))
        alive = [(order, pool[order]) for *_, order in ranked[:keep]]
        size = min(len(dev), size * eta)
        rung += 1
    return list(trials.values())


def pareto_front(trials: Sequence[Trial]) -> list[Trial]:
    """The trials of the last rung that no other there beats on both accuracy and
    seconds per example, most accurate first."""
    top = max(t.rung for t in trials)
    return nondominated([t for t in trials if t.rung == top])


class _Scored(Protocol):
    @property
    def scores(self) -> Scores: ...


S = TypeVar("S", bound=_Scored)


def nondominated(items: Sequence[S]) -> list[S]:
    """The items no other beats on both accuracy and seconds per example (at least as
    good on both, better on one), most accurate first, ties faster first."""
    front = [
        t
        for t in items
        if not any(
            o.scores.mean >= t.scores.mean
            and o.scores.seconds <= t.scores.seconds
            and (o.scores.mean > t.scores.mean or o.scores.seconds < t.scores.seconds)
            for o in items
        )
    ]
    return sorted(front, key=lambda t: (-t.scores.mean, t.scores.seconds))
