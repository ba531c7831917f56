"""Eval cases, and the optimizer's candidate evaluations (`RayBenchRunner`), spread over
a Ray cluster; each worker builds and loads its own model.

Ray is optional (`pip install 'bigloop[ray]'`) and imported only here. Workers get the
model as a `ModelSpec`, never a loaded model, so each process loads its own copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.spec import ModelSpec
from bigloop.config import LoopConfig
from bigloop.optimize.bench import Example, Outcome
from bigloop.optimize.evaluate import outcome_of, outcome_row
from bigloop_eval.benches import build_bench
from bigloop_eval.bfcl_run import run_one


class _Worker:
    def __init__(self, spec: ModelSpec) -> None:
        self.model = spec.build()

    def run(self, case: Any, mode: str) -> dict[str, Any]:
        return asdict(asyncio.run(run_one(case, self.model, mode)))  # type: ignore[arg-type]


class _BenchWorker:
    def __init__(self, spec: ModelSpec, bench: dict[str, Any]) -> None:
        import tempfile
        from pathlib import Path

        from bigloop.trace.store import TraceStore

        self.folder = tempfile.mkdtemp(prefix="bigloop-worker-")
        store = TraceStore(Path(self.folder) / "traces.db")
        self.bench = build_bench(bench, spec.build(), store)
        self.examples = {
            e.id: e for split in ("train", "dev", "test") for e in self.bench.examples(split)
        }

    def evaluate(self, config: dict[str, Any], example_id: str) -> dict[str, Any]:
        loop_config = LoopConfig.model_validate(config)
        outcome = asyncio.run(self.bench.evaluate(loop_config, self.examples[example_id]))
        return outcome_row("", outcome)


def _join(address: str) -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray: pip install 'bigloop[ray]'.") from None
    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    except (ConnectionError, RuntimeError) as e:
        raise UserError(
            f"Cannot join the Ray cluster at {address}: {e}. A cluster with token "
            "authentication (Ray's default when ~/.ray/auth_token exists) needs "
            "RAY_AUTH_MODE=token here as well."
        ) from None
    return ray


class RayBenchRunner:
    """The optimizer's evaluations of one config on many examples, fanned out over
    `workers` Ray actors, each with its own model and bench (built from `bench`, the
    description `build_bench` takes). Use as `Evaluator(runner=...)`.

    Raises:
        UserError: Ray is not installed or the cluster cannot be reached.
    """

    def __init__(self, address: str, spec: ModelSpec, bench: dict[str, Any], workers: int) -> None:
        self.ray = _join(address)
        actor: Any = self.ray.remote(num_cpus=1)(_BenchWorker)
        self.pool: list[Any] = [actor.remote(spec, bench) for _ in range(max(1, workers))]

    async def __call__(self, config: LoopConfig, examples: list[Example]) -> list[Outcome]:
        return await asyncio.to_thread(self._run, config, examples)

    def _run(self, config: LoopConfig, examples: list[Example]) -> list[Outcome]:
        data = config.model_dump(mode="json")
        results: dict[str, Outcome] = {}
        pending: dict[Any, int] = {}
        queue = iter(examples)
        for i, worker in enumerate(self.pool):
            example = next(queue, None)
            if example is not None:
                pending[worker.evaluate.remote(data, example.id)] = i
        while pending:
            done, _ = self.ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            outcome = outcome_of(self.ray.get(done[0]))
            results[outcome.example_id] = outcome
            example = next(queue, None)
            if example is not None:
                pending[self.pool[index].evaluate.remote(data, example.id)] = index
        return [results[e.id] for e in examples]


def run_on_ray(
    address: str,
    spec: ModelSpec,
    cases: list[Any],
    mode: str,
    workers: int,
    on_result: Callable[[dict[str, Any]], None],
) -> None:
    """Run `cases` on the cluster at `address`, calling `on_result` as each completes.

    Raises:
        UserError: Ray is not installed or the cluster cannot be reached.
    """
    ray = _join(address)
    actor: Any = ray.remote(num_cpus=1)(_Worker)
    pool: list[Any] = [actor.remote(spec) for _ in range(max(1, min(workers, len(cases))))]
    pending: dict[Any, int] = {}
    queue: Iterator[Any] = iter(cases)
    for i, worker in enumerate(pool):
        case = next(queue, None)
        if case is not None:
            pending[worker.run.remote(case, mode)] = i
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        ref = done[0]
        index = pending.pop(ref)
        on_result(ray.get(ref))
        case = next(queue, None)
        if case is not None:
            pending[pool[index].run.remote(case, mode)] = index
