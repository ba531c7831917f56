"""A2A round-trip latency: one task sent to `bigloop serve a2a`'s app and streamed to its
answer, against the same loop's `Loop.run` called in-process.

Workload: a scripted model (no model time: what is measured is bigloop's and the
protocol's overhead) calls one tool, then answers; the trace is written to SQLite in every
configuration. The agent runs in a uvicorn thread of this process (loopback HTTP); the
configurations run one after the other in one process, so they are read as ratios to the
in-process run measured beside them.

    .venv/bin/python bench/a2a_latency.py [--n 300]

Writes bench/results/a2a/latency.md and latency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import cast

from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState

from bigloop import FunctionModel, Loop, ModelResponse, ToolCall, ToolSpec, TraceStore, tool
from bigloop import Message as ChatMessage
from bigloop.atoms.a2a_client import a2a_agent_tool
from bigloop.protocols.a2a_server import serving

RESULTS = Path(__file__).parent / "results" / "a2a"
TASK = "What is 2 + 3?"


@tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def reply(messages: list[ChatMessage], specs: list[ToolSpec]) -> ModelResponse:
    if any(m.role == "tool" for m in messages):
        return ModelResponse(text="2 + 3 = 5.")
    return ModelResponse(tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})])


async def timed(
    configs: dict[str, Callable[[], Awaitable[str]]], n: int, warmup: int
) -> dict[str, list[float]]:
    """Seconds per call of each configuration (each must answer "2 + 3 = 5."), after
    `warmup` calls; interleaved, one call of each per round, so that a change in the
    machine's load falls on every configuration alike."""
    samples: dict[str, list[float]] = {name: [] for name in configs}
    for i in range(warmup + n):
        for name, fn in configs.items():
            start = time.perf_counter()
            out = await fn()
            seconds = time.perf_counter() - start
            assert out == "2 + 3 = 5.", (name, out)
            if i >= warmup:
                samples[name].append(seconds)
    return samples


def message() -> SendMessageRequest:
    text = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=TASK)])
    return SendMessageRequest(message=text)


async def through(client: Client) -> str:
    """One task through the SDK client; the answer artifact's text."""
    answer, state = "", None
    stream = cast(AsyncGenerator[StreamResponse], client.send_message(message()))
    async with aclosing(stream):
        async for event in stream:
            if event.HasField("artifact_update"):
                answer = event.artifact_update.artifact.parts[0].text
            elif event.HasField("status_update"):
                state = event.status_update.status.state
            elif event.HasField("task"):
                state = event.task.status.state
                answer = "".join(a.parts[0].text for a in event.task.artifacts) or answer
    assert state == TaskState.TASK_STATE_COMPLETED, state
    return answer


def summary(samples: list[float], base: list[float] | None) -> dict[str, float]:
    q = statistics.quantiles(samples, n=20, method="inclusive")
    row = {"p50_ms": statistics.median(samples) * 1000, "p95_ms": q[18] * 1000}
    if base is not None:
        b = summary(base, None)
        row["x_p50"] = row["p50_ms"] / b["p50_ms"]
        row["x_p95"] = row["p95_ms"] / b["p95_ms"]
    return row


async def measure(loop: Loop, url: str, n: int, warmup: int) -> dict[str, list[float]]:
    async def direct() -> str:
        result = await loop.run(TASK)
        return result.answer or ""

    streaming = await ClientFactory(ClientConfig()).create_from_url(url)
    blocking = await ClientFactory(ClientConfig(streaming=False)).create_from_url(url)
    remote = a2a_agent_tool(url, timeout_s=30)
    configs: dict[str, Callable[[], Awaitable[str]]] = {
        "Loop.run in-process": direct,
        "A2A, SDK client, streaming (SendStreamingMessage)": lambda: through(streaming),
        "A2A, SDK client, blocking (SendMessage)": lambda: through(blocking),
        "A2A, a2a_agent_tool call (new connection per call)": lambda: remote.call({"task": TASK}),
    }
    try:
        return await timed(configs, n, warmup)
    finally:
        await streaming.close()
        await blocking.close()


def markdown(rows: dict[str, dict[str, float]], n: int, command: str, load: str) -> str:
    lines = [
        "# A2A round-trip latency",
        "",
        f"Command: `{command}`",
        "",
        f"One task (a scripted model calls one tool, then answers; trace written to SQLite), "
        f"{n} timed runs per configuration after a warm-up, interleaved (one of each per "
        "round), one process: the agent is "
        "`bigloop serve a2a`'s app in a uvicorn thread on loopback. The scripted model "
        "takes no time, so the A2A rows measure protocol overhead (HTTP, JSON-RPC, SSE, "
        "the SDK's task store and event queues); x = ratio to the in-process run.",
        "",
        f"Machine: 2 cores; load average (1 min) {load} (other jobs were running).",
        "",
        "| configuration | p50 ms | p95 ms | x p50 | x p95 |",
        "|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
            f"{r.get('x_p50', 1.0):.1f} | {r.get('x_p95', 1.0):.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="timed runs per configuration")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        loop = Loop(FunctionModel(reply), [add], store=TraceStore(Path(tmp) / "traces.db"))
        with serving(loop, name="adder") as url:
            samples = asyncio.run(measure(loop, url, args.n, args.warmup))
    base = samples["Loop.run in-process"]
    rows = {name: summary(s, None if s is base else base) for name, s in samples.items()}
    load = f"{before:.1f} before, {os.getloadavg()[0]:.1f} after"
    command = ".venv/bin/python bench/a2a_latency.py" + "".join(f" {a}" for a in sys.argv[1:])
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = markdown(rows, args.n, command, load)
    (RESULTS / "latency.md").write_text(text)
    data = {"n": args.n, "load": load, "rows": rows}
    (RESULTS / "latency.json").write_text(json.dumps(data, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
