"""MCP call overhead: one tool call through MCP (stdio, streamable HTTP) against calling
the same Python function directly, in one process, as ratios.

The tool is `add(a, b)`. Rows:

- the function called directly (Python call), and as a bigloop `Tool` (`Tool.call`:
  validation, rendering; the baseline of the ratios: what a loop pays for a local tool);
- through MCP with bigloop's client (`McpServer`: the call crosses to its worker thread,
  then the `mcp` SDK's client) to `bigloop serve mcp`'s server (`create_server`) serving
  the same tool from a subprocess: over stdio, and over streamable HTTP (uvicorn,
  loopback);
- the same two through the SDK's `Client` alone (no worker thread), to show what
  bigloop's connection handling adds;
- the cost of one connection (start the stdio server, handshake, list the tools), which
  the kept connection pays once instead of per call.

    .venv/bin/python bench/mcp_overhead.py [--n 500]

No model is involved. Writes bench/results/mcp/overhead.md and overhead.json.
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from bigloop import Loop, ScriptedModel, tool
from bigloop.atoms.mcp_client import McpServer
from bigloop.protocols.mcp_server import serve_mcp

RESULTS = Path(__file__).parent / "results" / "mcp"
ARGS = {"a": 2, "b": 3}


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


async def timed(call: Callable[[], Awaitable[Any]], n: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        await call()
    seconds = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        seconds.append(time.perf_counter() - start)
    return seconds


async def python_call() -> int:
    result: int = add.fn(**ARGS)
    return result


async def sdk_client_calls(target: StdioServerParameters | str, n: int) -> list[float]:
    async with Client(target, cache=None) as client:  # as McpServer's client
        return await timed(lambda: client.call_tool("add", ARGS), n, warmup=20)


def percentiles(seconds: list[float]) -> tuple[float, float]:
    """p50 and p95, in milliseconds."""
    return statistics.median(seconds) * 1000, statistics.quantiles(seconds, n=20)[-1] * 1000


def row(
    seconds: list[float], python: tuple[float, float], tool_call: tuple[float, float]
) -> dict[str, float]:
    p50, p95 = percentiles(seconds)
    return {
        "p50_ms": p50,
        "p95_ms": p95,
        "x_python_p50": p50 / python[0],
        "x_tool_call_p50": p50 / tool_call[0],
        "x_tool_call_p95": p95 / tool_call[1],
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the HTTP server exited"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError("the HTTP server did not start")


def measure(n: int) -> dict[str, dict[str, float]]:
    rows: dict[str, list[float]] = {}
    rows["Python call add(2, 3)"] = asyncio.run(timed(python_call, n, warmup=20))
    rows["bigloop Tool.call (in process)"] = asyncio.run(
        timed(lambda: add.call(ARGS), n, warmup=20)
    )
    command = f"{sys.executable} {Path(__file__).resolve()} --serve"
    start = time.perf_counter()
    with McpServer(command) as server:
        remote = next(t for t in server.tools() if t.name == "add")
        connect_s = time.perf_counter() - start
        rows["MCP stdio, bigloop client (McpServer)"] = asyncio.run(
            timed(lambda: remote.call(ARGS), n, warmup=20)
        )
    stdio = StdioServerParameters(command=sys.executable, args=[str(Path(__file__)), "--serve"])
    rows["MCP stdio, SDK Client alone"] = asyncio.run(sdk_client_calls(stdio, n))
    port = free_port()
    http = subprocess.Popen(
        [sys.executable, str(Path(__file__)), "--serve", "--http", f"127.0.0.1:{port}"]
    )
    try:
        wait_for(port, http)
        url = f"http://127.0.0.1:{port}/mcp"
        with McpServer(url) as server:
            remote = next(t for t in server.tools() if t.name == "add")
            rows["MCP HTTP, bigloop client (McpServer)"] = asyncio.run(
                timed(lambda: remote.call(ARGS), n, warmup=20)
            )
        rows["MCP HTTP, SDK Client alone"] = asyncio.run(sdk_client_calls(url, n))
    finally:
        http.terminate()
        http.wait(timeout=10)
    python = percentiles(rows["Python call add(2, 3)"])
    tool_call = percentiles(rows["bigloop Tool.call (in process)"])
    table = {name: row(seconds, python, tool_call) for name, seconds in rows.items()}
    table["stdio connection (start, handshake, list tools), once"] = {
        "p50_ms": connect_s * 1000,
        "p95_ms": connect_s * 1000,
    }
    return table


def markdown(table: dict[str, dict[str, float]], n: int, load: str) -> str:
    lines = [
        "# MCP call overhead",
        "",
        "Command: `.venv/bin/python bench/mcp_overhead.py`",
        "",
        f"One call of `add(2, 3)`, {n} timed calls per row after 20 warm-up calls, one "
        "process; the MCP server is `bigloop.protocols.mcp_server.create_server` serving "
        "the same tool from a subprocess (stdio, or streamable HTTP on loopback). "
        "Ratios of the p50s (and p95s) to the Python call and to `Tool.call` in process "
        "(what a loop pays for a local tool: validation, a worker thread, rendering). "
        "The connection row is one measurement of what a kept connection saves per call.",
        "",
        f"Machine: {os.cpu_count()} cores; load average (1 min) {load}.",
        "",
        "| configuration | p50 ms | p95 ms | x Python call (p50) | x Tool.call (p50) "
        "| x Tool.call (p95) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in table.items():
        ratios = (
            f"{r['x_python_p50']:,.0f} | {r['x_tool_call_p50']:.1f} | {r['x_tool_call_p95']:.1f}"
            if "x_python_p50" in r
            else "— | — | —"
        )
        lines.append(f"| {name} | {r['p50_ms']:.4g} | {r['p95_ms']:.4g} | {ratios} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--serve", action="store_true", help="be the MCP server (stdio)")
    parser.add_argument("--http", default=None, help="with --serve: HOST:PORT")
    options = parser.parse_args()
    if options.serve:
        serve_mcp(Loop(ScriptedModel([]), [add]), http=options.http)
        return
    before = os.getloadavg()[0]
    table = measure(options.n)
    load = f"{before:.1f} before, {os.getloadavg()[0]:.1f} after"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "overhead.json").write_text(
        json.dumps({"n": options.n, "load": load, "rows": table}, indent=2) + "\n"
    )
    text = markdown(table, options.n, load)
    (RESULTS / "overhead.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
