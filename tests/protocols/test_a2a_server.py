"""`bigloop serve a2a` driven by the `a2a-sdk`'s own client over loopback: the agent card,
a task streamed to its answer, a question answered on the same task (one run, resumed),
cancel, failure — in-process on scripted models, and once through the command line."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from a2a.utils.proto_utils import warn_on_missing_required_fields

from bigloop import Clarify, Loop, ScriptedModel, TraceStore, UserError, tool
from bigloop.protocols.a2a_server import RUN_ID, create_app, serving
from bigloop.protocols.openai_server import create_app as openai_app
from tests.loopback import free_port
from tests.protocols.a2a_support import (
    SENT,
    add,
    adding_loop,
    answer,
    call,
    noting_loop,
    send,
    send_note,
    serving_app,
    shown,
    user_message,
)


def setup_function() -> None:
    SENT.clear()


def test_the_card_lists_the_tools_as_skills(tmp_path: Path) -> None:
    loop = adding_loop(TraceStore(tmp_path / "t.db"), send_note)
    with serving(loop, name="adder", description="Adds numbers.") as url:

        async def fetch() -> AgentCard:
            async with httpx.AsyncClient() as http:
                return await A2ACardResolver(http, url).get_agent_card()

        card = asyncio.run(fetch())
    assert warn_on_missing_required_fields(card, "test")  # every REQUIRED field is set
    assert (card.name, card.description) == ("adder", "Adds numbers.")
    skills = [(s.id, s.name, s.description) for s in card.skills]
    assert skills == [
        ("add", "add", "Add two integers."),
        ("send_note", "send_note", "Send a note to a person."),
    ]
    assert card.capabilities.streaming
    (interface,) = card.supported_interfaces
    assert (interface.url, interface.protocol_binding) == (url, "JSONRPC")


def test_a_task_streams_each_step_then_the_answer(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    with serving(adding_loop(store, send_note)) as url:
        events = asyncio.run(send(url, "What is 2 + 3?"))
    assert shown(events) == [
        ("task", "TASK_STATE_SUBMITTED", ""),
        ("status_update", "TASK_STATE_WORKING", ""),
        ("status_update", "TASK_STATE_WORKING", 'model: add({"a": 2, "b": 3})'),
        ("status_update", "TASK_STATE_WORKING", "add -> 5"),
        ("status_update", "TASK_STATE_WORKING", "model: answered"),
        ("artifact_update", "answer", "2 + 3 = 5."),
        ("status_update", "TASK_STATE_COMPLETED", ""),
    ]
    run_id = str(events[-1].status_update.metadata[RUN_ID])
    assert [r.run_id for r in store.runs()] == [run_id]
    assert store.run(run_id).answer == "2 + 3 = 5."
    steps = [m for m in (e.status_update.status.message for e in events[2:5])]
    assert [(m.metadata["step"], m.metadata["kind"]) for m in steps] == [
        (0, "model"),
        (1, "tool"),
        (2, "model"),
    ]


def test_a_question_waits_for_input_and_the_answer_resumes_the_same_run(
    tmp_path: Path,
) -> None:
    store = TraceStore(tmp_path / "t.db")
    loop = noting_loop(store)
    question = "To call send_note, what is the receiver (who gets the note)?"
    with serving(loop) as url:
        first = asyncio.run(send(url, "Say hi to my colleague."))
        assert shown(first)[-1] == ("status_update", "TASK_STATE_INPUT_REQUIRED", question)
        assert SENT == []
        task_id, context_id = first[0].task.id, first[0].task.context_id
        second = asyncio.run(send(url, "Ann", task_id=task_id, context_id=context_id))
    assert SENT == [("Ann", "hi")]
    assert shown(second)[-2:] == [
        ("artifact_update", "answer", "Sent to Ann."),
        ("status_update", "TASK_STATE_COMPLETED", ""),
    ]
    assert {e.status_update.task_id for e in second if e.HasField("status_update")} == {task_id}
    run_id = str(first[-1].status_update.metadata[RUN_ID])
    assert second[-1].status_update.metadata[RUN_ID] == run_id
    assert [r.run_id for r in store.runs()] == [run_id]  # one run, resumed
    steps = store.steps(run_id)
    asked = [(s.input, s.output, s.error) for s in steps if s.kind == "ask"]
    assert asked[-1] == ({"question": question}, "Ann", None)
    assert [(s.kind, s.name, s.error) for s in steps] == [
        ("model", "scripted", None),
        ("ask", "send_note", "unanswered"),
        ("ask", "user", None),
        ("model", "scripted", None),
        ("tool", "send_note", None),
        ("model", "scripted", None),
    ]


def test_a_question_is_answered_only_from_the_context_that_started_the_task(
    tmp_path: Path,
) -> None:
    """Issue 26 (runs belong to their owner): a client that learned another client's task
    id cannot answer its question from its own context; the task's own context can."""
    store = TraceStore(tmp_path / "t.db")
    with serving(noting_loop(store)) as url:
        first = asyncio.run(send(url, "Say hi to my colleague."))
        task_id, context_id = first[0].task.id, first[0].task.context_id
        with pytest.raises(Exception, match=r"does not match context|another context"):
            asyncio.run(send(url, "Mallory", task_id=task_id, context_id="someone-else"))
        assert SENT == []
        asyncio.run(send(url, "Ann", task_id=task_id, context_id=context_id))
    assert SENT == [("Ann", "hi")]


