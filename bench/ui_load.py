"""Page load time of the trace viewer (`bigloop ui`) on a run of 1,000 steps, in headless
Chromium: from navigation start to the frame after every step row was rendered.

The run is made by the real loop with a scripted model (499 model turns calling a tool,
one of them calling two, then an answer: 1,000 steps), in a fresh trace file. The
viewer's server runs in this process on a loopback port; the browser is Debian's
chromium driven by selenium. Each load is a fresh navigation (one cold, then warm).

    .venv/bin/python bench/ui_load.py [--steps 1000] [--loads 5]

Writes bench/results/ui/load.md and bench/results/ui/run_1000_steps.png.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bigloop import Budget, Loop, ScriptedModel, tool
from bigloop.trace.store import TraceStore

OUT = Path(__file__).parent / "results" / "ui"


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def long_run(store: TraceStore, steps: int = 1000) -> str:
    """Record a ReAct run of exactly `steps` steps (an even number >= 4) in `store`: model
    turns each calling `add` once (one turn calls it twice), then an answer. Returns the
    run id."""
    if steps < 4 or steps % 2:
        raise ValueError("steps must be an even number of at least 4")
    turns = (steps - 4) // 2
    replies = [
        json.dumps({"tool_calls": [{"name": "add", "arguments": {"a": i, "b": 1}}]})
        for i in range(turns)
    ]
    two = [{"name": "add", "arguments": {"a": -1, "b": n}} for n in (1, 2)]
    replies += [json.dumps({"tool_calls": two}), json.dumps({"answer": "done"})]
    loop = Loop(ScriptedModel(replies), [add], store=store, budget=Budget(max_steps=turns + 2))
    result = loop.run_sync(f"Add 1 to each number from 0 to {turns - 1}.")
    assert len(result.steps) == steps, (len(result.steps), result)
    return result.run_id


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import browser
    from bigloop.ui import running

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    if reason := browser.missing():
        sys.exit(reason)
    with tempfile.TemporaryDirectory() as folder:
        store = TraceStore(Path(folder) / "traces.db")
        start = time.perf_counter()
        run_id = long_run(store, args.steps)
        made_s = time.perf_counter() - start
        with running(store) as url, browser.chromium() as driver:
            times = [browser.open_run(driver, url, run_id) for _ in range(args.loads)]
            rows = driver.execute_script("return document.querySelectorAll('#steps .step').length")
            shot = browser.screenshot(driver, OUT / f"run_{args.steps}_steps.png", full_page=False)
            version = driver.capabilities.get("browserVersion", "?")
    lines = [
        f"# Trace viewer: page load of a {args.steps}-step run",
        "",
        f"Command: `.venv/bin/python bench/ui_load.py --steps {args.steps} --loads {args.loads}`",
        "",
        "Navigation start → the frame after every step row was rendered (the page's",
        f"`{browser.RENDERED_MARK}` performance mark), headless Chromium {version},",
        f"{platform.machine()} with 2 cores; server in the same process on loopback. Loads",
        "vary with whatever else uses the CPU (other test runs did while this one ran).",
        "",
        "| load | ms |",
        "|---|---|",
        *(f"| {i + 1}{' (cold)' if i == 0 else ''} | {t:.0f} |" for i, t in enumerate(times)),
        "",
        f"Median {statistics.median(times):.0f} ms over {len(times)} loads; "
        f"{rows} step rows rendered. Recording the run took {made_s:.1f} s.",
        f"Screenshot: `{shot.relative_to(OUT.parents[2])}`.",
        "",
    ]
    (OUT / "load.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
