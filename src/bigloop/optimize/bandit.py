"""Which atom to prefer per kind of task, learned from outcomes by Thompson sampling on a
Beta posterior of each atom's success rate."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from bigloop._errors import UserError
from bigloop.routing.cascade import credits
from bigloop.trace.store import TraceStore


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
    def from_store(cls, store: TraceStore, kind_of: Callable[[str], str]) -> BanditPolicy:
        """A policy that has seen every finished run in `store`; `kind_of(task)` names the
        kind of task a run's task text is. Routed runs are credited reply by reply as
        `RoutedModel` does as they finish (`credits`); other runs count once for their
        model, a success when "ok"."""
        policy = cls()
        for run in store.runs(limit=1_000_000):
            if run.status not in ("ok", "failed", "budget_exceeded"):
                continue
            steps = store.steps(run.run_id)
            members = sorted(
                {
                    str(n)
                    for s in steps
                    if s.kind == "model" and isinstance(s.input, dict)
                    for n in (s.input.get("route") or {}).get("order", [])
                }
            )
            routed = credits(steps, run.status, members) if members else []
            for atom, success in routed or [(run.model, run.status == "ok")]:
                policy.update(kind_of(run.task), atom, success)
        return policy
