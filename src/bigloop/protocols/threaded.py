"""A uvicorn server in a background thread, for tests, notebooks and benchmarks: what
`bigloop.protocols.a2a_server.serving` and `bigloop.ui.server.running` share."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn


def http_url(host: str, port: int) -> str:
    """`http://HOST:PORT`, an IPv6 host in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


@contextmanager
def in_thread(
    server: uvicorn.Server, sock: socket.socket, *, failure: str, name: str | None = None
) -> Iterator[None]:
    """`server` serving on the bound `sock` in a daemon thread (named `name`) until the
    block ends; then it stops, and `sock` is closed.

    Raises:
        RuntimeError: with `failure`, the server did not start within 10 s.
    """
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(failure)
            time.sleep(0.01)
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
