"""Framework overhead per step: bigloop vs LangGraph, pydantic-ai and smolagents.

Workload (`_workload.py`): 10 plain tools; a scripted model makes K tool calls, one per
step, then answers; K = 1, 10, 50. Each process also times the same calls with no
framework ("plain python") so results are read as ratios to a baseline measured beside
them. Peers run in their own environment (`scripts/bench-peers.sh`), passed as --peers.

    python bench/overhead.py [--peers .venv-bench/bin/python] [--repeats 7]

Writes bench/results/overhead.md and overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _workload import K_VALUES, TOOL_COUNT, call_plan, plain_baseline, time_runs, tool_fn
from bigloop import (
    Budget,
    FunctionModel,
    Loop,
    Message,
    ModelResponse,
    ToolCall,
    ToolSpec,
    TraceStore,
    tool,
)

RESULTS = Path(__file__).parent / "results"


def bigloop_runner(k: int, store: TraceStore | None, inline: bool = False) -> Any:
    tools = [tool(inline=inline)(tool_fn(i)) for i in range(TOOL_COUNT)]
    plan = call_plan(k)

    def reply(messages: list[Message], specs: list[ToolSpec]) -> ModelResponse:
        step = sum(m.role == "assistant" for m in messages)
        if step < len(plan):
            name, args = plan[step]
            return ModelResponse(tool_calls=[ToolCall(id=f"c{step}", name=name, arguments=args)])
        return ModelResponse(text="done")

    loop = Loop(FunctionModel(reply), tools, store=store, budget=Budget(max_steps=k + 5))

    def run() -> None:
        result = asyncio.run(loop.run("go"))
        assert result.status == "ok" and len(result.tool_steps) == k, result.error

    return run


def import_seconds(args: list[str], repeats: int = 5) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return sorted(samples)[len(samples) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", help="Python of the environment with the peer frameworks.")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    results: dict[str, list[dict[str, float]]] = {
        "plain python": [
            time_runs(lambda k=k: plain_baseline(k), k, args.repeats) for k in K_VALUES
        ],
        "bigloop Loop (sync tools in threads)": [
            time_runs(bigloop_runner(k, None), k, args.repeats) for k in K_VALUES
        ],
        "bigloop Loop (inline tools)": [
            time_runs(bigloop_runner(k, None, inline=True), k, args.repeats) for k in K_VALUES
        ],
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = TraceStore(Path(tmp) / "t.db")
        results["bigloop Loop (inline tools) + SQLite trace"] = [
            time_runs(bigloop_runner(k, store, inline=True), k, args.repeats) for k in K_VALUES
        ]
        store.close()
    own_baseline = results["plain python"]
    for rows in results.values():
        for row, base in zip(rows, own_baseline, strict=True):
            row["x_plain"] = row["run_ms"] / base["run_ms"]
    if args.peers:
        out = subprocess.run(
            [args.peers, str(Path(__file__).parent / "overhead_peers.py"), str(args.repeats)],
            check=True,
            capture_output=True,
            text=True,
        )
        peers = json.loads(out.stdout)
        peer_baseline = peers.pop("plain python")
        for name, rows in peers.items():
            for row, base in zip(rows, peer_baseline, strict=True):
                row["x_plain"] = row["run_ms"] / base["run_ms"]
            results[name] = rows
    python = sys.executable
    imports = {
        "import bigloop": import_seconds([python, "-c", "import bigloop"]),
        "bigloop --help": import_seconds([python, "-m", "bigloop", "--help"]),
    }
    report = render(results, imports)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "overhead.md").write_text(report)
    (RESULTS / "overhead.json").write_text(
        json.dumps({"steps": results, "imports": imports}, indent=2)
    )
    print(report)


def render(results: dict[str, list[dict[str, float]]], imports: dict[str, float]) -> str:
    head = " | ".join(f"K={k} ms/step" for k in K_VALUES)
    lines = [
        "Framework overhead: 10 plain tools, a scripted model making K calls one per step, then "
        "answering. Median of repeated runs; ms per step = run time / (K + 1); the marginal "
        "cost per step is (run(50) - run(10)) / 40, which leaves out fixed per-run costs; "
        "x plain = run time over the same calls made with no framework, in the same process.",
        "",
        f"| framework | {head} | K=50 ms/run | marginal ms/step, K 10→50 | x plain (K=50) |",
        "|---|" + "---|" * (len(K_VALUES) + 3),
    ]
    for name, rows in results.items():
        cells = " | ".join(f"{r['step_ms']:.3f}" for r in rows)
        marginal = (rows[-1]["run_ms"] - rows[-2]["run_ms"]) / (rows[-1]["k"] - rows[-2]["k"])
        lines.append(
            f"| {name} | {cells} | {rows[-1]['run_ms']:.2f} | {marginal:.3f} "
            f"| {rows[-1]['x_plain']:.0f} |"
        )
    lines += ["", "| command | median wall s |", "|---|---|"]
    lines += [f"| `{name}` | {seconds:.3f} |" for name, seconds in imports.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
