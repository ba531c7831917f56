"""Routing: which of several atoms that can do a step does it — by constraints, weights,
fallbacks, redundancy, and what the traces taught.

- `route` filters candidates by hard constraints (private data never goes to a non-local
  atom; latency and cost budgets) and orders the feasible ones by the user's weights; the
  decision, with the Pareto front over (cost, latency, reliability), is a `Route` that a
  trace can store.
- `FallbackModel` tries models in order when one fails or times out; `HedgedModel` sends a
  critical request to a second model when the first is slow and takes the first valid
  reply; `CascadeModel` asks a cheap model first and escalates to a strong one when the
  cheap reply does not pass a check (cheap/strong routing).
- `BanditPolicy` learns from outcomes which atom to prefer per kind of task (Thompson
  sampling on a Beta posterior of each atom's success rate).
- `learn_cards` turns a trace store into observed card properties: success rate,
  p50/p95 latency, tokens per call.
"""

from __future__ import annotations

import asyncio
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolSpec,
)


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


class FallbackModel:
    """Tries `models` in order: a model that fails (unreachable, error) or takes longer than
    `timeout_s` hands the request to the next. The reply says which model answered."""

    def __init__(self, models: Sequence[ChatModel], *, timeout_s: float | None = None) -> None:
        if not models:
            raise UserError("FallbackModel needs at least one model.")
        self.models = list(models)
        self.timeout_s = timeout_s
        self.last: str | None = None

    @property
    def name(self) -> str:
        return "fallback(" + ", ".join(m.name for m in self.models) + ")"

    @property
    def card(self) -> AtomCard:
        cards = [m.card for m in self.models]
        return _redundant(self.name, "fallback chain", cards, max(c.cost for c in cards))

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        failures = []
        for model in self.models:
            try:
                turn = model.chat(messages, tools, settings)
                response = await (
                    asyncio.wait_for(turn, self.timeout_s) if self.timeout_s else turn
                )
            except (ModelUnavailable, TimeoutError) as e:
                failures.append(f"{model.name}: {e or 'timed out'}")
                continue
            self.last = model.name
            return response
        raise ModelUnavailable("Every model in the fallback chain failed: " + "; ".join(failures))


