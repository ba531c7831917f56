"""What the traces say about each atom: calls, success rate, latency, tokens; and atom
cards corrected by it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bigloop.atoms.card import AtomCard
from bigloop.trace.store import StepOutcome, TraceStore

NOT_MADE = {"denied"}
"""Step errors of tool calls that were never made (the approval gate refused them): they
say nothing about the tool, so they are not counted as its calls."""


@dataclass(kw_only=True)
class Observed:
    """An atom's behaviour in the traces."""

    name: str
    calls: int
    success_rate: float
    p50_s: float
    p95_s: float
    tokens_per_call: float


def observe(store: TraceStore) -> dict[str, Observed]:
    """Per atom (tool or model) in a trace store: calls, success rate, p50/p95 seconds,
    tokens per call. A call the approval gate denied was not made, so it is not counted."""
    by: dict[str, list[StepOutcome]] = {}
    for step in store.step_outcomes(kinds={"tool", "model"}):
        if step.kind == "tool" and step.error in NOT_MADE:
            continue
        by.setdefault(step.name, []).append(step)
    out = {}
    for name, steps in by.items():
        seconds = sorted(s.seconds for s in steps)
        n = len(steps)
        out[name] = Observed(
            name=name,
            calls=n,
            success_rate=sum(1 for s in steps if s.error is None) / n,
            p50_s=statistics.median(seconds),
            p95_s=seconds[min(n - 1, int(0.95 * n))],
            tokens_per_call=sum(s.prompt_tokens + s.completion_tokens for s in steps) / n,
        )
    return out


def learn_cards(cards: Sequence[AtomCard], store: TraceStore) -> list[AtomCard]:
    """`cards` with reliability and latency replaced by what the traces observed (cards
    of atoms never traced are returned unchanged)."""
    seen = observe(store)
    return [
        replace(c, reliability=seen[c.name].success_rate, latency_s=seen[c.name].p50_s)
        if c.name in seen
        else c
        for c in cards
    ]
