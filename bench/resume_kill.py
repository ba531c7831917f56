"""Kill runs with SIGKILL at random moments, resume them, and count lost and repeated work.

Each trial starts a run in a child process, kills it (`kill -9`) at a random moment,
then resumes it — killing the resumes too, at random, half of the time — until it ends.
The run makes 12 tool calls: `fetch(i)` (idempotent) and `charge(i)` (not idempotent:
it appends to a ledger, like a payment), i = 0..5, written by a deterministic model
(the persistence is under test here, not the model), under the react and the graph
planner. Every tool execution writes "start" and "end" lines to a ledger file (fsync'd).

Checked after each trial:
- lost: a step the trace had committed before a kill is missing afterwards;
- repeated: a call the trace records as completed was executed again (ledger "end" > 1);
- charged twice: a non-idempotent call was started more than once (ledger "start" > 1).

    python bench/resume_kill.py --trials 30     # writes bench/results/resume_kill.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ITEMS = 6


def _ledger(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def build_loop(planner: str, db: Path, ledger: Path) -> Any:
    from bigloop import FunctionModel, Loop, Message, ToolSpec, TraceStore, tool
    from bigloop.planners.graph import GraphPlanner

    rng = random.Random()

    async def work(kind: str, i: int) -> str:
        _ledger(ledger, f"start {kind}:{i}")
        await asyncio.sleep(rng.uniform(0.05, 0.3))
        _ledger(ledger, f"end {kind}:{i}")
        return f"{kind} {i} done"

    @tool
    async def fetch(i: int) -> str:
        """Fetch item i (read-only)."""
        return await work("fetch", i)

    @tool(idempotent=False, effect="write")  # resumed exactly once; no approval to wait on
    async def charge(i: int) -> str:
        """Charge item i (a side effect that must happen once)."""
        return await work("charge", i)

    def react_reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        done = [m for m in messages if m.role == "tool"]
        asked = {(c.name, c.arguments.get("i")) for m in messages for c in m.tool_calls}
        for i in range(ITEMS):
            todo = [k for k in ("fetch", "charge") if (k, i) not in asked]
            if todo:
                calls = [{"name": k, "arguments": {"i": i}} for k in todo]
                return json.dumps({"tool_calls": calls})
        return json.dumps({"answer": f"{len(done)} calls done"})

    def graph_reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if messages[-1].content.startswith("Results of the steps"):
            return json.dumps({"answer": "all done"})
        steps = [
            {"tool": k, "arguments": {"i": i}} for i in range(ITEMS) for k in ("fetch", "charge")
        ]
        return json.dumps({"steps": steps})

    store = TraceStore(db)
    if planner == "graph":
        return Loop(
            FunctionModel(graph_reply),
            [fetch, charge],
            planner=GraphPlanner(),
            store=store,
        )
    return Loop(FunctionModel(react_reply), [fetch, charge], store=store)


def child(planner: str, db: Path, ledger: Path, run_id: str | None) -> None:
    loop = build_loop(planner, db, ledger)
    if run_id:
        result = asyncio.run(loop.resume(run_id))
    else:
        result = asyncio.run(loop.run("Fetch and charge items 0 to 5."))
    print(json.dumps({"run_id": result.run_id, "status": result.status}), flush=True)


def committed(db: Path) -> list[tuple[int, str, str, str]]:
    import sqlite3

    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("SELECT idx, kind, name, input FROM steps ORDER BY idx").fetchall()
        except sqlite3.OperationalError:  # killed while the store was creating its tables
            return []
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def _completed(steps: list[tuple[int, str, str, str]]) -> set[str]:
    return {f"{name}:{json.loads(inp)['i']}" for _, kind, name, inp in steps if kind == "tool"}


def run_id_of(db: Path) -> str | None:
    import sqlite3

    if not db.exists():
        return None
    with sqlite3.connect(db) as conn:
        try:
            row = conn.execute("SELECT run_id FROM runs").fetchone()
        except sqlite3.OperationalError:  # killed while the store was creating its tables
            return None
    return row[0] if row else None


def calibrate(planner: str) -> float:
    """Wall time of one uninterrupted run in a child process (kills land within it)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        cmd = [sys.executable, __file__, "--child", planner, f"{tmp}/t.db", f"{tmp}/l.txt"]
        subprocess.run(cmd, check=True, capture_output=True)
        return time.perf_counter() - start


