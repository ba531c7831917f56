"""The overhead workload, shared by every framework's runner: 10 plain tools, and a
scripted model that makes K tool calls, one per step, then answers."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

K_VALUES = (1, 10, 50)
TOOL_COUNT = 10


def tool_fn(i: int) -> Callable[[int], int]:
    def fn(x: int) -> int:
        return x + i

    fn.__name__ = f"tool_{i}"
    fn.__doc__ = f"Add {i} to x.\n\nArgs:\n    x: a number."
    return fn


def call_plan(k: int) -> list[tuple[str, dict[str, int]]]:
    """The K calls the scripted model makes, in order."""
    return [(f"tool_{step % TOOL_COUNT}", {"x": step}) for step in range(k)]


def time_runs(run: Callable[[], object], k: int, repeats: int) -> dict[str, float]:
    """Median ms per run and per step (K calls + the answer) over `repeats` runs."""
    run()  # warm up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    run_ms = statistics.median(samples)
    return {"k": k, "run_ms": run_ms, "step_ms": run_ms / (k + 1)}


def plain_baseline(k: int) -> None:
    """The same calls with no framework: the floor every runner is compared against."""
    tools = {f"tool_{i}": tool_fn(i) for i in range(TOOL_COUNT)}
    for name, args in call_plan(k):
        tools[name](**args)
