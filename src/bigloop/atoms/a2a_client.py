"""A remote A2A agent as an atom: `a2a_agent_tool(url)`, `bigloop run --a2a URL`.

The tool has the agent card's name and description; its input is a task in words, its
result the text of the task's final artifacts. The exchange is streamed with the official
`a2a-sdk` client (JSON-RPC).

When the agent asks a question (`input-required`), the result says so — the question and
the task id — and the calling model answers with a second call carrying the answer as
`task` and that `task_id`: the same remote task continues, in the same context.

Nothing here waits without a deadline. Fetching the card is bounded by
`connect_timeout_s`, a whole task by `timeout_s` (streams that stay open without an
event, a known trap of SSE clients, included): an agent that hangs, refuses, dies
mid-stream or fails its task is a `ToolFailure` — the loop shows it to the model and goes
on — and a task that ran out of time is cancelled on the agent (best effort, bounded).

This module sits with the atoms, not with `bigloop.protocols`, because `LoopConfig`
builds it for `--a2a`: what a loop is made of stays below the loop.
"""

from __future__ import annotations

import asyncio
import functools
import re
import ssl
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseError

from bigloop._errors import ToolFailure, UserError
from bigloop.atoms.tool import Tool

_CANCEL_S = 2.0  # a task out of time is cancelled on the agent within this
_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "what to ask the agent, in words; or your answer to its question",
        },
        "task_id": {
            "type": "string",
            "description": "only when answering a question the agent asked: the task_id "
            "given with the question",
        },
    },
    "required": ["task"],
}


def a2a_agent_tool(
    url: str,
    *,
    timeout_s: float = 300.0,
    connect_timeout_s: float = 10.0,
    name: str | None = None,
    description: str | None = None,
) -> Tool:
    """The A2A agent at `url` as a tool (the card is read now, once).

    Args:
        url: the agent's base URL; its card is at `/.well-known/agent-card.json` there.
        timeout_s: the most one call may take, from sending the task to its end; the
            call then fails and the remote task is cancelled.
        connect_timeout_s: the most reading the card or opening a connection may take.
        name: the tool's name (default: the card's name, as letters, digits, _ and -).
        description: the tool's description (default: the card's, with its skills).

    Raises:
        UserError: the card cannot be read (the agent is unreachable, or not an A2A
            agent), or the A2A client is not installed.
    """
    card = fetch_card(url, timeout_s=connect_timeout_s)
    agent = RemoteAgent(
        url=url, card=card, timeout_s=timeout_s, connect_timeout_s=connect_timeout_s
    )
    return Tool.from_schema(
        name or _NAME.sub("_", card.name).strip("_") or "a2a_agent",
        description or card_description(card),
        _SCHEMA,
        agent.call,
        # The call enforces `timeout_s` itself, then cancels the remote task; the tool's
        # own limit only backs it up.
        timeout_s=timeout_s + _CANCEL_S + 1.0,
        idempotent=False,  # a remote agent may act: a resumed run never asks it twice
        effect="write",  # what it does is gated by its own approvals, not by this loop's
    )


def fetch_card(url: str, *, timeout_s: float = 10.0) -> AgentCard:
    """The agent card published at `url`.

    Raises:
        UserError: it cannot be fetched within `timeout_s`, or is not an agent card.
    """
    where = url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH
    try:
        response = httpx.get(where, timeout=timeout_s)
        response.raise_for_status()
        return parse_agent_card(response.json())
    except (httpx.HTTPError, ValueError, ParseError) as e:
        raise UserError(
            f"Cannot read the A2A agent card at {where}: {type(e).__name__}: {e}. Is an "
            "A2A agent (e.g. `bigloop serve a2a`) serving at that URL?"
        ) from None


def card_description(card: AgentCard) -> str:
    """What the tool says the agent does: the card's description and its skills' names."""
    skills = ", ".join(s.name for s in card.skills)
    text = card.description or f"The A2A agent {card.name}."
    return f"{text} Skills: {skills}." if skills else text


