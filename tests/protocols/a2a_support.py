"""What the A2A tests share: a uvicorn server on a free loopback port in a thread, the
`a2a-sdk`'s own client, scripted replies, and the tools and loops served as agents."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractContextManager, aclosing
from typing import Any, cast

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState

from bigloop import Clarify, Loop, ScriptedModel, Tool, TraceStore, tool
from tests.loopback import serving


def serving_app(make_app: Callable[[str], Any]) -> AbstractContextManager[str]:
    """`make_app(url)` served by uvicorn on a free loopback port, in a thread; its URL."""
    return serving(make_app, timeout_graceful_shutdown=2)


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


SENT: list[tuple[str, str]] = []
"""The notes `send_note` sent (each test module clears it in `setup_function`)."""


@tool(idempotent=False, effect="write")
def send_note(receiver: str, text: str) -> str:
    """Send a note to a person.

    Args:
        receiver: who gets the note.
        text: the note.
    """
    SENT.append((receiver, text))
    return "sent"


def adding_loop(store: TraceStore, *more: Tool) -> Loop:
    """A loop that adds 2 and 3 with `add` (offered with `more` tools) and answers."""
    model = ScriptedModel([call("add", a=2, b=3), answer("2 + 3 = 5.")])
    return Loop(model, [add, *more], store=store)


def noting_loop(store: TraceStore) -> Loop:
    """A loop that sends a note without knowing to whom (so it asks), then to Ann."""
    model = ScriptedModel(
        [
            call("send_note", receiver="colleague_1", text="hi"),
            call("send_note", receiver="Ann", text="hi"),
            answer("Sent to Ann."),
        ]
    )
    return Loop(model, [send_note], clarify=Clarify(retry_first=False), store=store)


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


CLIENT_TIMEOUT = 600.0
"""Seconds the test client waits for a served loop's next event."""


async def send(
    url: str, text: str, task_id: str = "", context_id: str = ""
) -> list[StreamResponse]:
    """Every event of one streamed request, through the SDK's client."""
    # An explicit, generous timeout: the SDK's default gave up before the served 0.5B
    # streamed its first step on a slow machine. Tests wait on events, not on speed.
    async with httpx.AsyncClient(timeout=httpx.Timeout(CLIENT_TIMEOUT, connect=30.0)) as http:
        client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(url)
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
