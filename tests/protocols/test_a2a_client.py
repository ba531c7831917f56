"""`a2a_agent_tool`: a remote A2A agent as an atom, against `bigloop serve a2a`'s app and
against agents that hang, die mid-stream, fail or are gone — each a `ToolFailure` within
its timeout, never a hang."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCard
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from bigloop import (
    FunctionModel,
    Loop,
    LoopConfig,
    Message,
    ScriptedModel,
    ToolFailure,
    ToolSpec,
    TraceStore,
    UserError,
)
from bigloop.atoms.a2a_client import a2a_agent_tool
from bigloop.protocols.a2a_server import agent_card, serving
from bigloop.protocols.openai_server import create_app as openai_app
from tests.protocols.a2a_support import (
    SENT,
    add,
    adding_loop,
    answer,
    call,
    noting_loop,
    serving_app,
)


def setup_function() -> None:
    SENT.clear()


def delegating_model(agent_name: str, task: str) -> FunctionModel:
    """Asks the agent `task`; answers its question with "Ann" on the same task; then
    answers with what the agent said last."""

    def fn(messages: list[Message], tools: list[ToolSpec]) -> str:
        said = [m.content for m in messages if m.role == "tool"]
        if not said:
            return call(agent_name, task=task)
        asked = re.search(r'task_id "([^"]+)"', said[-1])
        if asked and len(said) == 1:
            return call(agent_name, task="Ann", task_id=asked[1])
        return answer(f"The agent says: {said[-1]}")

    return FunctionModel(fn, name="delegator")


def test_the_tool_is_named_and_described_by_the_card(tmp_path: Path) -> None:
    loop = adding_loop(TraceStore(tmp_path / "t.db"))
    with serving(loop, name="adder", description="Adds.") as url:
        remote = a2a_agent_tool(url)
    assert (remote.name, remote.description) == ("adder", "Adds. Skills: add.")
    assert remote.schema["required"] == ["task"]
    assert set(remote.schema["properties"]) == {"task", "task_id"}
    assert (remote.idempotent, remote.effect) == (False, "write")


def test_bigloop_calls_another_bigloop_agent(tmp_path: Path) -> None:
    remote_store = TraceStore(tmp_path / "remote.db")
    with serving(adding_loop(remote_store), name="adder") as url:
        outer = Loop(delegating_model("adder", "What is 2 + 3?"), [a2a_agent_tool(url)])
        result = outer.run_sync("Ask the adder what 2 + 3 is.")
    assert (result.status, result.answer) == ("ok", "The agent says: 2 + 3 = 5.")
    (step,) = result.tool_steps
    assert (step.name, step.input, step.output) == (
        "adder",
        {"task": "What is 2 + 3?"},
        "2 + 3 = 5.",
    )
    (run,) = remote_store.runs()
    assert (run.task, run.status, run.answer) == ("What is 2 + 3?", "ok", "2 + 3 = 5.")


def test_a_question_from_the_agent_is_answered_on_the_same_task(tmp_path: Path) -> None:
    remote_store = TraceStore(tmp_path / "remote.db")
    noter = noting_loop(remote_store)
    with serving(noter, name="noter") as url:
        outer = Loop(delegating_model("noter", "Say hi to my colleague."), [a2a_agent_tool(url)])
        result = outer.run_sync("Have the noter say hi to my colleague.")
    assert (result.status, result.answer) == ("ok", "The agent says: Sent to Ann.")
    asked, answered = result.tool_steps
    task_id = re.findall(r'task_id "([^"]+)"', asked.output)[0]
    assert asked.output == (
        "The agent noter needs more information before it can answer. It asks: To call "
        "send_note, what is the receiver (who gets the note)?\n"
        f'To answer, call this tool again with your answer as task and task_id "{task_id}".'
    )
    assert (answered.input, answered.output) == (
        {"task": "Ann", "task_id": task_id},
        "Sent to Ann.",
    )
    assert SENT == [("Ann", "hi")]
    (run,) = remote_store.runs()  # the answer resumed the remote run
    assert run.status == "ok"
    assert [s.output for s in remote_store.steps(run.run_id) if s.kind == "ask"][-1] == "Ann"


class Hanging(AgentExecutor):
    """Starts every task, then never ends it; records cancels."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await TaskUpdater(event_queue, context.task_id, context.context_id).start_work()
        await asyncio.sleep(3600)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled.set()
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card_for(url: str, name: str) -> AgentCard:
    loop = Loop(ScriptedModel([]), [add])
    return agent_card(loop, url, name=name, description="Never answers.")


def sdk_agent(executor: AgentExecutor, name: str) -> Callable[[str], Starlette]:
    def make(url: str) -> Starlette:
        card = card_for(url, name)
        handler = DefaultRequestHandler(
            agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
        )
        routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
        return Starlette(routes=routes)

    return make


