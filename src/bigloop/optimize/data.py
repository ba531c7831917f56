"""Error-driven training data: group the training failures by kind, make new cases like
the failing ones, and run them once under the current config (re-probe), so the steps
after this one learn from more examples of what goes wrong.

This is LoopTool's error-driven data expansion (Zhang et al., 2025, "LoopTool: Closing
the Data-Training Loop for Robust LLM Tool Calls", arXiv:2511.09148: probe the model,
then generate new samples like the ones it failed), scaled down: no model writes cases
and nothing is trained; a bench that can make verified cases like an example
(`MakesVariants`, e.g. BFCL with its numbers changed in the request and the ground truth
alike) does, and the new cases feed the prompt-level steps that follow.

Every generated case joins the training list, whether the re-probe got it right or
wrong: a wrong one is another failure of a known kind, with its critique, for the
instructions to reflect on; a right one is a successful run on a case like a failing
one, the demonstration the demos step most wants. The re-probe costs nothing later
(the evaluator remembers it) and its counts say how hard each kind stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, get_args, runtime_checkable

from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome
from bigloop.optimize.evaluate import Evaluator
from bigloop.runtime.call import Outcome as CallOutcome

_CHECKER = re.compile(r"^BFCL checker: ([A-Za-z_]+(?::[A-Za-z_/]+)?):", re.MULTILINE)
_KINDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^unreadable reply:"), "unreadable_reply"),
    (re.compile(r"^asked the user:"), "asked_user"),
    (re.compile(r"^the run ended ([a-z_]+)"), r"\1"),
    (re.compile(rf"^call \S+\(.*?\) ({'|'.join(get_args(CallOutcome))})\b"), r"\1"),
]
"""The kinds the feedback's critique lines name (`bigloop.optimize.feedback.critique`)."""


@runtime_checkable
class MakesVariants(Protocol):
    """A bench that can make new, verified cases like one of its training examples."""

    def variants(self, example: Example, n: int, seed: int) -> list[Example]:
        """Up to `n` new examples like `example`, evaluable by this bench (fewer, or none,
        when it cannot make them safely); the same ones for the same seed."""
        ...


@dataclass(kw_only=True)
class Cluster:
    """One kind of failure: how many training examples failed so, the examples made
    like them, and how many of those the current config got wrong."""

    signature: str
    failures: int
    generated: list[str]
    failed: int


@dataclass(kw_only=True)
class Evolved:
    """What the data step did: the training list the later steps use, and per kind of
    failure what was generated."""

    train: list[Example]
    clusters: list[Cluster]

    def provenance(self) -> dict[str, object]:
        return {
            "clusters": [
                {
                    "signature": c.signature,
                    "failures": c.failures,
                    "generated": len(c.generated),
                    "failed": c.failed,
                }
                for c in self.clusters
            ],
            "generated": [i for c in self.clusters for i in c.generated],
        }


def signature(outcome: Outcome) -> str:
    """The kind of a failure, read from its critique: BFCL's error type
    ("value_error:others"), else the first kind a critique line names (an invalid
    call's "invalid_arguments", "unreadable_reply", "budget_exceeded", ...), else
    "other"."""
    if found := _CHECKER.search(outcome.critique):
        return found.group(1)
    for line in outcome.critique.splitlines():
        for pattern, kind in _KINDS:
            if hit := pattern.match(line):
                return hit.expand(kind)
    return "other"


def cluster_failures(pairs: list[tuple[Example, Outcome]]) -> dict[str, list[Example]]:
    """The failing examples grouped by `signature`: the largest group first, ties by
    name; within a group, in the order given."""
    groups: dict[str, list[Example]] = {}
    for example, outcome in pairs:
        if outcome.score < 1.0:
            groups.setdefault(signature(outcome), []).append(example)
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


async def evolve(
    bench: MakesVariants,
    evaluator: Evaluator,
    config: LoopConfig,
    train: list[Example],
    *,
    per_cluster: int = 4,
    seed: int = 0,
) -> Evolved:
    """The data step: `config` run on `train` (remembered runs are free), its failures
    clustered, up to `per_cluster` variants made per cluster, spread over its examples,
    and run under `config`. Returns `train` followed by every variant made.

    `bench` makes the variants; `evaluator` must run them (its bench is `bench`).
    """
    runs = await evaluator.score(config, train)
    clusters = cluster_failures([(e, runs.outcomes[e.id]) for e in train])
    made = {name: _spread(bench, found, per_cluster, seed) for name, found in clusters.items()}
    generated = [e for examples in made.values() for e in examples]
    probe = await evaluator.score(config, generated)
    summary = [
        Cluster(
            signature=name,
            failures=len(clusters[name]),
            generated=[e.id for e in examples],
            failed=sum(probe.outcomes[e.id].score < 1.0 for e in examples),
        )
        for name, examples in made.items()
    ]
    return Evolved(train=[*train, *generated], clusters=summary)


def _spread(bench: MakesVariants, examples: list[Example], n: int, seed: int) -> list[Example]:
    """Up to `n` variants taken in turn from each example's own (first from each, then
    second from each, ...), so one example that varies easily does not fill the cluster."""
    pools = [bench.variants(e, n, seed) for e in examples]
    taken: list[Example] = []
    for rank in range(n):
        for pool in pools:
            if rank < len(pool) and len(taken) < n:
                taken.append(pool[rank])
    return taken