@dataclass(kw_only=True)
class RemoteAgent:
    """Calls to one A2A agent; remembers the context of each task that asked a question,
    so that the answer continues it."""

    url: str
    card: AgentCard
    timeout_s: float
    connect_timeout_s: float
    _contexts: dict[str, str] = field(default_factory=dict)

    async def call(self, task: str, task_id: str | None = None) -> str:
        """Send `task` (or, with `task_id`, the answer to that task's question) and
        return the final artifacts' text, or what the agent asks.

        Raises:
            ToolFailure: no answer within the timeout, the agent is unreachable or failed
                the task.
        """
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[Part(text=task)],
            task_id=task_id or "",
            context_id=self._contexts.get(task_id or "", ""),
        )
        seen = _Seen(task_id=task_id or "")
        timeout = httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        async with httpx.AsyncClient(timeout=timeout, verify=_tls()) as http:
            client = ClientFactory(ClientConfig(httpx_client=http)).create(self.card)
            try:
                # The SDK declares an AsyncIterator; it is a generator, closed here.
                stream = cast(
                    AsyncGenerator[StreamResponse],
                    client.send_message(SendMessageRequest(message=message)),
                )
                async with asyncio.timeout(self.timeout_s), aclosing(stream):
                    async for event in stream:
                        seen.add(event)
            except TimeoutError:
                cancelled = await self._cancel(client, seen.task_id)
                raise ToolFailure(
                    f"The A2A agent {self.card.name!r} gave no answer within "
                    f"{self.timeout_s:g} s{cancelled}."
                ) from None
            except A2AError as e:
                raise ToolFailure(
                    f"The A2A agent {self.card.name!r} at {self.url}: {type(e).__name__}: {e}"
                ) from None
            finally:
                await client.close()
        return self._outcome(seen)

    async def _cancel(self, client: Any, task_id: str) -> str:
        """Cancel the remote task (within `_CANCEL_S`); how it went, for the message."""
        if not task_id:
            return ""
        try:
            async with asyncio.timeout(_CANCEL_S):
                await client.cancel_task(CancelTaskRequest(id=task_id))
        except (TimeoutError, A2AError):
            return f"; cancelling its task {task_id} failed"
        return f"; its task {task_id} was cancelled"

    def _outcome(self, seen: _Seen) -> str:
        name = self.card.name
        if seen.state == TaskState.TASK_STATE_COMPLETED or (seen.state is None and seen.reply):
            return seen.answer()
        if seen.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            self._contexts[seen.task_id] = seen.context_id
            return (
                f"The agent {name} needs more information before it can answer. It asks: "
                f"{seen.status_text or '(no question given)'}\n"
                f'To answer, call this tool again with your answer as task and task_id "'
                f'{seen.task_id}".'
            )
        self._contexts.pop(seen.task_id, None)
        state = "no state" if seen.state is None else TaskState.Name(seen.state)
        why = f": {seen.status_text}" if seen.status_text else ""
        if seen.state in _ENDED:
            raise ToolFailure(f"The A2A agent {name!r} ended the task {state}{why}")
        raise ToolFailure(
            f"The A2A agent {name!r} stopped streaming before the task ended ({state}{why})."
        )


_ENDED = {
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


@dataclass(kw_only=True)
class _Seen:
    """What a task's stream said so far: its ids, state, status text and artifacts."""

    task_id: str = ""
    context_id: str = ""
    state: TaskState | None = None
    status_text: str = ""
    reply: str = ""
    artifacts: dict[str, list[str]] = field(default_factory=dict)

    def add(self, event: StreamResponse) -> None:
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.reply = _text(event.message.parts)
        elif kind == "task":
            self.task_id, self.context_id = event.task.id, event.task.context_id
            self._status(event.task.status)
            for artifact in event.task.artifacts:
                self.artifacts[artifact.artifact_id] = [_text(artifact.parts)]
        elif kind == "status_update":
            status = event.status_update
            self.task_id, self.context_id = status.task_id, status.context_id
            self._status(status.status)
        elif kind == "artifact_update":
            chunk = event.artifact_update
            chunks = self.artifacts.setdefault(chunk.artifact.artifact_id, [])
            if not chunk.append:
                chunks.clear()
            chunks.append(_text(chunk.artifact.parts))

    def _status(self, status: Any) -> None:
        self.state = status.state
        self.status_text = _text(status.message.parts) if status.HasField("message") else ""

    def answer(self) -> str:
        if self.artifacts:
            return "\n".join("".join(chunks) for chunks in self.artifacts.values())
        return self.reply or self.status_text


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context, made once: making it loads the CA bundle (~40 ms), and
    each call opens a client of its own (a client belongs to one event loop)."""
    return httpx.create_ssl_context()


def _text(parts: Any) -> str:
    return "\n".join(p.text for p in parts if p.HasField("text"))
