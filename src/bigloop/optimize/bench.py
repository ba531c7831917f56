"""What an optimizer optimizes against: a `Bench` — examples in train/dev/test splits, and
a way to run a `LoopConfig` on one example and score it — and the `Outcome` of one run,
with the feedback the trace gave (a critique in words, the demonstration a successful
run makes, the tool mistakes).

The benches themselves (BFCL, the task suite) live in `bigloop_eval.benches`; this layer
only knows the protocol, so the optimizers never depend on a benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from bigloop.atoms.models.base import ToolSpec
from bigloop.config import Demo, LoopConfig

Split = Literal["train", "dev", "test"]


@dataclass(frozen=True, kw_only=True)
class Example:
    """One case of a bench: its id and the request, as a person wrote it."""

    id: str
    task: str


@dataclass(kw_only=True)
class Mistake:
    """A call the model got wrong, as the trace recorded it."""

    tool: str
    arguments: object
    error: str


@dataclass(kw_only=True)
class Outcome:
    """One example run under one config, scored, with what the trace says about it.

    Attributes:
        score: 1.0 right, 0.0 wrong (a bench may give partial credit).
        critique: why it was wrong, in words — the checker's verdict, then the tool
            errors, repairs and answer revisions the trace holds; "" when right.
        demo: the reply that solved it (for demonstrations); None when wrong.
        mistakes: the calls the loop refused or the tool rejected (for tool docs).
        model_calls: model turns the run took (the cost of evaluating it).
    """

    example_id: str
    score: float
    critique: str = ""
    seconds: float = 0.0
    model_calls: int = 0
    tokens: int = 0
    demo: Demo | None = None
    mistakes: list[Mistake] = field(default_factory=list)
    run_id: str | None = None


class Bench(Protocol):
    """Examples and a scorer; the knobs worth searching for this kind of task."""

    @property
    def name(self) -> str: ...

    def examples(self, split: Split) -> list[Example]:
        """The examples of `split`; train, dev and test are disjoint."""
        ...

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        """Run `example` under `config` and score it; never raises for a wrong run."""
        ...

    def tools(self) -> list[ToolSpec]:
        """The tools whose documentation may be rewritten (empty: none is shared across
        examples)."""
        ...

    def knobs(self) -> list[dict[str, object]]:
        """`LoopConfig` updates worth trying on this bench (policy and schedule search)."""
        ...