def trial(planner: str, folder: Path, rng: random.Random, span: float) -> dict[str, Any]:
    db, ledger = folder / "t.db", folder / "ledger.txt"
    kills = lost = repeated = 0
    before: list[tuple[int, str, str, str]] = []
    seen_lines = 0
    status = None
    for attempt in range(20):
        run_id = run_id_of(db)
        if attempt > 0 and run_id is None:
            run_id = None  # killed before the run was even recorded: start it again
        cmd = [sys.executable, __file__, "--child", planner, str(db), str(ledger)]
        if run_id:
            cmd.append(run_id)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        kill = attempt == 0 or rng.random() < 0.5
        if kill:
            time.sleep(rng.uniform(0.0, span))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        out, _ = proc.communicate()
        after = committed(db)
        lost += len(set(before) - set(after))
        # Repeated: started in this attempt although committed as completed before it.
        lines = ledger.read_text().splitlines() if ledger.exists() else []
        started = [line.split()[1] for line in lines[seen_lines:] if line.startswith("start")]
        repeated += sum(1 for call in started if call in _completed(before))
        seen_lines = len(lines)
        before = after
        if out.strip():
            status = json.loads(out.strip().splitlines()[-1])["status"]
            if status == "ok":
                break
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    starts = Counter(line.split()[1] for line in lines if line.startswith("start"))
    done_calls = _completed(before)
    charged_twice = sum(1 for c, n in starts.items() if c.startswith("charge") and n > 1)
    reran = sum(1 for c, n in starts.items() if c.startswith("fetch") and n > 1)
    return {
        "planner": planner,
        "status": status,
        "kills": kills,
        "lost": lost,
        "repeated": repeated,
        "charged_twice": charged_twice,
        "fetch_reruns": reran,
        "completed_calls": len(done_calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        planner, db, ledger, *rest = args.child
        child(planner, Path(db), Path(ledger), rest[0] if rest else None)
        return
    import tempfile

    rng = random.Random(args.seed)
    rows = []
    for planner in ("react", "graph"):
        span = calibrate(planner)
        for n in range(args.trials):
            with tempfile.TemporaryDirectory() as tmp:
                row = trial(planner, Path(tmp), rng, span)
            rows.append(row)
            print(f"{planner} trial {n + 1}: {row}", flush=True)
    lines = [
        "# Kill -9 and resume",
        "",
        f"Command: `python bench/resume_kill.py --trials {args.trials}`. Each trial: a run of "
        f"{2 * ITEMS} tool calls ({ITEMS} idempotent fetches, {ITEMS} non-idempotent "
        "charges), SIGKILLed at a moment drawn uniformly over "
        "an uninterrupted run's wall time (process start included), resumed (and killed "
        "again half the time) until it finishes.",
        "",
        "| planner | trials | finished ok | kills | lost steps | repeated completed calls "
        "| non-idempotent calls started twice | idempotent calls re-run (unrecorded) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for planner in ("react", "graph"):
        rs = [r for r in rows if r["planner"] == planner]
        lines.append(
            f"| {planner} | {len(rs)} | {sum(r['status'] == 'ok' for r in rs)} "
            f"| {sum(r['kills'] for r in rs)} | {sum(r['lost'] for r in rs)} "
            f"| {sum(r['repeated'] for r in rs)} | {sum(r['charged_twice'] for r in rs)} "
            f"| {sum(r['fetch_reruns'] for r in rs)} |"
        )
    lines += [
        "",
        "A call killed after it ran but before its step was committed has no completed step: "
        "an idempotent one is simply run again on resume (last column); a non-idempotent "
        "one is never run again — the model is told its outcome is unknown.",
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "resume_kill.md").write_text(text)
    (RESULTS / "resume_kill.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
