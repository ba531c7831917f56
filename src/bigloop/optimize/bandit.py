"""Which atom to prefer per kind of task, learned from outcomes by Thompson sampling on a
Beta posterior of each atom's success rate."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from bigloop._errors import UserError
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
        kind of task a run's task text is. A run counts for the model that wrote its last
        reply (a routed run's `answered_by`), else for the run's model; a success is an
        "ok" run."""
        policy = cls()
        for run in store.runs(limit=1_000_000):
            if run.status in ("ok", "failed", "budget_exceeded"):
                replies = [s for s in store.steps(run.run_id) if s.kind == "model"]
                info = replies[-1].input if replies and isinstance(replies[-1].input, dict) else {}
                atom = str(info.get("answered_by") or run.model)
                policy.update(kind_of(run.task), atom, run.status == "ok")
        return policy