@tool(effect="irreversible")
def wire_money(to: str, amount: int) -> str:
    """Wire money; it cannot be called back.

    Args:
        to: who gets it.
        amount: how much, in euros.
    """
    SENT.append((to, str(amount)))
    return f"wired {amount} EUR to {to}"


def test_an_irreversible_call_waits_for_the_clients_approval_and_yes_makes_it(
    tmp_path: Path,
) -> None:
    store = TraceStore(tmp_path / "t.db")
    model = ScriptedModel([call("wire_money", to="Ann", amount=50), answer("Wired 50 EUR.")])
    loop = Loop(model, [wire_money], store=store, approve="ask")
    question = (
        'May I call wire_money(amount=50, to="Ann")? It cannot be undone. Answer yes to '
        "approve it; any other answer denies it."
    )
    with serving(loop) as url:
        first = asyncio.run(send(url, "Wire Ann 50 euros."))
        assert shown(first)[-1] == ("status_update", "TASK_STATE_INPUT_REQUIRED", question)
        assert SENT == []
        task_id, context_id = first[0].task.id, first[0].task.context_id
        second = asyncio.run(send(url, "yes", task_id=task_id, context_id=context_id))
    assert SENT == [("Ann", "50")]
    assert shown(second)[-2:] == [
        ("artifact_update", "answer", "Wired 50 EUR."),
        ("status_update", "TASK_STATE_COMPLETED", ""),
    ]


def test_cancel_stops_the_run(tmp_path: Path) -> None:
    started, stopped = threading.Event(), threading.Event()

    @tool
    async def wait_for_it(what: str) -> str:
        """Wait for something.

        Args:
            what: what to wait for.
        """
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()
        return "done"

    store = TraceStore(tmp_path / "t.db")
    loop = Loop(ScriptedModel([call("wait_for_it", what="rain")]), [wait_for_it], store=store)

    async def cancel_midway(url: str) -> tuple[list[StreamResponse], Task]:
        client = await ClientFactory(ClientConfig()).create_from_url(url)
        events: list[StreamResponse] = []

        async def consume() -> None:
            stream = client.send_message(user_message("Wait for rain."))
            async with aclosing(cast(AsyncGenerator[StreamResponse], stream)):
                async for event in stream:
                    events.append(event)

        consumer = asyncio.create_task(consume())
        assert await asyncio.to_thread(started.wait, 10)
        while not events:  # the task's first event may trail the tool's start
            await asyncio.sleep(0.01)
        cancelled = await client.cancel_task(CancelTaskRequest(id=events[0].task.id))
        await asyncio.wait_for(consumer, 10)
        await client.close()
        return events, cancelled

    with serving(loop) as url:
        start = time.monotonic()
        events, cancelled = asyncio.run(cancel_midway(url))
        seconds = time.monotonic() - start
    assert stopped.is_set() and seconds < 10
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert shown(events)[-1] == ("status_update", "TASK_STATE_CANCELED", "Cancelled.")
    (run,) = store.runs()
    assert (run.status, run.error) == ("interrupted", "interrupted")


