"""Serving throughput: `bigloop serve openai` as one process, and on Ray Serve with N
replicas, in one run, on the embedded model.

Each configuration is the real CLI in a subprocess on a loopback port. After one warm-up
request, C concurrent clients send the suite's dev tasks (their text, with bigloop's
default tools offered as OpenAI tools) until R requests are answered. Reported: requests
per second, completion tokens per second and latency percentiles, with the ratio of each
configuration's requests/s to the single process's from the same run. With --trace-db
every server records its completions in one store; the bench then counts the runs each
replica recorded.

    .venv/bin/python bench/serve_replicas.py [--requests 16] [--clients 4] [--replicas 1,2]

Writes bench/results/serve_replicas/throughput.md. Needs the 'serve-ray' extra (ray[serve]).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._report import revision, write_report  # noqa: E402
from bigloop_eval.suite.catalog import split  # noqa: E402
from tests.loopback import free_port  # noqa: E402

from bigloop.atoms.builtin import default_tools  # noqa: E402
from bigloop.atoms.models.base import ToolSpec  # noqa: E402
from bigloop.trace.store import TraceStore  # noqa: E402

OUT = ROOT / "bench" / "results" / "serve_replicas" / "throughput.md"
BIGLOOP = str(ROOT / ".venv" / "bin" / "bigloop")


def _requests(count: int) -> list[dict[str, Any]]:
    tools = [
        ToolSpec(name=t.name, description=t.description, parameters=t.schema).to_openai()
        for t in default_tools()
    ]
    texts = [t.text for t in split("dev")]
    return [
        {
            "model": "embedded",
            "messages": [{"role": "user", "content": texts[i % len(texts)]}],
            "tools": tools,
            "max_tokens": 256,
        }
        for i in range(count)
    ]


def _wait_ready(url: str, proc: subprocess.Popen[bytes], limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited ({proc.returncode}); see its log")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(1)
    sys.exit(f"no server at {url} after {limit:.0f} s")


async def _load(url: str, bodies: list[dict[str, Any]], clients: int) -> dict[str, float]:
    queue = list(bodies)
    latencies: list[float] = []
    tokens = 0
    failed = 0

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal tokens, failed
        while queue:
            body = queue.pop()
            start = time.perf_counter()
            r = await http.post(f"{url}/chat/completions", json=body)
            latencies.append(time.perf_counter() - start)
            if r.status_code != 200:
                failed += 1
                continue
            tokens += r.json()["usage"]["completion_tokens"]

    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=600) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
    wall = time.perf_counter() - start
    latencies.sort()
    return {
        "wall_s": wall,
        "req_per_s": len(bodies) / wall,
        "tokens_per_s": tokens / wall,
        "p50_s": statistics.median(latencies),
        "p90_s": latencies[int(0.9 * (len(latencies) - 1))],
        "failed": failed,
    }


def measure(replicas: int, args: argparse.Namespace, trace_db: Path) -> dict[str, Any]:
    """One configuration (0 replicas: the single process, no Ray)."""
    port = free_port()
    command = [BIGLOOP, "serve", "openai", "--port", str(port), "--trace-db", str(trace_db)]
    if replicas:
        command += ["--ray", "local", "--replicas", str(replicas)]
    log = open(trace_db.with_suffix(".log"), "wb")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        started = time.perf_counter()
        _wait_ready(url, proc)
        ready = time.perf_counter() - started
        asyncio.run(_load(url, _requests(1), 1))  # warm-up
        result = asyncio.run(_load(url, _requests(args.requests), args.clients))
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        if replicas:
            subprocess.run([str(ROOT / ".venv/bin/ray"), "stop", "--force"], capture_output=True)
    store = TraceStore(trace_db, create=False)
    by_replica = Counter(
        json.loads(c)["replica"] for (c,) in store._db.execute("SELECT config FROM runs")
    )
    store.close()
    return {**result, "ready_s": ready, "recorded": dict(by_replica)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--replicas", default="1,2", help="comma-separated replica counts")
    args = parser.parse_args()
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in [0, *(int(r) for r in args.replicas.split(","))]:
            name = "one process (no Ray)" if n == 0 else f"Ray Serve, {n} replica(s)"
            print(f"{name}...", file=sys.stderr)
            rows[name] = measure(n, args, Path(tmp) / f"serve{n}.db")
            print(f"  {rows[name]}", file=sys.stderr)
    base = rows["one process (no Ray)"]["req_per_s"]
    lines = [
        f"# `bigloop serve openai`: one process against Ray Serve replicas ({revision()})",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/serve_replicas.py', *sys.argv[1:]])}`: "
        f"{args.requests} requests (the suite's dev tasks with the default tools), "
        f"{args.clients} clients at once, embedded model, this machine "
        f"({os.cpu_count()} cores; each replica decodes on cores / replicas threads).",
        "",
        "| server | ready s | req/s | ratio | completion tok/s | p50 s | p90 s | failed "
        "| runs recorded per replica |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        recorded = ", ".join(str(v) for v in sorted(r["recorded"].values(), reverse=True))
        lines.append(
            f"| {name} | {r['ready_s']:.0f} | {r['req_per_s']:.3f} | "
            f"{r['req_per_s'] / base:.2f}x | {r['tokens_per_s']:.1f} | {r['p50_s']:.1f} | "
            f"{r['p90_s']:.1f} | {r['failed']} | {recorded} |"
        )
    write_report(OUT, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
