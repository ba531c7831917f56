"""MCP servers' tools as atoms: `mcp_tools(server)`, `bigloop run --mcp SERVER`.

SERVER is a command line ("mcp-server-time", run as a subprocess over stdio) or an
http(s) URL (streamable HTTP). Each tool the server lists becomes a `Tool` with the
server's name, description and input schema as they are. A call's result is the
structured content as JSON when the server gives one, else the text of its content; a
result flagged `isError` is a `ToolFailure`, and so is one larger than
`max_result_bytes`. The annotations set the effect: `readOnlyHint` → "read",
`destructiveHint: false` → "write", anything else — `destructiveHint` true or unsaid,
or no annotations — → "irreversible" (approved before each call): the spec's default of
`destructiveHint` is true, and side effects nobody described are gated.

Connections. A server's connection is opened on first use and kept: starting an stdio
server costs about 0.6 s, a call on an open connection about 1.6 ms
(`bench/results/mcp/overhead.md`). Every connection lives in one daemon thread of the
process with its own event loop ("bigloop-mcp", `bigloop.atoms._mcp_connection`), in a
task that opens it, holds it and closes it, so the SDK's anyio
scopes are always entered and left by the same task, whichever event loop (or thread)
the calls come from, and a connection outlives the `asyncio.run` of one run.

Nothing waits without a deadline: connecting is bounded by `connect_timeout_s`, a call
by `timeout_s`. A call that does not answer in time, or a connection that breaks (the
server exited, crashed or hung up), closes the connection: the call fails with a
`ToolFailure` saying so — the loop shows it to the model and goes on — and the next
call opens a new connection. Closing stops an stdio server as the SDK does (stdin
closed, then SIGTERM, then SIGKILL, a few seconds at most); `McpServer.close()` waits
for it, and every server still open is closed when the interpreter exits.

This module sits with the atoms, not with `bigloop.protocols`, because `LoopConfig`
builds it for `--mcp`: what a loop is made of stays below the loop.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from types import TracebackType
from typing import Any

import anyio
import pydantic
from mcp import MCPError
from mcp import types as mcp_types
from mcp.types import CONNECTION_CLOSED

from bigloop._errors import ToolFailure, UserError
from bigloop.atoms._mcp_connection import CLOSE_S, Connection, what, worker
from bigloop.atoms.tool import Effect, Tool

_GRACE_S = 2.0  # the tool's own timeout backs up the call's, after this much more
_MAX_PAGES = 100  # of a tools/list walk: a server paginating forever cannot hang it


class McpServer:
    """One MCP server: its tools, and a connection made on first use, kept between
    calls, made again after a failure.

    Use as a context manager (or call `close()`) to stop the server when done;
    otherwise it stops when the interpreter exits.

    Args:
        server: a command line run over stdio ("mcp-server-git --repository .") or the
            URL of a streamable HTTP endpoint ("http://127.0.0.1:8000/mcp").
        timeout_s: the most one call (or listing the tools) may take.
        connect_timeout_s: the most starting the server and the protocol handshake may
            take.
        max_result_chars: the tools' results are cut to this many characters (with a
            note) before the model sees them.
        max_result_bytes: a larger result is a failure of the call, not a result.

    Raises:
        UserError: `server` is empty or not a valid command line.
    """

    def __init__(
        self,
        server: str,
        *,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 30.0,
        max_result_chars: int = 4000,
        max_result_bytes: int = 1_000_000,
    ) -> None:
        if _is_url(server):
            self._command: list[str] | None = None
        else:
            try:
                self._command = shlex.split(server)
            except ValueError as e:
                raise UserError(
                    f"MCP server {server!r} is not a valid command line: {e}."
                ) from None
            if not self._command:
                raise UserError(
                    "The MCP server is empty: give a command line (e.g. 'mcp-server-time') "
                    "or a URL (e.g. 'http://127.0.0.1:8000/mcp')."
                )
        self.server = server
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_result_chars = max_result_chars
        self.max_result_bytes = max_result_bytes
        # Only the worker's thread touches these.
        self._connection: Connection | None = None
        self._closing: list[Connection] = []  # closed after a failure, maybe still stopping
        self._lock: anyio.Lock | None = None

    def __enter__(self) -> McpServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def tools(self) -> list[Tool]:
        """The server's tools as `Tool`s (listed now; the connection stays open).

        Raises:
            UserError: the server cannot be started or reached, or does not list its
                tools within the timeouts.
        """
        try:
            listed = worker().portal.call(self._list_tools)
        except ToolFailure as e:
            raise UserError(f"Cannot list the tools of the MCP server: {e}") from None
        return [self._tool(t) for t in listed]

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool `name`; its result as text.

        Raises:
            ToolFailure: the server reported an error, did not answer within the
                timeout, could not be reached, broke the connection, or returned more
                than `max_result_bytes`.
        """
        future = worker().portal.start_task_soon(self._call, name, arguments)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Close the connection and wait (a few seconds at most) for an stdio server to
        stop. A later call opens a new connection."""
        worker().portal.call(self._close)

    async def aclose(self) -> None:
        """`close` for async code: the event loop goes on while the server stops."""
        await asyncio.wrap_future(worker().portal.start_task_soon(self._close))

    def _tool(self, listed: mcp_types.Tool) -> Tool:
        effect, idempotent = _effect(listed.annotations)
        name = listed.name

        async def call(**arguments: Any) -> str:
            return await self.call(name, arguments)

        return Tool.from_schema(
            name,
            listed.description or listed.title or "",
            dict(listed.input_schema),
            call,
            # The call enforces the timeouts itself; the tool's own limit only backs it up.
            timeout_s=self.connect_timeout_s + self.timeout_s + _GRACE_S,
            max_result_chars=self.max_result_chars,
            effect=effect,
            idempotent=idempotent,
        )

    # What follows runs in the worker's thread.

    async def _list_tools(self) -> list[mcp_types.Tool]:
        connection = await self._open()
        listed: list[mcp_types.Tool] = []
        with anyio.move_on_after(self.timeout_s):
            try:
                cursor: str | None = None
                for _ in range(_MAX_PAGES):
                    page = await connection.client.list_tools(cursor=cursor)
                    listed += page.tools
                    if (cursor := page.next_cursor) is None:
                        break
                return listed
            except Exception as e:  # noqa: BLE001 - the boundary with a remote server
                raise self._broken(connection, f"listing its tools failed: {what(e)}") from None
        raise self._broken(connection, f"it did not list its tools within {self.timeout_s:g} s")

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        connection = await self._open()
        with anyio.move_on_after(self.timeout_s):
            try:
                result = await connection.client.call_tool(name, arguments)
            except MCPError as e:
                if e.code == CONNECTION_CLOSED or connection.ended:
                    raise self._broken(
                        connection, f"the connection closed during {name!r}"
                    ) from None
                raise ToolFailure(f"{self.server}: {name!r}: {e.error.message}") from None
            except (RuntimeError, pydantic.ValidationError) as e:  # an invalid result
                if connection.ended:
                    raise self._broken(
                        connection, f"the connection closed during {name!r}"
                    ) from None
                raise ToolFailure(f"{self.server}: {name!r} returned {what(e)}") from None
            except Exception as e:  # noqa: BLE001 - the boundary with a remote server
                raise self._broken(connection, f"{name!r} failed: {what(e)}") from None
            return self._text(name, result)
        raise self._broken(
            connection, f"{name!r} gave no answer within {self.timeout_s:g} s"
        ) from None

    def _text(self, name: str, result: mcp_types.CallToolResult) -> str:
        text = result_text(result)
        size = len(text.encode("utf-8", "replace"))
        if size > self.max_result_bytes:
            raise ToolFailure(
                f"{self.server}: {name!r} returned {size / 1e6:.1f} MB, more than the "
                f"{self.max_result_bytes / 1e6:g} MB a result may have."
            )
        if result.is_error:
            raise ToolFailure(f"{self.server}: {name!r} reported an error: {text}")
        return text

    async def _open(self) -> Connection:
        """The open connection, or a new one.

        Raises:
            ToolFailure: the server did not start, or did not answer the handshake in time.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            old = self._connection
            if old is not None and old.open:
                return old
            if old is not None:
                self._retire(old)
            connection = Connection(self.server, self._command, self.connect_timeout_s)
            self._connection = connection
            worker().start(connection)
            with anyio.move_on_after(self.connect_timeout_s + _GRACE_S):
                await connection.ready.wait()
            if not connection.open:
                self._connection = None
                self._retire(connection)
                raise ToolFailure(f"{self.server}: cannot connect: {connection.failure()}")
            return connection

    def _broken(self, connection: Connection, what: str) -> ToolFailure:
        """Close `connection`; the failure to raise, saying so."""
        self._retire(connection)
        if self._connection is connection:
            self._connection = None
        last = connection.last_words()
        return ToolFailure(
            f"{self.server}: {what}; the connection was closed and the next call opens a "
            f"new one.{last}"
        )

    def _retire(self, connection: Connection) -> None:
        """Stop `connection` (its task closes it meanwhile); `close` waits for it."""
        connection.stop.set()
        self._closing = [c for c in self._closing if not c.closed.is_set()]
        if connection not in self._closing:
            self._closing.append(connection)

    async def _close(self) -> None:
        if self._connection is not None:
            self._retire(self._connection)
            self._connection = None
        with anyio.move_on_after(CLOSE_S):
            for connection in self._closing:
                await connection.closed.wait()
        self._closing = [c for c in self._closing if not c.closed.is_set()]


