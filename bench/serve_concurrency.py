"""`bigloop serve openai` under concurrent clients: one model process, requests queued.

Starts the real command (`bigloop serve openai`, the embedded model) on a loopback port,
sends the same chat requests (tools offered, greedy) first one after the other, then
from `--clients` clients at once, and reports for each: all answered or not, wall time,
throughput (requests/s), per-request latency and its queueing delay (latency minus the
median sequential latency), and how many processes the server had (itself and its
children) with its resident memory. Ratios are against the sequential run measured
beside it.

    .venv/bin/python bench/serve_concurrency.py [--clients 8] [--requests 16]

Writes bench/results/serve/concurrency.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

RESULTS = Path(__file__).parent / "results" / "serve"
BIGLOOP = Path(sys.executable).with_name("bigloop")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "the city"}},
                "required": ["city"],
            },
        },
    }
]
CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Tokyo", "Quito", "Perth", "Dakar"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def processes(pid: int) -> tuple[int, int]:
    """(processes in the server's tree, their resident MiB)."""
    tree = [pid]
    i = 0
    while i < len(tree):
        try:
            tasks = Path(f"/proc/{tree[i]}/task").iterdir()
            for task in tasks:
                kids = (task / "children").read_text().split()
                tree += [int(k) for k in kids if int(k) not in tree]
        except OSError:
            pass
        i += 1
    rss = 0
    for p in tree:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1])
        except OSError:
            pass
    return len(tree), rss // 1024


async def one(client: httpx.AsyncClient, url: str, i: int) -> dict[str, Any]:
    body = {
        "model": "embedded",
        "messages": [{"role": "user", "content": f"What is the weather in {CITIES[i % 8]}?"}],
        "tools": TOOLS,
        "temperature": 0,
    }
    start = time.perf_counter()
    response = await client.post(f"{url}/v1/chat/completions", json=body)
    seconds = time.perf_counter() - start
    data = response.json()
    calls = (data.get("choices") or [{}])[0].get("message", {}).get("tool_calls") or []
    return {"status": response.status_code, "seconds": seconds, "calls": len(calls)}


async def run(url: str, n: int, clients: int) -> tuple[list[dict[str, Any]], float]:
    gate = asyncio.Semaphore(clients)
    async with httpx.AsyncClient(timeout=600) as client:

        async def limited(i: int) -> dict[str, Any]:
            async with gate:
                return await one(client, url, i)

        start = time.perf_counter()
        rows = await asyncio.gather(*(limited(i) for i in range(n)))
        return list(rows), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=16)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(BIGLOOP), "serve", "openai", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        asyncio.run(run(url, 1, 1))  # warm: the first request saves the prompt's prefix
        report: dict[str, Any] = {"clients": args.clients, "requests": args.requests}
        for label, clients in (("sequential", 1), ("concurrent", args.clients)):
            rows, wall = asyncio.run(run(url, args.requests, clients))
            procs, rss = processes(server.pid)
            report[label] = {
                "mean_s": round(statistics.mean(r["seconds"] for r in rows), 2),
                "answered": sum(r["status"] == 200 for r in rows),
                "with_calls": sum(r["calls"] > 0 for r in rows),
                "wall_s": round(wall, 2),
                "throughput_rps": round(len(rows) / wall, 3),
                "p50_s": round(statistics.median(r["seconds"] for r in rows), 2),
                "max_s": round(max(r["seconds"] for r in rows), 2),
                "server_processes": procs,
                "server_rss_mib": rss,
            }
        base = report["sequential"]["p50_s"]
        conc = report["concurrent"]
        conc["mean_queueing_s"] = round(max(0.0, conc["mean_s"] - base), 2)
        report["throughput_ratio"] = round(
            conc["throughput_rps"] / report["sequential"]["throughput_rps"], 3
        )
    finally:
        server.terminate()
        server.wait(30)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "concurrency.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"## `bigloop serve openai`, embedded model, {args.requests} requests",
        "",
        f"Command: `.venv/bin/python bench/serve_concurrency.py --clients {args.clients} "
        f"--requests {args.requests}` ({os.cpu_count()} cores)",
        "",
        "| run | answered | with calls | wall s | requests/s | p50 s | max s | server "
        "processes | server RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label in ("sequential", "concurrent"):
        r = report[label]
        lines.append(
            f"| {label} | {r['answered']}/{args.requests} | {r['with_calls']} | {r['wall_s']} "
            f"| {r['throughput_rps']} | {r['p50_s']} | {r['max_s']} | {r['server_processes']} "
            f"| {r['server_rss_mib']} |"
        )
    lines += [
        "",
        f"Throughput, {args.clients} clients vs one: **{report['throughput_ratio']:.2f}x**; "
        f"mean queueing delay {conc['mean_queueing_s']} s per request (requests wait their "
        "turn for the one model).",
    ]
    (RESULTS / "concurrency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
