"""`bigloop eval bfcl`: the Berkeley Function Calling Leaderboard, raw model vs the loop.

Runs a category's cases (`bfcl_run.run_one`: single-turn in `bfcl_single`, multi-turn in
`bfcl_multi`), in this process or on a Ray cluster (`distributed`); `Mode` says what each
mode runs. Each case's result is appended to a JSON Lines file as it completes; a rerun
skips the cases already there, so an interrupted eval resumes without scoring anything
twice.

The eval modules form layers, each importing only those below it: `bfcl_data`, then
`bfcl_score` and `bfcl_results`, then `bfcl_single` and `bfcl_multi`, then `bfcl_run`,
`distributed`, and this module on top.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel
from bigloop.atoms.models.spec import ModelSpec
from bigloop.config import LoopConfig
from bigloop_eval.bfcl_results import CaseResult, Mode, load_results, results_path, summarize
from bigloop_eval.bfcl_run import load_any, run_one
from bigloop_eval.distributed import run_on_ray

__all__ = ["Mode", "load_any", "results_path", "run_category", "summarize"]


async def run_category(
    cases: list[Any],
    model: ChatModel,
    mode: Mode,
    path: Path,
    *,
    workers: int = 1,
    on_result: Callable[[CaseResult], None] | None = None,
    ray: tuple[str, ModelSpec] | None = None,
    clarify: bool = False,
    config: LoopConfig | None = None,
) -> list[CaseResult]:
    """Run the cases not yet in `path`, appending each result as it completes.

    Args:
        workers: cases run at once (in this process, or Ray workers with `ray`).
        ray: (cluster address, model spec) to run the cases on a Ray cluster instead.
        config: a `LoopConfig` whose instructions, demonstrations, tool docs and
            switched-off policies the loop mode uses (`bfcl_single.run_case`).

    Raises:
        UserError: `config` together with `ray`.
    """
    if config is not None and ray is not None:
        raise UserError("--config runs in this process; leave out --ray.")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(path):
        done = load_results(path)
        todo = [c for c in cases if c.id not in done]
        gate = asyncio.Semaphore(max(1, workers))

        def record(result: CaseResult) -> None:
            with path.open("a") as f:
                f.write(json.dumps(asdict(result), ensure_ascii=False) + "\n")
            done[result.id] = result
            if on_result:
                on_result(result)

        async def one(case: Any) -> None:
            async with gate:
                result = await run_one(case, model, mode, clarify, config)
            record(result)

        for case in cases:
            if case.id in done and on_result:
                on_result(done[case.id])
        if ray is not None:
            address, spec = ray
            await asyncio.to_thread(
                run_on_ray,
                address,
                spec,
                todo,
                mode,
                workers,
                lambda row: record(CaseResult(**row)),
            )
        else:
            await asyncio.gather(*(one(c) for c in todo))
    return [done[c.id] for c in cases]


def _exclusive(path: Path) -> Any:
    """Hold a lock on `path` for this run: two runs appending to one file would score cases
    twice.

    Raises:
        UserError: another run holds it.
    """
    import fcntl

    handle = path.with_suffix(".lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise UserError(f"Another eval is writing {path}; wait for it or use --out.") from None
    return handle
