"""Workflow search (`optimize.workflow`, the optimizer's "workflow" step) on a bench whose
scores follow the structure by rule: plumbing and the search's logic, no quality claim."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bigloop import FunctionModel
from bigloop.atoms.models.base import ToolSpec
from bigloop.config import LoopConfig
from bigloop.optimize import workflow
from bigloop.optimize.bench import Example, Outcome, Split
from bigloop.optimize.evaluate import Evaluator
from bigloop.optimize.optimizer import Optimizer


class StructureBench:
    """Example k (of 9) is right when k < 3; the graph planner adds k < 6, and only
    together with vote=3 all of them (a combination no single change reaches). Votes
    cost seconds; the search planner is slow and loses everything."""

    name = "structure"

    def __init__(self) -> None:
        self.runs = 0
        self._examples = {
            s: [Example(id=f"{s}-{k}", task=f"task {k}") for k in range(9)]
            for s in ("train", "dev", "test")
        }

    def examples(self, split: Split) -> list[Example]:
        return self._examples[split]

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        self.runs += 1
        k = int(example.id.rsplit("-", 1)[1])
        limit = 3
        if config.planner == "graph":
            limit = 9 if config.vote == 3 else 6
        if config.planner == "search":
            limit = 0
        seconds = 1.0 * config.vote + (5.0 if config.planner == "search" else 0.0)
        return Outcome(example_id=example.id, score=float(k < limit), critique="", seconds=seconds)

    def tools(self) -> list[ToolSpec]:
        return []

    def knobs(self) -> list[dict[str, object]]:
        return []


def _search(
    tmp_path: Path, budget: int, bench: StructureBench | None = None
) -> list[workflow.Trial]:
    bench = bench or StructureBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    dev = bench.examples("dev")
    genes: dict[str, tuple[object, ...]] = {"planner": ("auto", "graph", "search"), "vote": (1, 3)}
    return asyncio.run(workflow.search(evaluator, LoopConfig(), dev, genes=genes, budget=budget))


def test_the_search_reaches_a_combination_of_two_changes(tmp_path: Path) -> None:
    trials = _search(tmp_path, budget=5)
    best = workflow.front(trials)[0]
    assert best.genes == {"planner": "graph", "vote": 3}
    assert best.scores.right == 9 and best.full
    assert trials[0].genes == {"planner": "auto", "vote": 1}  # the base first
    assert len({workflow._key(t.genes) for t in trials}) == len(trials)  # none twice


def test_a_child_behind_its_parent_early_is_pruned(tmp_path: Path) -> None:
    trials = _search(tmp_path, budget=5)
    searched = [t for t in trials if t.genes["planner"] == "search"]
    assert searched and all(not t.full and len(t.scores.outcomes) == 3 for t in searched)


def test_the_front_keeps_the_fast_and_the_accurate(tmp_path: Path) -> None:
    trials = _search(tmp_path, budget=5)
    shown = [(t.genes["planner"], t.genes["vote"]) for t in workflow.front(trials)]
    assert shown[0] == ("graph", 3)
    assert ("graph", 1) in shown  # 6/9 at 1 s beats nothing faster
    record = workflow.record(trials, 9)
    assert record["front"][0]["genes"] == {"planner": "graph", "vote": 3}
    assert len(record["trials"]) == len(trials)


def test_the_search_stops_when_every_structure_was_tried(tmp_path: Path) -> None:
    trials = _search(tmp_path, budget=50)
    assert len(trials) <= 6  # 3 planners x 2 votes


def test_the_optimizer_step_keeps_the_best_structure_with_its_record(tmp_path: Path) -> None:
    bench = StructureBench()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        bench,
        evaluator,
        FunctionModel(lambda m, t: "unused"),
        steps=["workflow"],
        workflow_budget=15,
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert (result.planner, result.vote) == ("graph", 3)
    assert result.provenance is not None
    searched: dict[str, Any] = result.provenance["workflow"]
    assert searched["front"][0]["genes"]["planner"] == "graph"
    runs = bench.runs
    asyncio.run(
        Optimizer(bench, evaluator, FunctionModel(lambda m, t: "x"), steps=["workflow"]).run(
            LoopConfig()
        )
    )
    assert bench.runs == runs  # a rerun is answered from the remembered evaluations


def test_fields_the_bench_sets_itself_are_not_searched(tmp_path: Path) -> None:
    class FixedPlanner(StructureBench):
        fixed = ("planner", "clarify")

    bench = FixedPlanner()
    evaluator = Evaluator(bench, tmp_path / "evals.jsonl")
    optimizer = Optimizer(
        bench, evaluator, FunctionModel(lambda m, t: "x"), steps=["workflow"], workflow_budget=9
    )
    result = asyncio.run(optimizer.run(LoopConfig()))
    assert result.provenance is not None
    trials: list[dict[str, Any]] = result.provenance["workflow"]["trials"]
    assert [t["genes"] for t in trials] == [{"vote": 1}, {"vote": 3}]


class SpeedBench(StructureBench):
    """Every structure is right on the same examples; the ReAct planner takes `react`
    seconds per example against 1 s for the others."""

    def __init__(self, react: float) -> None:
        super().__init__()
        self.react = react

    async def evaluate(self, config: LoopConfig, example: Example) -> Outcome:
        k = int(example.id.rsplit("-", 1)[1])
        seconds = self.react if config.planner == "react" else 1.0
        return Outcome(example_id=example.id, score=float(k < 3), critique="", seconds=seconds)


def _kept_planner(tmp_path: Path, react: float) -> str:
    bench = SpeedBench(react)
    evaluator = Evaluator(bench, tmp_path / f"evals-{react}.jsonl")
    optimizer = Optimizer(
        bench, evaluator, FunctionModel(lambda m, t: "x"), steps=["workflow"], workflow_budget=9
    )
    return asyncio.run(optimizer.run(LoopConfig())).planner


def test_an_equally_accurate_structure_is_kept_only_when_clearly_faster(tmp_path: Path) -> None:
    assert _kept_planner(tmp_path, react=0.5) == "react"  # half the time: kept
    assert _kept_planner(tmp_path, react=0.9) == "auto"  # 10% faster: within noise, not kept
