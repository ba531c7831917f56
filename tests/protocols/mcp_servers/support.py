"""What the MCP tests share: the servers' command lines, this process's children (no
server may outlive its test), loopback servers, scripted replies."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from bigloop import ChatModel
from bigloop.protocols.openai_server import create_app
from tests import loopback

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
TIME_SERVER = str(BIN / "mcp-server-time")
GIT_SERVER = str(BIN / "mcp-server-git")
MISBEHAVING = f"{sys.executable} {HERE / 'misbehaving.py'}"
SCRIPTED_LOOP = f"{sys.executable} {HERE / 'scripted_loop.py'}"


def children() -> list[tuple[int, str, str]]:
    """This process's child processes: (pid, state, command line); zombies included."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:  # the process ended meanwhile
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == os.getpid():
            found.append((int(entry.name), state, command))
    return found


def servers_running() -> list[tuple[int, str, str]]:
    """Children that are MCP servers the tests started."""
    names = ("misbehaving.py", "scripted_loop.py", "mcp-server-", "mcp_server_", "serve mcp")
    return [c for c in children() if any(n in c[2] for n in names)]


def wait_for_port(port: int, process: subprocess.Popen[str], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, f"the server exited: {process.communicate()[1]}"
        assert time.monotonic() < deadline, "the server did not start listening"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)


@contextmanager
def http_server(command: list[str], port: int) -> Iterator[subprocess.Popen[str]]:
    """`command` (an HTTP server on `port`) running until the block ends."""
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


@contextmanager
def model_server(model: ChatModel) -> Iterator[str]:
    """`model` behind an OpenAI-compatible endpoint on a free loopback port, in a
    thread; its base URL (for `--model NAME --base-url URL`)."""
    with serving(create_app(model)) as url:
        yield f"{url}v1"


def serving(app: Any, port: int = 0) -> AbstractContextManager[str]:
    """The ASGI `app` served by uvicorn in a thread on loopback (on `port`, or a free
    one) until the block ends; its URL, `http://127.0.0.1:PORT/`."""
    return loopback.serving(lambda _: app, port, lifespan="on", timeout_graceful_shutdown=1)
