"""Warm start: the first model turn of a new `bigloop run` process, with the fixed prompt
prefix evaluated (cache off), evaluated and saved (a first-ever run), or loaded from disk.

Each row runs `bigloop run TASK --json` in a fresh process (model load included in the
whole-task time, not in the first turn), `--repeats` times, one process at a time; medians,
and ratios to the "off" row measured in the same run.

    python bench/warm_start.py [--repeats 5]     # writes bench/results/warm_start.md + .json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
TASKS = ["What is (45 + 12) / 3?", "Convert 26.2 miles to kilometers.", "What is 17.5% of 2,480?"]
BIGLOOP = str(Path(sys.executable).with_name("bigloop"))


def one_run(task: str, cache: str, trace_db: Path) -> dict[str, float]:
    env = {**os.environ, "BIGLOOP_PREFIX_CACHE": cache}
    start = time.perf_counter()
    out = subprocess.run(
        [BIGLOOP, "run", task, "--json", "--clarify", "off", "--trace-db", str(trace_db)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    result = json.loads(out.stdout)
    models = [s for s in result["steps"] if s["kind"] == "model"]
    return {
        "first_turn_s": models[0]["seconds"] if models else float("nan"),
        "model_s": sum(s["seconds"] for s in models),
        "process_s": wall,
        "prompt_tokens_first": models[0]["prompt_tokens"] if models else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float]]] = {"off": [], "first ever (saves)": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm_cache = root / "warm"
        for task in TASKS:  # populate the warm cache (one state per tool set: all the same)
            one_run(task, str(warm_cache), root / "t.db")
        for i in range(args.repeats):
            for task in TASKS:
                rows["off"].append(one_run(task, "off", root / "t.db"))
                fresh = root / f"cold-{i}-{len(rows['first ever (saves)'])}"
                rows["first ever (saves)"].append(one_run(task, str(fresh), root / "t.db"))
                rows["warm"].append(one_run(task, str(warm_cache), root / "t.db"))
    summary: dict[str, dict[str, Any]] = {}
    for name, runs in rows.items():
        summary[name] = {
            key: statistics.median(r[key] for r in runs)
            for key in ("first_turn_s", "model_s", "process_s")
        }
        summary[name]["runs"] = len(runs)
    base = summary["off"]
    lines = [
        "# Warm start: first model turn of a new process",
        "",
        f"`python bench/warm_start.py --repeats {args.repeats}`; {len(TASKS)} tasks × "
        f"{args.repeats} repeats per row, each a fresh `bigloop run` process (embedded "
        "model, 2 threads); medians; ratio = off / row (higher is faster).",
        "",
        "| prefix state | first turn s | ratio | model s per task | process s per task |",
        "|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        ratio = base["first_turn_s"] / s["first_turn_s"]
        lines.append(
            f"| {name} | {s['first_turn_s']:.2f} | {ratio:.2f}x | {s['model_s']:.2f} | "
            f"{s['process_s']:.2f} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "warm_start.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "warm_start.json").write_text(
        json.dumps({"summary": summary, "runs": rows}, indent=2)
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
