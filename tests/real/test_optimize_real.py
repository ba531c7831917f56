"""`bigloop optimize` on the embedded model: BFCL simple_python, a tiny train/dev split,
every step. It checks the machinery with real replies — runs traced and read back,
demonstrations bootstrapped from real successes, a real reflective proposal parsed — not
that optimizing pays (that is `bench/results/optimize/`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bigloop_eval.benches import BfclBench

from bigloop import LocalModel
from bigloop.config import LoopConfig
from bigloop.optimize.evaluate import Evaluator
from bigloop.optimize.instructions import propose, reflection_prompt
from bigloop.optimize.optimizer import Optimizer
from bigloop.trace.store import TraceStore

pytestmark = pytest.mark.real


def test_optimizing_on_bfcl_with_the_embedded_model(tmp_path: Path, embedded: LocalModel) -> None:
    bench = BfclBench("simple_python", embedded, TraceStore(tmp_path / "t.db"), train=4, dev=3)
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        bench, evaluator, embedded, steps=["demos", "instructions"], iterations=1, minibatch=2
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    provenance = result.provenance or {}
    train = asyncio.run(evaluator.score(LoopConfig(), bench.examples("train")))
    assert train.right >= 2  # the 0.5B model gets most simple calls right
    assert all(o.demo is not None for o in train.outcomes.values() if o.score == 1)
    assert provenance["cost"]["model_calls"] >= 7
    assert all("BFCL checker:" in o.critique for o in train.outcomes.values() if o.score < 1)
    LoopConfig.model_validate_json(result.model_dump_json())  # a valid, reloadable config


def test_a_reflective_proposal_from_the_embedded_model_is_usable(embedded: LocalModel) -> None:
    from bigloop.optimize.bench import Example, Outcome

    failures = [
        (
            Example(id="a", task="Find the area of a circle with radius 5 meters."),
            Outcome(
                example_id="a",
                score=0.0,
                critique="BFCL checker: value_error:others: Invalid value for parameter "
                "'units': 'm'. Expected one of ['meters', '']",
            ),
        )
    ]
    text = asyncio.run(propose(embedded, reflection_prompt(None, failures)))
    assert text is not None and 20 <= len(text) <= 700
