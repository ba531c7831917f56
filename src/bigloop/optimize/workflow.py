"""Workflow search (the review's §6.2; AFlow's search over workflow structures): an
evolutionary search over the loop's structure rather than one knob at a time.

A structure is a choice for each gene — the planner (ReAct, a task graph, tree search,
the automatic choice), self-consistency (`vote`: one reply per turn or the most common
of three, AFlow's ScEnsemble), the clarification rule, and where the bench offers them
escalation to a stronger model and a library of made tools. The search starts from the
current config; each generation takes a parent from the Pareto front (accuracy against
seconds per example on dev) and changes one of its genes to a value no structure tried
had, so combinations are reached that the policy step's one-knob-at-a-time candidates
never are. A child is first scored on the first third of dev and stops there (pruned)
when it is behind its parent on those examples; survivors are scored on all of dev.
The front, every trial and the search's cost go into the config's provenance.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example
from bigloop.optimize.evaluate import Evaluator, Scores
from bigloop.optimize.search import nondominated

GENES: dict[str, tuple[object, ...]] = {
    "planner": ("auto", "react", "graph", "search"),
    "vote": (1, 3),
    "clarify": ("ungrounded", "missing"),
}
"""The structure's genes and their values (the bench may add escalate, tools_dir)."""


@dataclass(kw_only=True)
class Trial:
    """One structure tried: its genes, its scores on the dev examples it reached."""

    genes: dict[str, object]
    config: LoopConfig
    scores: Scores
    full: bool
    parent: int | None

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.genes.items())


def genes_of(config: LoopConfig, genes: Mapping[str, Sequence[object]]) -> dict[str, object]:
    return {name: getattr(config, name) for name in genes}


def front(trials: Sequence[Trial]) -> list[Trial]:
    """The fully scored trials no other beats on both accuracy and seconds, most
    accurate first (ties: faster first)."""
    return nondominated([t for t in trials if t.full])


async def search(
    evaluator: Evaluator,
    base: LoopConfig,
    dev: Sequence[Example],
    *,
    genes: Mapping[str, Sequence[object]] | None = None,
    budget: int = 6,
    seed: int = 0,
    log: Callable[[str], None] = lambda line: None,
) -> list[Trial]:
    """Every trial of a search of `budget` children from `base` (the first trial)."""
    genes = dict(genes or GENES)
    rng = random.Random(f"workflow:{seed}")
    probe = list(dev[: max(1, len(dev) // 3)])
    trials = [
        Trial(
            genes=genes_of(base, genes),
            config=base,
            scores=await evaluator.score(base, dev),
            full=True,
            parent=None,
        )
    ]
    seen = {_key(trials[0].genes)}
    for _ in range(budget):
        child = _mutate(front(trials), genes, seen, rng)
        if child is None:
            log("[workflow] every structure one change from the front was tried")
            break
        parent, child_genes = child
        seen.add(_key(child_genes))
        config = LoopConfig.model_validate({**parent.config.model_dump(), **child_genes})
        early = await evaluator.score(config, probe)
        behind = early.right < _right_on(parent, probe)
        scores = early if behind else await evaluator.score(config, dev)
        trial = Trial(
            genes=child_genes,
            config=config,
            scores=scores,
            full=not behind,
            parent=trials.index(parent),
        )
        trials.append(trial)
        where = (
            f"{early.right}/{len(probe)} on the first dev, pruned"
            if behind
            else (f"{scores.right}/{len(dev)} dev")
        )
        log(f"[workflow] {trial.label}: {where}, {scores.seconds:.1f} s/example")
    return trials


def _mutate(
    parents: list[Trial],
    genes: Mapping[str, Sequence[object]],
    seen: set[str],
    rng: random.Random,
) -> tuple[Trial, dict[str, object]] | None:
    """A parent from `parents` and its genes with one changed to an unseen structure."""
    options = [
        (parent, {**parent.genes, name: value})
        for parent in parents
        for name, values in genes.items()
        for value in values
        if value != parent.genes[name] and _key({**parent.genes, name: value}) not in seen
    ]
    return rng.choice(options) if options else None


def _right_on(trial: Trial, examples: Sequence[Example]) -> int:
    return sum(int(trial.scores.outcomes[e.id].score >= 1) for e in examples)


def _key(genes: dict[str, object]) -> str:
    return repr(sorted(genes.items(), key=lambda kv: kv[0]))


def record(trials: Sequence[Trial], dev_n: int) -> dict[str, Any]:
    """The search as data for the provenance: every trial and the front."""
    return {
        "trials": [
            {
                "genes": t.genes,
                "right": t.scores.right,
                "n": len(t.scores.outcomes),
                "full_dev": t.full,
                "s_per_example": round(t.scores.seconds, 3),
                "parent": t.parent,
            }
            for t in trials
        ],
        "front": [
            {"genes": t.genes, "dev": round(t.scores.mean, 4), "s_per_example": t.scores.seconds}
            for t in front(trials)
        ],
        "dev_n": dev_n,
    }
