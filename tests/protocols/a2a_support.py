"""What the A2A tests share: a uvicorn server on a free loopback port in a thread, the
`a2a-sdk`'s own client, and scripted replies."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing, contextmanager
from typing import Any, cast

import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState


@contextmanager
def serving_app(make_app: Callable[[str], Any]) -> Iterator[str]:
    """`make_app(url)` served by uvicorn on a free loopback port, in a thread; its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # NODELAY
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    config = uvicorn.Config(
        make_app(url), log_level="warning", ws="none", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def user_message(text: str, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    message = Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )
    return SendMessageRequest(message=message)


async def send(
    url: str, text: str, task_id: str = "", context_id: str = ""
) -> list[StreamResponse]:
    """Every event of one streamed request, through the SDK's client."""
    client = await ClientFactory(ClientConfig()).create_from_url(url)
    try:
        stream = client.send_message(user_message(text, task_id, context_id))
        async with aclosing(cast(AsyncGenerator[StreamResponse], stream)):
            return [event async for event in stream]
    finally:
        await client.close()


def shown(events: list[StreamResponse]) -> list[tuple[str, str, str]]:
    """Each event as (kind, state or artifact name, text)."""
    rows = []
    for event in events:
        kind = event.WhichOneof("payload") or ""
        if kind == "task":
            rows.append((kind, TaskState.Name(event.task.status.state), ""))
        elif kind == "status_update":
            status = event.status_update.status
            text = "\n".join(p.text for p in status.message.parts)
            rows.append((kind, TaskState.Name(status.state), text))
        elif kind == "artifact_update":
            artifact = event.artifact_update.artifact
            rows.append((kind, artifact.name, "\n".join(p.text for p in artifact.parts)))
    return rows