def test_an_agent_that_starts_and_never_ends_is_a_failure_within_the_timeout() -> None:
    hanging = Hanging()
    with serving_app(sdk_agent(hanging, "slow")) as url:
        remote = a2a_agent_tool(url, timeout_s=1.0)
        start = time.monotonic()
        with pytest.raises(
            ToolFailure, match=r"gave no answer within 1 s; its task \S+ was cancelled"
        ):
            asyncio.run(remote.call({"task": "Take your time."}))
        seconds = time.monotonic() - start
        assert hanging.cancelled.wait(5)
    assert seconds < 3


def test_an_agent_that_never_replies_is_a_failure_within_the_timeout() -> None:
    async def never(request: Request) -> None:
        await asyncio.sleep(3600)

    def make(url: str) -> Starlette:
        routes = [
            *create_agent_card_routes(card_for(url, "mute")),
            Route("/", never, methods=["POST"]),
        ]
        return Starlette(routes=routes)

    with serving_app(make) as url:
        remote = a2a_agent_tool(url, timeout_s=1.0)
        start = time.monotonic()
        with pytest.raises(ToolFailure, match=r"'mute' gave no answer within 1 s\.$"):
            asyncio.run(remote.call({"task": "Hello?"}))
        assert time.monotonic() - start < 3


def test_an_agent_that_dies_mid_stream_is_a_failure() -> None:
    async def dies(request: Request) -> StreamingResponse:
        body = await request.json()
        task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
        first = {"jsonrpc": "2.0", "id": body["id"], "result": {"task": task}}

        async def events() -> AsyncIterator[str]:
            yield f"data: {json.dumps(first)}\n\n"
            raise RuntimeError("the agent crashed")

        return StreamingResponse(events(), media_type="text/event-stream")

    def make(url: str) -> Starlette:
        routes = [
            *create_agent_card_routes(card_for(url, "fragile")),
            Route("/", dies, methods=["POST"]),
        ]
        return Starlette(routes=routes)

    with serving_app(make) as url:
        remote = a2a_agent_tool(url, timeout_s=10.0)
        start = time.monotonic()
        with pytest.raises(ToolFailure, match="'fragile'"):
            asyncio.run(remote.call({"task": "Hello?"}))
        assert time.monotonic() - start < 3


def test_an_agent_that_is_gone_is_a_failure_and_the_loop_goes_on(tmp_path: Path) -> None:
    with serving(adding_loop(TraceStore(tmp_path / "t.db")), name="adder") as url:
        remote = a2a_agent_tool(url, timeout_s=5.0)
    outer = Loop(delegating_model("adder", "What is 2 + 3?"), [remote])
    result = outer.run_sync("Ask the adder what 2 + 3 is.")
    (step,) = result.tool_steps
    assert step.error is not None and "Tool 'adder' failed" in step.output
    assert "The A2A agent 'adder' at" in step.output
    assert result.status == "ok"  # the model saw the failure and answered


def test_a_failed_remote_task_is_a_failure_with_the_reason(tmp_path: Path) -> None:
    broken = Loop(ScriptedModel([], name="empty"), [add], store=TraceStore(tmp_path / "t.db"))
    with serving(broken, name="broken") as url:
        with pytest.raises(ToolFailure, match="ended the task TASK_STATE_FAILED: The run ended"):
            asyncio.run(a2a_agent_tool(url).call({"task": "What is 2 + 3?"}))


def test_an_unreachable_agent_is_a_user_error_at_build_time() -> None:
    with pytest.raises(
        UserError, match=r"Cannot read the A2A agent card at http://127\.0\.0\.1:9/"
    ):
        a2a_agent_tool("http://127.0.0.1:9", connect_timeout_s=2.0)


def test_loop_config_builds_the_agents_and_stores_them_for_resume(tmp_path: Path) -> None:
    with serving(adding_loop(TraceStore(tmp_path / "remote.db")), name="adder") as url:
        config = LoopConfig(tools=["calculator"], a2a=[url], a2a_timeout_s=7.0)
        tools = config.build_tools()
        assert [t.name for t in tools] == ["calculator", "adder"]
        assert tools[1].timeout_s > 7.0
    assert LoopConfig.from_data(config.model_dump(), source="stored").a2a == [url]


def test_bigloop_run_with_a2a_on_the_command_line(tmp_path: Path) -> None:
    """`bigloop run --a2a URL`: the run's model (scripted, behind `bigloop serve openai`'s
    app) calls the agent (`bigloop serve a2a`'s app) as a tool."""
    model = delegating_model("adder", "What is 2 + 3?")
    with (
        serving(adding_loop(TraceStore(tmp_path / "remote.db")), name="adder") as url,
        serving_app(lambda _: openai_app(model)) as model_url,
    ):
        command = [sys.executable, "-m", "bigloop", "run", "Ask the adder what 2 + 3 is."]
        command += ["--model", "delegator", "--base-url", f"{model_url}v1", "--a2a", url]
        out = subprocess.run(
            [*command, "--tools", "calculator", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "BIGLOOP_HOME": str(tmp_path)},
        )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["status"], result["answer"]) == ("ok", "The agent says: 2 + 3 = 5.")
    (stored,) = TraceStore(tmp_path / "traces.db").runs()
    assert stored.config["a2a"] == [url]
