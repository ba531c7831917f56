"""Fuzz and soak every HTTP server bigloop starts (issue 26): `serve openai`, `serve a2a`,
`serve mcp --http` and the trace viewer, each started by the real CLI as its own
process, loopback only.

Each server gets a bounded, seeded stream of requests, CONCURRENCY at a time: valid ones,
malformed JSON, random JSON of the wrong shape, JSON nested up to 100,000 deep, bodies
over the 8 MiB cap (declared, and streamed without a length), invalid UTF-8 and lone
surrogates, a foreign Host (DNS rebinding), a foreign Origin, a 32 KB header, random
paths and methods. Counted as a crash: a 5xx other than 503 (busy), a connection the
server dropped, or the process gone. The server's resident memory is sampled all along;
the table gives its start, its peak (VmHWM) and its end.

The model behind the servers is a scripted OpenAI-compatible upstream on loopback (this
measures the servers, not a model).

    python bench/server_soak.py --requests 1500 --concurrency 32

writes bench/results/hardening/soak.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
BIGLOOP = str(Path(sys.executable).with_name("bigloop"))
CAP = 8 * 1024 * 1024


class _Upstream(BaseHTTPRequestHandler):
    """A scripted OpenAI-compatible model: every chat answers with a final answer."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content = json.dumps({"answer": "Paris."})
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "scripted",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    name: str
    command: list[str]
    port: int
    path: str  # where valid requests go
    valid: Callable[[random.Random], tuple[str, dict[str, Any]]]  # (method, httpx kwargs)


def _chat(rng: random.Random) -> tuple[str, dict[str, Any]]:
    text = rng.choice(["What is the capital of France?", "hi", "Add 2 and 3."])
    return "POST", {"json": {"model": "m", "messages": [{"role": "user", "content": text}]}}


def _a2a(rng: random.Random) -> tuple[str, dict[str, Any]]:
    message = {
        "role": "ROLE_USER",
        "parts": [{"text": "What is the capital of France?"}],
        "messageId": f"m{rng.randrange(10**9)}",
    }
    payload = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    return "POST", {"json": payload, "headers": {"A2A-Version": "1.0"}}


def _mcp(rng: random.Random) -> tuple[str, dict[str, Any]]:
    payload = {
        "jsonrpc": "2.0",
        "id": rng.randrange(1000),
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "soak", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    return "POST", {"json": payload, "headers": headers}


def _ui(rng: random.Random) -> tuple[str, dict[str, Any]]:
    return "GET", {}


def servers(upstream: str, folder: Path) -> list[Server]:
    model = ["--model", "scripted", "--base-url", upstream]
    ports = [free_port() for _ in range(4)]
    trace = str(folder / "traces.db")
    return [
        Server(
            "serve openai",
            [BIGLOOP, "serve", "openai", *model, "--port", str(ports[0])],
            ports[0],
            "/v1/chat/completions",
            _chat,
        ),
        Server(
            "serve a2a",
            [BIGLOOP, "serve", "a2a", *model, "--port", str(ports[1]), "--trace-db", trace],
            ports[1],
            "/",
            _a2a,
        ),
        Server(
            "serve mcp --http",
            [BIGLOOP, "serve", "mcp", *model, "--http", f"127.0.0.1:{ports[2]}"],
            ports[2],
            "/mcp",
            _mcp,
        ),
        Server(
            "ui",
            [BIGLOOP, "ui", "--trace-db", trace, "--port", str(ports[3])],
            ports[3],
            "/api/runs",
            _ui,
        ),
    ]


# ------------------------------------------------------------------ hostile requests


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 4 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 2**63, 1e308, 3.5])
    if kind == 2:
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(20)))
    if kind == 3:
        return rng.choice(["", "model", "messages", "\u202e", "\x00"])
    if kind == 4:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["model", "messages", "role", "content", "jsonrpc", "method", "params", "id"]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def _streamed(size: int) -> Callable[[], AsyncIterator[bytes]]:
    async def chunks() -> AsyncIterator[bytes]:
        sent = 0
        while sent < size:
            yield b" " * (1 << 20)
            sent += 1 << 20

    return chunks