class RoutedModel:
    """A model atom that routes every request among `models` by their cards (`route`),
    then falls back along the route's order. `last_route` holds the latest decision, which
    the loop writes into the trace (order, Pareto front, rejections)."""

    def __init__(
        self,
        models: Sequence[ChatModel],
        *,
        constraints: Constraints | None = None,
        weights: Weights | None = None,
        cards: Sequence[AtomCard] | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.models = {m.name: m for m in models}
        self.constraints = constraints
        self.weights = weights
        self.cards = list(cards) if cards is not None else [m.card for m in models]
        self.timeout_s = timeout_s
        self.last_route: Route | None = None
        self.last: str | None = None
        route(self.cards, constraints, weights)  # fail fast on impossible constraints

    @property
    def name(self) -> str:
        return "routed(" + ", ".join(self.models) + ")"

    @property
    def card(self) -> AtomCard:
        first = self.models[route(self.cards, self.constraints, self.weights).order[0]]
        return replace(first.card, name=self.name, description="routed model")

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        decision = route(self.cards, self.constraints, self.weights)
        self.last_route = decision
        chain = FallbackModel([self.models[n] for n in decision.order], timeout_s=self.timeout_s)
        response = await chain.chat(messages, tools, settings)
        self.last = chain.last
        return response


class HedgedModel:
    """Redundant calls for critical steps: ask `primary`; if it has not answered within
    `hedge_after_s`, also ask `backup`; the first valid reply wins, the other is cancelled."""

    def __init__(self, primary: ChatModel, backup: ChatModel, *, hedge_after_s: float) -> None:
        self.primary, self.backup = primary, backup
        self.hedge_after_s = hedge_after_s
        self.last: str | None = None

    @property
    def name(self) -> str:
        return f"hedged({self.primary.name}, {self.backup.name})"

    @property
    def card(self) -> AtomCard:
        cards = [self.primary.card, self.backup.card]
        return _redundant(self.name, "hedged pair", cards, sum(c.cost for c in cards))

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        first = asyncio.ensure_future(self.primary.chat(messages, tools, settings))
        done, _ = await asyncio.wait({first}, timeout=self.hedge_after_s)
        if done and _valid(first):
            self.last = self.primary.name
            return first.result()
        racers = {first: self.primary.name} if not done else {}
        second = asyncio.ensure_future(self.backup.chat(messages, tools, settings))
        racers[second] = self.backup.name
        try:
            while racers:
                done, _ = await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    name = racers.pop(task)
                    if _valid(task):
                        self.last = name
                        return task.result()
            if first.done() and not first.cancelled() and first.exception() is None:
                self.last = self.primary.name
                return first.result()  # both replied, neither valid: the primary's, to repair
            raise ModelUnavailable(f"{self.name}: neither model gave a reply.")
        finally:
            for task in racers:
                task.cancel()


Check = Callable[[ModelResponse, list[ToolSpec]], bool]


def calls_are_valid(response: ModelResponse, tools: list[ToolSpec]) -> bool:
    """The default cascade check: a readable reply whose calls name offered tools with
    arguments that satisfy their schemas."""
    from bigloop.schedule.call import schema_problems

    if response.error:
        return False
    specs = {t.name: t for t in tools}
    return all(
        c.name in specs and not schema_problems(c.arguments, specs[c.name].parameters)
        for c in response.tool_calls
    )


class CascadeModel:
    """Cheap/strong routing: ask `cheap` first; escalate to `strong` when its reply fails
    `check` (default: valid calls to offered tools). `escalated` counts escalations."""

    def __init__(self, cheap: ChatModel, strong: ChatModel, *, check: Check | None = None) -> None:
        self.cheap, self.strong = cheap, strong
        self.check = check or calls_are_valid
        self.escalated = 0
        self.calls = 0
        self.last: str | None = None

    @property
    def name(self) -> str:
        return f"cascade({self.cheap.name} → {self.strong.name})"

    @property
    def card(self) -> AtomCard:
        return replace(self.strong.card, name=self.name, description="cheap/strong cascade")

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        self.calls += 1
        try:
            response = await self.cheap.chat(messages, tools, settings)
            if self.check(response, tools):
                self.last = self.cheap.name
                return response
        except ModelUnavailable:
            pass
        self.escalated += 1
        self.last = self.strong.name
        return await self.strong.chat(messages, tools, settings)


class BanditPolicy:
    """Learns which atom to prefer per kind of task from outcomes (Thompson sampling).

    `choose(kind, atoms)` samples each atom's success rate from Beta(1 + wins, 1 + losses)
    and returns the best draw; `update(kind, atom, success)` records an outcome;
    `from_store` replays a trace store's runs (an "ok" run is a success of its model).
    """

    def __init__(self, *, seed: int | None = 0) -> None:
        self.stats: dict[tuple[str, str], list[int]] = {}
        self.rng = random.Random(seed)

    def update(self, kind: str, atom: str, success: bool) -> None:
        wins_losses = self.stats.setdefault((kind, atom), [0, 0])
        wins_losses[0 if success else 1] += 1

    def mean(self, kind: str, atom: str) -> float:
        wins, losses = self.stats.get((kind, atom), [0, 0])
        return (1 + wins) / (2 + wins + losses)

    def choose(self, kind: str, atoms: Sequence[str]) -> str:
        if not atoms:
            raise UserError("BanditPolicy.choose needs at least one atom.")

        def draw(atom: str) -> float:
            wins, losses = self.stats.get((kind, atom), [0, 0])
            return self.rng.betavariate(1 + wins, 1 + losses)

        return max(atoms, key=draw)

    @classmethod
    def from_store(cls, store: Any, kind_of: Callable[[str], str]) -> BanditPolicy:
        policy = cls()
        for run in store.runs(limit=1_000_000):
            if run.status in ("ok", "failed", "budget_exceeded"):
                policy.update(kind_of(run.task), run.model, run.status == "ok")
        return policy


@dataclass(kw_only=True)
class Observed:
    """An atom's behaviour in the traces."""

    name: str
    calls: int
    success_rate: float
    p50_s: float
    p95_s: float
    tokens_per_call: float


def observe(store: Any) -> dict[str, Observed]:
    """Per atom (tool or model) in a trace store: calls, success rate, p50/p95 seconds,
    tokens per call."""
    rows = store._db.execute(
        "SELECT name, error, seconds, prompt_tokens + completion_tokens FROM steps "
        "WHERE kind IN ('tool', 'model')"
    ).fetchall()
    by: dict[str, list[tuple[str | None, float, int]]] = {}
    for name, error, seconds, tokens in rows:
        by.setdefault(name, []).append((error, seconds, tokens))
    out = {}
    for name, steps in by.items():
        seconds = sorted(s for _, s, _ in steps)
        n = len(steps)
        out[name] = Observed(
            name=name,
            calls=n,
            success_rate=sum(1 for e, _, _ in steps if e is None) / n,
            p50_s=statistics.median(seconds),
            p95_s=seconds[min(n - 1, int(0.95 * n))],
            tokens_per_call=sum(t for _, _, t in steps) / n,
        )
    return out


def learn_cards(cards: Sequence[AtomCard], store: Any) -> list[AtomCard]:
    """`cards` with reliability and latency replaced by what the traces observed (cards
    of atoms never traced are returned unchanged)."""
    seen = observe(store)
    return [
        replace(c, reliability=seen[c.name].success_rate, latency_s=seen[c.name].p50_s)
        if c.name in seen
        else c
        for c in cards
    ]


def _valid(task: asyncio.Future[ModelResponse]) -> bool:
    if task.cancelled() or task.exception() is not None:
        return False
    return task.result().error is None


def _redundant(name: str, description: str, cards: list[AtomCard], cost: float) -> AtomCard:
    """The card of atoms used as one: local only if all are; it fails only if all fail."""
    unreliability = 1.0
    for c in cards:
        unreliability *= 1 - c.reliability
    return AtomCard(
        name=name,
        kind="model",
        description=description,
        privacy="local" if all(c.privacy == "local" for c in cards) else "mixed",
        cost=cost,
        reliability=1 - unreliability,
    )
