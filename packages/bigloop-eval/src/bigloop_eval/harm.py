"""Do-no-harm sources for `bigloop optimize --step finetune|prefer`: examples the
training never drew from (`bigloop.optimize.harm`).

For a model tuned on BFCL categories: the first `n` test cases of every other
single-turn BFCL category, and the first `n` tasks of the everyday suite's test split (a
benchmark it never saw). For a model tuned on the suite: the first `n` test cases of
every BFCL category (none was trained on); the suite's own test split stays the
optimizer's final report, never a gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bigloop.atoms.models.base import ChatModel
from bigloop.optimize.evaluate import Evaluator
from bigloop.optimize.harm import HarmSource
from bigloop.trace.store import TraceStore
from bigloop_eval.benches import TEST_BLOCK, BfclBench, SuiteBench
from bigloop_eval.bfcl_data import SINGLE_TURN, load_cases


def _gateable() -> list[str]:
    """BFCL's single-turn categories with cases beyond a test block (`BfclBench` needs
    them)."""
    return [c for c in SINGLE_TURN if len(load_cases(c)) > TEST_BLOCK + 2]


def harm_sources(
    described: dict[str, Any], model: ChatModel, store: TraceStore, folder: Path, n: int
) -> tuple[list[HarmSource], list[SuiteBench]]:
    """The sources for the bench `described` (`build_bench`'s description), `n` examples
    each, scored into `folder`; and the suite benches made (close them when done)."""
    trained = set()
    if described["bench"] == "bfcl":
        trained = {c.strip() for c in str(described["category"]).split(",")}
    sources, opened = [], []
    for category in _gateable():
        if category in trained:
            continue
        bench = BfclBench(category, model, store, train=0, dev=0, test=n)
        evaluator = Evaluator(bench, folder / f"harm-bfcl-{category}.jsonl")
        sources.append(
            HarmSource(
                name=f"bfcl:{category}", evaluator=evaluator, examples=bench.examples("test")
            )
        )
    if described["bench"] == "bfcl":
        suite = SuiteBench(model, store)
        opened.append(suite)
        evaluator = Evaluator(suite, folder / "harm-suite-test.jsonl")
        sources.append(
            HarmSource(
                name="suite:test", evaluator=evaluator, examples=_spread(suite.examples("test"), n)
            )
        )
    return sources, opened


def _spread(examples: list[Any], n: int) -> list[Any]:
    """`n` of `examples` spread evenly (the suite's are grouped by family)."""
    step = max(1, len(examples) // max(n, 1))
    return examples[::step][:n]
