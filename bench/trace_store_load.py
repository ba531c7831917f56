"""Many writers against one trace store: PostgreSQL beside SQLite, in one run.

W processes each record R runs (start, S steps, finish) into one store through the real
`TraceStore`, all at once; then the store is read back and checked: every run present and
finished, every step there exactly once (no lost step, no repeated one), each run's steps
numbered 0..S-1. Reported: steps per second for each store, and PostgreSQL's as a ratio of
SQLite's from the same run.

    .venv/bin/python bench/trace_store_load.py [--writers 32] [--runs 200] [--steps 3]

PostgreSQL: a fresh server in a temporary folder on a loopback port (Debian's binaries,
as the tests start it: tests/postgres_server.py), fsync on; or `--url postgresql://…`.
SQLite: a file in a temporary folder (WAL). Writes bench/results/trace_store/load.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._report import revision, write_report  # noqa: E402

from bigloop.trace.records import Step  # noqa: E402
from bigloop.trace.store import TraceStore  # noqa: E402

OUT = ROOT / "bench" / "results" / "trace_store" / "load.md"


def _writer(target: str, worker: int, runs: int, steps: int) -> float:
    """Record `runs` runs of `steps` steps; the seconds it took."""
    store = TraceStore(target)
    start = time.perf_counter()
    for r in range(runs):
        run_id = f"w{worker:03d}-{r:05d}"
        store.start_run(run_id, "load", "none", {})
        for i in range(steps):
            store.add_step(
                Step(
                    run_id=run_id,
                    index=i,
                    kind="tool",
                    name="echo",
                    input={"i": i},
                    output=str(i),
                    seconds=0.0,
                    prompt_tokens=1,
                    completion_tokens=1,
                )
            )
        store.finish_run(run_id, "ok", "done", None)
    took = time.perf_counter() - start
    store.close()
    return took


def _check(target: str, writers: int, runs: int, steps: int) -> dict[str, int]:
    """Lost and repeated steps, and runs not finished, read back from the store."""
    store = TraceStore(target)
    rows = store._db.execute("SELECT run_id, idx FROM steps").fetchall()
    finished = store._db.execute("SELECT COUNT(*) FROM runs WHERE status = 'ok'").fetchone()[0]
    expected = {
        (f"w{w:03d}-{r:05d}", i) for w in range(writers) for r in range(runs) for i in range(steps)
    }
    got = [tuple(r) for r in rows]
    store.close()
    return {
        "lost": len(expected - set(got)),
        "repeated": len(got) - len(set(got)),
        "unexpected": len(set(got) - expected),
        "unfinished": writers * runs - finished,
    }


def measure(target: str, writers: int, runs: int, steps: int) -> dict[str, float]:
    TraceStore(target).close()  # the layout, created once before the writers start
    start = time.perf_counter()
    with ProcessPoolExecutor(writers) as pool:
        list(
            pool.map(
                _writer, [target] * writers, range(writers), [runs] * writers, [steps] * writers
            )
        )
    wall = time.perf_counter() - start
    checked = _check(target, writers, runs, steps)
    return {"wall_s": wall, "steps_per_s": writers * runs * steps / wall, **checked}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--url", help="an existing PostgreSQL database (default: a fresh server)")
    args = parser.parse_args()
    from tests import postgres_server

    with ExitStack() as stack:
        url = args.url
        if url is None:
            if (why := postgres_server.problem()) is not None:
                sys.exit(f"cannot start PostgreSQL here: {why}")
            url = postgres_server.fresh_database(stack.enter_context(postgres_server.server()))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        rows = {}
        for name, target in (("SQLite (WAL file)", str(folder / "traces.db")), ("PostgreSQL", url)):
            print(
                f"{name}: {args.writers} writers x {args.runs} runs x {args.steps} steps...",
                file=sys.stderr,
            )
            rows[name] = measure(target, args.writers, args.runs, args.steps)
            print(f"  {rows[name]}", file=sys.stderr)
    base = rows["SQLite (WAL file)"]["steps_per_s"]
    lines = [
        f"# Trace store under load ({revision()})",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/trace_store_load.py', *sys.argv[1:]])}`: "
        f"{args.writers} processes x {args.runs} runs x {args.steps} steps at once, "
        "one store, on this machine (2 cores).",
        "",
        "| store | wall s | steps/s | ratio to SQLite | lost | repeated | unexpected "
        "| unfinished runs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['wall_s']:.1f} | {r['steps_per_s']:.0f} | "
            f"{r['steps_per_s'] / base:.2f}x | {r['lost']:.0f} | {r['repeated']:.0f} | "
            f"{r['unexpected']:.0f} | {r['unfinished']:.0f} |"
        )
    write_report(OUT, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
