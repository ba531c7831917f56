"""The guard in front of every HTTP server bigloop starts (`serve openai`, `serve a2a`):
what a server on this machine must refuse before any handler runs.

- **Host**: a request addressed to a name the server was not started for is refused (400):
  a web page on another site that resolves its own name to 127.0.0.1 (DNS rebinding)
  cannot reach the server. By default the loopback names; a server bound to a public
  address also answers that address; one bound to every interface answers any name.
- **Origin**: a browser request from a page of another origin (a cross-site `text/plain`
  POST needs no preflight) is refused (403); requests without an `Origin` header (every
  non-browser client) pass.
- **Body size**: a body over `max_body_bytes` is refused (413) without being read whole,
  whether it says its length or streams it.
- **Unreadable bodies**: a body that is not UTF-8, or JSON nested too deep for Python to
  read, is refused (400) before a handler (a library's JSON-RPC dispatcher) turns it into
  an internal error.
- **Token**: with a `token`, a request without `Authorization: Bearer <token>` is refused
  (401). A server bound beyond loopback must have one (`require_token`).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest request body a server takes (8 MiB: a long conversation with tools is
well under 1 MiB)."""


def allowed_hosts_for(host: str) -> list[str]:
    """The host names a server listening on `host` answers to: the loopback names, `host`
    itself, and any name when it listens on every interface."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    return [*LOOPBACK, host]


class Guard:
    """ASGI middleware: the Host, Origin and body-size checks of the module's docstring.

    Args:
        allowed_hosts: host names (without port) requests may be addressed to; "*": any.
        max_body_bytes: the largest body taken.
        token: the bearer token every request must carry (None: none needed).
        open_paths: paths served without the token (a page and its static files, which
            hold no data; a path ending in "/" opens everything under it).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str] = LOOPBACK,
        max_body_bytes: int = MAX_BODY_BYTES,
        token: str | None = None,
        open_paths: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.token = token
        self.open_paths = tuple(open_paths)
        self.any_host = "*" in allowed_hosts
        self.hosts = {_bare(h) for h in allowed_hosts if h != "*"}
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if (problem := self._refusal(headers, scope.get("path", ""))) is not None:
            await _refuse(send, *problem)
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await _refuse(send, 413, self._too_large())
            return
        body = await self._body(receive)
        if body is None:
            await _refuse(send, 413, self._too_large())
            return
        if (unreadable := _unreadable(body)) is not None:
            await _refuse(send, 400, unreadable)
            return
        await self.app(scope, _replay(body, receive), send)

    def _refusal(self, headers: dict[str, str], path: str) -> tuple[int, str] | None:
        host = _bare(headers.get("host", ""))
        if not self.any_host and host not in self.hosts:
            return 400, f"Invalid host header {host!r}: this server answers {sorted(self.hosts)}."
        if self.token is not None and not self._open(path):
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return 401, "This server needs the header Authorization: Bearer <its token>."
        origin = headers.get("origin")
        if origin and origin != "null":
            origin_host = _bare(urlsplit(origin).netloc)
            if origin_host != host and origin_host not in self.hosts:
                return 403, f"Requests from pages of {origin!r} are not accepted."
        elif origin == "null":
            return 403, "Requests from pages without an origin are not accepted."
        return None

    def _open(self, path: str) -> bool:
        return any(
            path.startswith(p) if p.endswith("/") and p != "/" else path == p
            for p in self.open_paths
        )

    async def _body(self, receive: Receive) -> bytes | None:
        """The whole body, or None when it grows past the cap."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _too_large(self) -> str:
        return f"The request body is larger than {self.max_body_bytes} bytes."


def _unreadable(body: bytes) -> str | None:
    """Why no handler can read `body` (not UTF-8, JSON nested too deep), or None."""
    if not body:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"The request body is not UTF-8 (byte {e.start})."
    try:
        json.loads(text)
    except RecursionError:
        return "The request body is JSON nested too deep to read."
    except ValueError:
        return None  # not JSON: the handler says what it expects
    return None


def require_token(host: str, token: str | None) -> None:
    """Refuse to serve beyond loopback without a token.

    Raises:
        UserError: `host` is not a loopback address and `token` is None.
    """
    from bigloop._errors import UserError

    if token is None and not _loopback(host):
        raise UserError(
            f"Listening on {host} answers other machines: give a token (--token TOKEN, or "
            "the BIGLOOP_TOKEN environment variable) that clients send as "
            "'Authorization: Bearer TOKEN', or listen on 127.0.0.1."
        )


def _loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bare(host: str) -> str:
    """A Host header's name without its port ("[::1]:8000" → "[::1]")."""
    host = host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # the disconnect, when it comes

    return replayed


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    payload: dict[str, Any] = {"type": "http.response.body", "body": body.encode()}
    await send(payload)
