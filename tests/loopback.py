"""What tests that talk over loopback share: a free port, and an ASGI app served by
uvicorn in a thread on 127.0.0.1 until the block ends."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from bigloop.protocols.threaded import http_url, in_thread

HOST = "127.0.0.1"


def free_port() -> int:
    """A port no one listens on now (a server started later may take it)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def loopback_socket(port: int = 0) -> socket.socket:
    """A TCP socket bound on loopback to `port` (0: a free one), for uvicorn to serve on.

    IPPROTO_TCP so that asyncio sets TCP_NODELAY on its connections (else a response on a
    kept-alive connection can wait ~40 ms); SO_REUSEADDR so that a server can be started
    again on the port of one just stopped."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    return sock


@contextmanager
def serving(make_app: Callable[[str], Any], port: int = 0, **options: Any) -> Iterator[str]:
    """The ASGI app `make_app(url)` served by uvicorn in a thread on loopback (on `port`,
    or a free one) until the block ends; its URL, `http://127.0.0.1:PORT/`.

    `options` are more `uvicorn.Config` settings (`lifespan`, `timeout_graceful_shutdown`);
    the log level is "warning" and websockets are off unless they say otherwise."""
    sock = loopback_socket(port)
    url = f"{http_url(HOST, sock.getsockname()[1])}/"
    settings: dict[str, Any] = {"log_level": "warning", "ws": "none", **options}
    server = uvicorn.Server(uvicorn.Config(make_app(url), **settings))
    with in_thread(server, sock, failure="server did not start"):
        yield url
