"""The connections of `bigloop.atoms.mcp_client`: each owned by one task of one daemon
thread ("bigloop-mcp") that runs an event loop for every MCP connection of the process.

A `Connection`'s task enters the SDK's client, holds it until told to stop, and leaves
it: the SDK's anyio scopes never cross tasks, whichever thread or event loop the calls
come from. `Worker.close_all` (also run at the interpreter's exit) stops them all.
"""

from __future__ import annotations

import atexit
import math
import os
import tempfile
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any, TextIO, cast

import anyio
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

CLOSE_S = 10.0  # closing waits this long at most for the servers to stop
_STDERR_TAIL = 1500  # characters of an stdio server's stderr quoted in an error


def what(error: BaseException) -> str:
    """An exception as one line; an exception group by its first leaf."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return error.error.message
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class Connection:
    """One connection, owned by one task of the worker: the task enters the SDK's
    client, holds it until `stop`, and leaves it."""

    def __init__(self, server: str, command: list[str] | None, connect_timeout_s: float) -> None:
        self.server = server
        self.command = command
        self.connect_timeout_s = connect_timeout_s
        self.ready = anyio.Event()
        self.stop = anyio.Event()
        self.closed = anyio.Event()
        self.error: BaseException | None = None
        self._client: Client | None = None
        self.read: WatchedStream | None = None
        self._stderr: IO[str] | None = None
        self._last_words = ""

    @property
    def client(self) -> Client:
        assert self._client is not None, "a connection is used only once it is open"
        return self._client

    @property
    def open(self) -> bool:
        return self._client is not None and not self.stop.is_set() and not self.ended

    @property
    def ended(self) -> bool:
        """The server ended the connection (its process exited, or it hung up)."""
        return self.read is not None and self.read.ended

    async def own(self) -> None:
        """Open the connection, hold it until `stop`, close it. Never raises."""
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout_s) as scope:
                async with Client(self._transport(), mode="auto", cache=None) as client:
                    scope.deadline = math.inf
                    self._client = client
                    self.ready.set()
                    await self.stop.wait()
            if scope.cancelled_caught:
                self.error = TimeoutError()
        except Exception as e:  # noqa: BLE001 - the task's top level: reported by the calls
            self.error = e
        finally:
            self._last_words = self._stderr_tail()
            if self._stderr is not None:
                self._stderr.close()
            self._client = None
            self.ready.set()
            self.closed.set()

    def failure(self) -> str:
        """Why the connection did not open."""
        if self.error is None or isinstance(self.error, TimeoutError):
            why = f"no answer within {self.connect_timeout_s:g} s"
        else:
            why = what(self.error)
        return f"{why}.{self.last_words()}"

    def last_words(self) -> str:
        """The end of an stdio server's stderr, as a sentence to append (or nothing)."""
        text = self._last_words or self._stderr_tail()
        return f" Its stderr ends: {text}" if text else ""

    def _transport(self) -> Transport:
        if self.command is None:
            return _watched(streamable_http_client(self.server), self)
        command, *args = self.command
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        parameters = StdioServerParameters(command=command, args=args)
        return _watched(stdio_client(parameters, errlog=cast(TextIO, self._stderr)), self)

    def _stderr_tail(self) -> str:
        """The last characters the server wrote to stderr. Read with `pread`: the
        server shares the file's offset."""
        if self._stderr is None or self._stderr.closed:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - _STDERR_TAIL)
        tail = os.pread(fd, size - start, start).decode("utf-8", "replace")
        return " ".join(tail.split())


@asynccontextmanager
async def _watched(transport: Transport, connection: Connection) -> AsyncIterator[Any]:
    """`transport` with its read stream watched for its end (`Connection.ended`)."""
    async with transport as (read, write):
        connection.read = WatchedStream(read)
        yield connection.read, write


class WatchedStream:
    """A transport's read stream that notes when it ends: a call on a connection the
    server has already closed then reconnects instead of failing."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.ended = False

    @property
    def last_context(self) -> Any:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.ended = True
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WatchedStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class Worker:
    """The daemon thread whose event loop holds every MCP connection of the process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._connections: set[Connection] = set()  # all not yet closed, whoever made them
        self._started = threading.Event()
        self.portal: BlockingPortal
        self.task_group: TaskGroup
        thread = threading.Thread(
            target=anyio.run, args=(self._main,), name="bigloop-mcp", daemon=True
        )
        thread.start()
        self._started.wait()
        atexit.register(self.close_all)

    async def _main(self) -> None:
        async with BlockingPortal() as portal, anyio.create_task_group() as task_group:
            self.portal, self.task_group = portal, task_group
            self._started.set()
            await portal.sleep_until_stopped()

    def start(self, connection: Connection) -> None:
        """Run `connection`'s owning task (in the worker's thread)."""
        self._connections = {c for c in self._connections if not c.closed.is_set()}
        self._connections.add(connection)
        self.task_group.start_soon(connection.own)

    def close_all(self) -> None:
        """Close every connection and wait for them (at exit too: no server process
        outlives this one, even when its `McpServer` is long gone)."""
        if os.getpid() == self.pid:
            self.portal.call(self._close_all)

    async def _close_all(self) -> None:
        connections = list(self._connections)
        for connection in connections:
            connection.stop.set()
        with anyio.move_on_after(CLOSE_S):
            for connection in connections:
                await connection.closed.wait()


_worker_lock = threading.Lock()
_the_worker: Worker | None = None


def worker() -> Worker:
    """The process's MCP worker thread, started on first use (again in a forked child)."""
    global _the_worker
    with _worker_lock:
        if _the_worker is None or _the_worker.pid != os.getpid():
            _the_worker = Worker()
        return _the_worker