HOSTILE: dict[str, Callable[[random.Random, Server], tuple[str, dict[str, Any]]]] = {
    "malformed json": lambda r, s: ("POST", {"content": b'{"model": "m", "messages": [{'}),
    "random bytes": lambda r, s: ("POST", {"content": r.randbytes(r.randrange(1, 4096))}),
    "wrong shape": lambda r, s: ("POST", {"content": json.dumps(_random_json(r)).encode()}),
    "deep json": lambda r, s: (
        "POST",
        {"content": (lambda d: b"[" * d + b"]" * d)(r.choice([1000, 20_000, 100_000]))},
    ),
    "huge declared": lambda r, s: ("POST", {"content": b"[" + b" " * (CAP + 1024) + b"]"}),
    "huge streamed": lambda r, s: ("POST", {"content": _streamed(CAP + (1 << 20))()}),
    "invalid utf-8": lambda r, s: (
        "POST",
        {"content": b'{"model": "\xff\xfe", "x": "\xed\xa0\x80"}'},
    ),
    "lone surrogate": lambda r, s: (
        "POST",
        {"content": b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800"}]}'},
    ),
    "foreign host": lambda r, s: (
        s.valid(r)[0],
        {**s.valid(r)[1], "headers": {"Host": "evil.example"}},
    ),
    "foreign origin": lambda r, s: (
        "POST",
        {
            "content": b"{}",
            "headers": {"Origin": "https://evil.example", "Content-Type": "text/plain"},
        },
    ),
    "huge header": lambda r, s: ("GET", {"headers": {"X-Junk": "a" * 32_000}}),
    "random path": lambda r, s: (
        r.choice(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
        {"path": "/" + "".join(r.choice("abc/%.._-") for _ in range(r.randrange(30)))},
    ),
}


@dataclass
class Outcome:
    server: str
    requests: int = 0
    by_kind: dict[str, Counter[int]] = field(default_factory=dict)
    crashes: list[str] = field(default_factory=list)
    rss_start_mb: float = 0.0
    rss_peak_mb: float = 0.0
    rss_end_mb: float = 0.0
    seconds: float = 0.0
    alive: bool = True
    logged_tracebacks: int = 0  # exceptions the server logged (and answered)
    logged: list[str] = field(default_factory=list)  # the exceptions' last lines, a few


def _an_error(line: str) -> bool:
    """The last line of a logged traceback ("ValueError: ..."), roughly."""
    head = line.split(":", 1)[0]
    return head.endswith(("Error", "Exception")) and " " not in head


def _memory(pid: int, key: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def _one(
    http: httpx.AsyncClient, server: Server, kind: str, rng: random.Random, out: Outcome
) -> None:
    if kind == "valid":
        method, options = server.valid(rng)
    else:
        method, options = HOSTILE[kind](rng, server)
    path = options.pop("path", server.path)
    try:  # the status only: an event stream (MCP's GET) stays open by design
        async with http.stream(method, path, **options) as response:
            code = response.status_code
            if response.headers.get("content-type", "").startswith("application/json"):
                body = await response.aread()
                if b'"code":-32603' in body.replace(b" ", b""):  # JSON-RPC internal error
                    out.crashes.append(f"{kind}: JSON-RPC internal error {body[:200]!r}")
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError) as e:
        if kind == "huge header":  # h11 refuses to send it, or the server closes: not a crash
            code = 431
        else:
            out.crashes.append(f"{kind}: {type(e).__name__}: {e}")
            code = 0
    except httpx.TimeoutException:
        out.crashes.append(f"{kind}: timed out")
        code = 0
    out.by_kind.setdefault(kind, Counter())[code] += 1
    if code >= 500 and code != 503:
        out.crashes.append(f"{kind}: {code}")


async def soak(server: Server, requests: int, concurrency: int, seed: int) -> Outcome:
    out = Outcome(server.name)
    env = {**os.environ, "NO_COLOR": "1"}
    log = tempfile.TemporaryFile()  # a pipe nobody reads would block the server's logging
    process = subprocess.Popen(
        server.command, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=ROOT
    )
    base = f"http://127.0.0.1:{server.port}"
    try:
        await _wait_up(base, process, log)
        out.rss_start_mb = _memory(process.pid, "VmRSS")
        rng = random.Random(seed)
        kinds = ["valid"] * 6 + list(HOSTILE)
        gate = asyncio.Semaphore(concurrency)
        start = time.monotonic()
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:

            async def task(i: int) -> None:
                async with gate:
                    await _one(
                        http, server, kinds[i % len(kinds)], random.Random(rng.random()), out
                    )

            await asyncio.gather(*(task(i) for i in range(requests)))
        out.seconds = time.monotonic() - start
        out.requests = requests
        out.alive = process.poll() is None
        out.rss_end_mb = _memory(process.pid, "VmRSS")
        out.rss_peak_mb = _memory(process.pid, "VmHWM")
        if not out.alive:
            out.crashes.append(f"the process exited ({process.returncode})")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
        log.close()
        out.logged_tracebacks = text.count("Traceback (most recent call last)")
        out.logged = sorted({line for line in text.splitlines() if _an_error(line)})[:10]
    return out


async def _wait_up(base: str, process: subprocess.Popen[bytes], log: Any) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(base_url=base, timeout=2) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(log.read().decode()[-2000:])
            try:
                await http.get("/")
                return
            except httpx.TransportError:
                await asyncio.sleep(0.2)
    raise RuntimeError(f"{base} did not start")


def report(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    lines = [
        "# HTTP servers: fuzz and soak",
        "",
        f"`python bench/server_soak.py --requests {args.requests} --concurrency "
        f"{args.concurrency} --seed {args.seed}` — each server started by the real CLI, "
        "loopback only, a scripted upstream model. Crash: a 5xx other than 503, a dropped "
        "connection, a timeout or the process gone.",
        "",
        "| server | requests | seconds | crashes | alive | tracebacks logged | RSS start MB "
        "| RSS peak MB | RSS end MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.server} | {o.requests} | {o.seconds:.1f} | {len(o.crashes)} | "
            f"{'yes' if o.alive else 'NO'} | {o.logged_tracebacks} | {o.rss_start_mb:.0f} | "
            f"{o.rss_peak_mb:.0f} | "
            f"{o.rss_end_mb:.0f} |"
        )
    lines += ["", "Status codes by kind of request:", ""]
    kinds = ["valid", *HOSTILE]
    lines.append("| kind | " + " | ".join(o.server for o in outcomes) + " |")
    lines.append("|---" * (len(outcomes) + 1) + "|")
    for kind in kinds:
        cells = []
        for o in outcomes:
            codes = o.by_kind.get(kind, Counter())
            cells.append(", ".join(f"{c}×{n}" for c, n in sorted(codes.items())) or "-")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    for o in outcomes:
        if o.logged:
            lines += ["", f"Exceptions {o.server} logged (and answered; a few):", ""]
            lines += [f"- `{line[:200]}`" for line in o.logged]
        if o.crashes:
            lines += ["", f"Crashes of {o.server} (first 10):", ""]
            lines += [f"- {c}" for c in o.crashes[:10]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--only", help="run only the server whose name contains this")
    parser.add_argument("--out", default=str(ROOT / "bench/results/hardening/soak"))
    args = parser.parse_args()
    upstream_server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=upstream_server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{upstream_server.server_address[1]}/v1"
    folder = Path(tempfile.mkdtemp(prefix="bigloop-soak-"))
    outcomes = []
    try:
        for server in servers(upstream, folder):
            if args.only and args.only not in server.name:
                continue
            print(f"{server.name}: {args.requests} requests...", file=sys.stderr, flush=True)
            outcome = asyncio.run(soak(server, args.requests, args.concurrency, args.seed))
            print(
                f"  {len(outcome.crashes)} crashes, peak RSS {outcome.rss_peak_mb:.0f} MB, "
                f"{outcome.seconds:.1f} s",
                file=sys.stderr,
            )
            outcomes.append(outcome)
    finally:
        upstream_server.shutdown()
        shutil.rmtree(folder, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(report(outcomes, args))
    data = [{**asdict(o), "by_kind": {k: dict(v) for k, v in o.by_kind.items()}} for o in outcomes]
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