def test_cancel_while_waiting_for_input_ends_the_task_and_the_run(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    model = ScriptedModel([call("send_note", receiver="colleague_1", text="hi")])
    loop = Loop(model, [send_note], clarify=Clarify(retry_first=False), store=store)

    async def ask_then_cancel(url: str) -> tuple[Task, Task]:
        first = await send(url, "Say hi to my colleague.")
        client = await ClientFactory(ClientConfig()).create_from_url(url)
        cancelled = await client.cancel_task(CancelTaskRequest(id=first[0].task.id))
        task = await client.get_task(GetTaskRequest(id=first[0].task.id))
        await client.close()
        return cancelled, task

    with serving(loop) as url:
        cancelled, task = asyncio.run(ask_then_cancel(url))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert task.status.state == TaskState.TASK_STATE_CANCELED
    (run,) = store.runs()
    assert (run.status, run.error) == ("interrupted", "cancelled by the A2A client")


def test_a_failed_run_fails_the_task_with_the_reason(tmp_path: Path) -> None:
    loop = Loop(ScriptedModel([], name="empty"), [add], store=TraceStore(tmp_path / "t.db"))
    with serving(loop) as url:
        events = asyncio.run(send(url, "What is 2 + 3?"))
    kind, state, text = shown(events)[-1]
    assert (kind, state) == ("status_update", "TASK_STATE_FAILED")
    assert text == "The run ended failed: empty: the script has no more replies."


def test_a_message_on_an_ended_task_is_refused(tmp_path: Path) -> None:
    with serving(adding_loop(TraceStore(tmp_path / "t.db"), send_note)) as url:
        events = asyncio.run(send(url, "What is 2 + 3?"))
        with pytest.raises(A2AError, match="terminal state"):
            asyncio.run(send(url, "And 4 + 4?", task_id=events[0].task.id))


def test_a_loop_without_a_store_cannot_be_served() -> None:
    with pytest.raises(UserError, match="store=TraceStore"):
        create_app(Loop(ScriptedModel([]), [add]), url="http://127.0.0.1:1/")


def test_bigloop_serve_a2a_on_the_command_line(tmp_path: Path) -> None:
    """The command serves a loop whose model is a scripted one behind `bigloop serve
    openai`'s app; the SDK's client runs a task on it."""
    model = ScriptedModel([call("calculator", expression="20 + 22"), answer("42")], name="scripted")
    port = free_port()
    with serving_app(lambda _: openai_app(model)) as model_url:
        command = [
            sys.executable, "-m", "bigloop", "serve", "a2a", "--model", "scripted",
            "--base-url", f"{model_url}v1", "--tools", "calculator", "--port", str(port),
            "--name", "calc", "--trace-db", str(tmp_path / "t.db"),
        ]  # fmt: skip
        env = {**os.environ, "BIGLOOP_HOME": str(tmp_path)}
        server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            card = _wait_for_card(url, server)
            assert card["name"] == "calc"
            assert [s["name"] for s in card["skills"]] == ["calculator"]
            events = asyncio.run(send(url, "What is 20 + 22?"))
        finally:
            server.terminate()
            _, err = server.communicate(timeout=10)
    assert shown(events)[-2:] == [
        ("artifact_update", "answer", "42"),
        ("status_update", "TASK_STATE_COMPLETED", ""),
    ], err
    assert shown(events)[3] == ("status_update", "TASK_STATE_WORKING", "calculator -> 42")
    (run,) = TraceStore(tmp_path / "t.db").runs()
    assert (run.status, run.answer) == ("ok", "42")


def _wait_for_card(url: str, server: subprocess.Popen[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()[1]
        try:
            card: dict[str, Any] = httpx.get(f"{url}.well-known/agent-card.json").json()
            return card
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("bigloop serve a2a did not start within 30 s")
