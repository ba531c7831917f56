"""Routing: which of several atoms that can do a step does it, by constraints and weights.

`route` filters candidates by hard constraints (private data never goes to a non-local
atom; latency and cost budgets; a reliability floor) and orders the feasible ones by the
user's weights; the decision, with the Pareto front over (cost, latency, reliability), is a
`Route` that a trace can store.

Model wrappers that act on a route (fallback, hedging, cheap/strong cascade) are in
`bigloop.routing.cascade`; learning which atom to prefer from traces is in
`bigloop.optimize`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.card import AtomCard


@dataclass(kw_only=True)
class Constraints:
    """Hard limits a routed atom must meet.

    Attributes:
        private: the data may not leave the machine (only atoms with privacy "local").
        max_latency_s: expected latency budget per call.
        max_cost: cost budget per call.
        min_reliability: observed or declared success rate floor.
    """

    private: bool = False
    max_latency_s: float | None = None
    max_cost: float | None = None
    min_reliability: float = 0.0


@dataclass(kw_only=True)
class Weights:
    """How much each objective matters among feasible atoms (higher = more important)."""

    cost: float = 1.0
    latency: float = 1.0
    reliability: float = 1.0


@dataclass(kw_only=True)
class Route:
    """A routing decision: the order to try atoms in, the Pareto front, and why others
    were left out."""

    order: list[str]
    pareto: list[str]
    rejected: dict[str, str] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "pareto": self.pareto,
            "rejected": self.rejected,
            "scores": self.scores,
        }


def route(
    cards: Sequence[AtomCard],
    constraints: Constraints | None = None,
    weights: Weights | None = None,
) -> Route:
    """Feasible atoms ordered by weighted score (lower cost and latency, higher
    reliability are better; each objective scaled to [0, 1] across the candidates).

    Raises:
        UserError: no candidate meets the constraints (the message says which failed why).
    """
    c = constraints or Constraints()
    w = weights or Weights()
    rejected: dict[str, str] = {}
    feasible = []
    for card in cards:
        latency = card.latency_s or 0.0
        if c.private and card.privacy != "local":
            rejected[card.name] = f"private data may not go to {card.privacy}"
        elif c.max_latency_s is not None and latency > c.max_latency_s:
            rejected[card.name] = f"latency {latency:g} s > {c.max_latency_s:g} s"
        elif c.max_cost is not None and card.cost > c.max_cost:
            rejected[card.name] = f"cost {card.cost:g} > {c.max_cost:g}"
        elif card.reliability < c.min_reliability:
            rejected[card.name] = f"reliability {card.reliability:.2f} < {c.min_reliability:.2f}"
        else:
            feasible.append(card)
    if not feasible:
        reasons = "; ".join(f"{k}: {v}" for k, v in rejected.items()) or "no candidates"
        raise UserError(f"No atom meets the routing constraints ({reasons}).")

    def scale(values: list[float]) -> list[float]:
        lo, hi = min(values), max(values)
        return [0.0 if hi == lo else (v - lo) / (hi - lo) for v in values]

    costs = scale([f.cost for f in feasible])
    latencies = scale([f.latency_s or 0.0 for f in feasible])
    unreliability = scale([1.0 - f.reliability for f in feasible])
    scores = {
        f.name: w.cost * costs[i] + w.latency * latencies[i] + w.reliability * unreliability[i]
        for i, f in enumerate(feasible)
    }
    order = sorted(scores, key=lambda n: scores[n])
    return Route(order=order, pareto=pareto_front(feasible), rejected=rejected, scores=scores)


def pareto_front(cards: Sequence[AtomCard]) -> list[str]:
    """Names of the cards no other card beats on cost, latency and reliability at once."""

    def objectives(card: AtomCard) -> tuple[float, float, float]:
        return (card.cost, card.latency_s or 0.0, -card.reliability)

    front = []
    for a in cards:
        oa = objectives(a)
        dominated = any(
            all(x <= y for x, y in zip(objectives(b), oa, strict=True)) and objectives(b) != oa
            for b in cards
            if b is not a
        )
        if not dominated:
            front.append(a.name)
    return front
