"""The trace viewer's web server: a small JSON API over a `TraceStore` and the static
front end that renders it (`static/`: one HTML page, one script, one style sheet; no
build step).

API (all GET, JSON):

- `/api/runs?limit=N`: the most recent runs, newest first.
- `/api/runs/{run_id}?since=N`: one run (a unique prefix of its id works), its steps from
  index N on, and its plan graph. A page showing a run in progress polls this every
  second with `since` = the number of steps it has.
- `/api/runs/{run_id}/steps/{index}/conversation`: the conversation before that step.

The server answers on loopback by default and only to requests addressed to the host it
listens on (a web page elsewhere cannot read the traces through DNS rebinding); every
page is served with a content security policy that allows only its own script.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bigloop._errors import UserError
from bigloop.protocols.guard import LOOPBACK, Guard, allowed_hosts_for, require_token
from bigloop.protocols.threaded import http_url, in_thread
from bigloop.trace.store import TraceStore
from bigloop.ui.views import conversation_view, plan_view, run_view, steps_view

STATIC = Path(__file__).parent / "static"
_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class _SecurityHeaders:
    """Adds the content security policy and friends to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers if scope["type"] == "http" else send)


def create_app(
    store: TraceStore, *, allowed_hosts: Sequence[str] = LOOPBACK, token: str | None = None
) -> Starlette:
    """The viewer for the runs in `store`.

    Args:
        allowed_hosts: host names requests may be addressed to ("*" for any).
        token: the bearer token every API request must carry (the page reads it from
            its URL's `#token=...` and sends it); the page itself and its static files,
            which hold no trace data, are served without it.
    """
    lock = threading.Lock()

    def read(fn: Callable[[], Any]) -> Any:
        # One SQLite connection shared by the worker threads of sync endpoints.
        with lock:
            return fn()

    def runs(request: Request) -> Response:
        limit = _int(request.query_params.get("limit"), 200)
        summaries = read(lambda: store.runs(limit))
        return JSONResponse({"runs": [run_view(s) for s in summaries]})

    def run(request: Request) -> Response:
        since = _int(request.query_params.get("since"), 0)
        try:
            summary, steps = read(lambda: _run_and_steps(store, request.path_params["run_id"]))
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=404)
        return JSONResponse(
            {
                "run": run_view(summary),
                "since": since,
                "steps": [v for v in steps_view(steps, summary.started_at) if v["index"] >= since],
                "plan": plan_view(steps),
            }
        )

    def conversation(request: Request) -> Response:
        try:
            summary, steps = read(lambda: _run_and_steps(store, request.path_params["run_id"]))
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=404)
        before = request.path_params["index"]
        return JSONResponse({"messages": conversation_view(summary.task, steps, before)})

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    routes = [
        Route("/", index),
        Route("/api/runs", runs),
        Route("/api/runs/{run_id}", run),
        Route("/api/runs/{run_id}/steps/{index:int}/conversation", conversation),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, middleware=_middleware(allowed_hosts, token))


def _middleware(allowed_hosts: Sequence[str], token: str | None) -> list[Middleware]:
    """The guard (the page and its static files open without the token) and the headers."""
    guard = Middleware(
        Guard, allowed_hosts=list(allowed_hosts), token=token, open_paths=("/", "/static/")
    )
    return [guard, Middleware(_SecurityHeaders)]


def _run_and_steps(store: TraceStore, run_id: str) -> tuple[Any, Any]:
    summary = store.run(run_id)
    return summary, store.steps(summary.run_id)


def _int(text: str | None, default: int) -> int:
    try:
        return max(0, int(text)) if text is not None else default
    except ValueError:
        return default


def serve(
    trace_db: Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
) -> None:
    """Serve the viewer of the runs in `trace_db` (default: the user's trace store) until
    interrupted.

    Raises:
        UserError: `host` is beyond loopback and there is no `token`.
    """
    require_token(host, token)
    app = create_app(TraceStore(trace_db), allowed_hosts=allowed_hosts_for(host), token=token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


@contextmanager
def running(store: TraceStore, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve the viewer of `store` in a background thread; yields its base URL.

    `port=0` takes a free port. For tests and benchmarks.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.bind((host, port))
    app = create_app(store, allowed_hosts=allowed_hosts_for(host))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none")
    with in_thread(uvicorn.Server(config), sock, failure="the trace viewer did not start"):
        yield http_url(host, sock.getsockname()[1])
