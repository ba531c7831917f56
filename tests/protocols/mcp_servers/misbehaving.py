"""An MCP server (the `mcp` SDK's MCPServer) with well-behaved tools and tools that
misbehave: one hangs, one crashes the process mid-call, one returns megabytes.

    python misbehaving.py [--slow-start SECONDS] [--http PORT]

stdio by default; with --http, streamable HTTP on 127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import argparse
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("misbehaving", log_level="WARNING")
READ = ToolAnnotations(read_only_hint=True)


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(annotations=READ)
def echo(text: str) -> str:
    """Return the text as it is."""
    return text


@server.tool(annotations=READ)
def weather(city: str) -> Weather:
    """Today's weather in a city."""
    return Weather(city=city, celsius=21.5)


@server.tool(annotations=READ)
def hang(seconds: float = 3600) -> str:
    """Sleep in a worker thread (the server still answers other requests)."""
    time.sleep(seconds)
    return "awake"


@server.tool(annotations=READ)
async def hang_loop(seconds: float = 3600) -> str:
    """Block the server's event loop: it answers nothing more."""
    time.sleep(seconds)
    return "awake"


@server.tool(annotations=READ)
def crash() -> str:
    """Exit the process in the middle of the call."""
    os._exit(3)


@server.tool(annotations=READ, structured_output=False)
def big(megabytes: int = 10) -> str:
    """Return that many megabytes of text."""
    return "x" * (megabytes * 1_000_000)


@server.tool(annotations=READ)
def fail(reason: str) -> str:
    """Raise: the result is an error."""
    raise ValueError(reason)


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_everything(confirm: bool) -> str:
    """Pretend to delete everything (annotated destructive)."""
    return "deleted" if confirm else "kept"


@server.tool()
def note(text: str) -> str:
    """Pretend to write a note (no annotations)."""
    return f"noted: {text}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow-start", type=float, default=0.0)
    parser.add_argument("--http", type=int, default=None)
    options = parser.parse_args()
    time.sleep(options.slow_start)
    if options.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
