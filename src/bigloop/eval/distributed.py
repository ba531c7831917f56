"""Eval cases spread over a Ray cluster; each worker builds and loads its own model.

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
from bigloop.eval.bfcl_run import run_one


class _Worker:
    def __init__(self, spec: ModelSpec) -> None:
        self.model = spec.build()

    def run(self, case: Any, mode: str) -> dict[str, Any]:
        return asdict(asyncio.run(run_one(case, self.model, mode)))  # type: ignore[arg-type]


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
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray: pip install 'bigloop[ray]'.") from None
    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    except (ConnectionError, RuntimeError) as e:
        raise UserError(f"Cannot join the Ray cluster at {address}: {e}") from None
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