def mcp_tools(
    server: str,
    *,
    timeout_s: float = 60.0,
    connect_timeout_s: float = 30.0,
    max_result_chars: int = 4000,
    max_result_bytes: int = 1_000_000,
) -> list[Tool]:
    """The tools of the MCP server `server` (a command line or an http(s) URL) as
    `Tool`s; see `McpServer` for the arguments.

    Raises:
        UserError: the server cannot be started or reached, or does not list its tools.
    """
    return McpServer(
        server,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        max_result_chars=max_result_chars,
        max_result_bytes=max_result_bytes,
    ).tools()


def close_all_servers() -> None:
    """Close every MCP connection of this process, those of `mcp_tools` and
    `LoopConfig.mcp` included, and wait (a few seconds at most) for their servers to
    stop; a later call opens a new connection. The interpreter's exit does it too."""
    worker().close_all()


def result_text(result: mcp_types.CallToolResult) -> str:
    """What the model sees of a result: its structured content as JSON when there is
    some (and it is not an error), else its content blocks as text."""
    if result.structured_content is not None and not result.is_error:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(_block_text(block) for block in result.content)


def _block_text(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri} ({resource.mime_type or 'binary'})]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link {block.uri}: {block.name}]"
    mime = getattr(block, "mime_type", "")
    return f"[{block.type} {mime}]".replace(" ]", "]")


def _effect(hints: mcp_types.ToolAnnotations | None) -> tuple[Effect, bool]:
    """A tool's effect and idempotence from its annotations."""
    if hints is not None and hints.read_only_hint:
        return "read", True
    if hints is None or hints.destructive_hint is not False:
        # MCP's default for a tool that is not read-only is destructive: gated
        return "irreversible", False
    return "write", bool(hints.idempotent_hint)


def _is_url(server: str) -> bool:
    return server.strip().lower().startswith(("http://", "https://"))
