"""The bridge: a sandboxed program calls the loop's tools as Python functions.

A program run by `run_sandboxed(..., bridge=...)` sees each offered tool as a function of
its own name (`sql_query(query="...")`); a call crosses the kernel boundary as one JSON
line on a pipe of its own (not the program's output), and the host answers it with
`Bridge.call`, the loop's own path for a call (validation, checks, approvals,
timeouts, the trace). Inside the program the result is the tool's output (parsed when
it is JSON), and a refused or failed call raises `ToolError` with the reason, as data the
program can catch.

What the host trusts: nothing the program writes. A line that is not a JSON object with
a known tool name and an object of arguments gets an error reply; a tool that was not
offered is refused; after `max_calls` calls every further one is refused; a line longer
than `max_line` bytes, or more than `max_calls` + `_SPARE_REPLIES` messages, ends the
bridge (the program's next call then fails), and the sandbox's wall clock ends the rest.
The program cannot answer its own calls: it holds only the request pipe's write end and
the reply pipe's read end.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bigloop.atoms.models.base import ToolSpec

__all__ = ["Bridge", "BridgeReply", "program_stubs"]

_SPARE_REPLIES = 50
"""Error replies given past `max_calls` before the bridge closes (a program that catches
the refusal and retries gets told, then cut off)."""


@dataclass(frozen=True, kw_only=True)
class BridgeReply:
    """The host's answer to one call: the tool's output, or why there is none."""

    ok: bool
    output: str
    reason: str | None = None  # e.g. "refused", "failed", "not_offered", "budget"

    def line(self, call_id: object) -> bytes:
        data = {"id": call_id, "ok": self.ok, "output": self.output, "reason": self.reason}
        return (json.dumps(data) + "\n").encode()


@dataclass(kw_only=True)
class Bridge:
    """What a program may call and how each call is made.

    Attributes:
        tools: the offered tools; each becomes a function in the program.
        call: makes one call on the host (`(name, arguments) -> BridgeReply`).
        max_calls: calls one program may make.
        max_line: the longest request line accepted, in bytes.
        calls: the calls made so far (name, arguments), in order.
    """

    tools: list[ToolSpec]
    call: Callable[[str, dict[str, Any]], Awaitable[BridgeReply]]
    max_calls: int = 20
    max_line: int = 64_000
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def stubs(self) -> list[dict[str, Any]]:
        """The tools as the child defines them: name, parameters in order, docstring."""
        return [
            {
                "name": t.name,
                "params": list(t.parameters.get("properties", {})),
                "doc": t.description,
            }
            for t in self.tools
        ]

    async def serve(self, requests: int, replies: int) -> None:
        """Answer the program's calls until it closes its end (or breaks the rules);
        `requests`/`replies`: the host's ends of the two pipes (closed here)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=self.max_line)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(requests, "rb", 0)
        )
        try:
            for _ in range(self.max_calls + _SPARE_REPLIES):
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    return  # a line past max_line: the bridge ends
                if not line:
                    return
                call_id, reply = await self._answer(line)
                try:
                    await asyncio.to_thread(_write_all, replies, reply.line(call_id))
                except OSError:
                    return  # the program is gone
        finally:
            transport.close()
            os.close(replies)

    async def _answer(self, line: bytes) -> tuple[object, BridgeReply]:
        try:
            request = json.loads(line)
        except ValueError:
            return None, BridgeReply(ok=False, output="not a JSON request", reason="invalid")
        if not isinstance(request, dict):
            return None, BridgeReply(ok=False, output="not a JSON object", reason="invalid")
        call_id, name, arguments = request.get("id"), request.get("tool"), request.get("arguments")
        offered = {t.name for t in self.tools}
        if not isinstance(name, str) or name not in offered:
            why = f"{name!r} is not one of the offered tools ({', '.join(sorted(offered))})"
            return call_id, BridgeReply(ok=False, output=why, reason="not_offered")
        if not isinstance(arguments, dict):
            return call_id, BridgeReply(
                ok=False, output="arguments must be an object", reason="invalid"
            )
        if len(self.calls) >= self.max_calls:
            why = f"this program has made its {self.max_calls} calls; print what you have"
            return call_id, BridgeReply(ok=False, output=why, reason="budget")
        self.calls.append((name, arguments))
        return call_id, await self.call(name, arguments)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def program_stubs(bridge: Bridge) -> str:
    """The tools as the program sees them, for the model's prompt: a call signature each,
    its description and parameters indented under it. Not `def` lines: a coder model
    shown `def f(a):` and a docstring writes the body (measured on BFCL in code mode,
    `bench/results/bfcl_code/`), where it should call the function."""
    out = []
    for tool in bridge.tools:
        props = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        params = ", ".join(p if p in required else f"{p}=None" for p in props)
        lines = [f"{python_name(tool.name)}({params})", f"    {tool.description.strip()}"]
        for name, schema in props.items():
            if isinstance(schema, dict):
                kind = schema.get("type", "")
                lines.append(f"    {name} ({kind}): {schema.get('description', '')}".rstrip())
        out.append("\n".join(lines))
    return "\n\n".join(out)


def python_name(name: str) -> str:
    """A tool's name as the program's function name ("math.hcf" → "math_hcf"; the child,
    which imports nothing of bigloop, has its own copy)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
