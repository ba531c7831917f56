"""The command line with MCP, end to end: `bigloop run --mcp` (stored with the run, so
`bigloop resume` rebuilds the server's tools) and `bigloop serve mcp` whose `run_task`
uses another MCP server's tools — on a scripted model behind an OpenAI-compatible
endpoint, the MCP servers real."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bigloop import FunctionModel, Message, ToolSpec, TraceStore
from bigloop.atoms.mcp_client import McpServer
from bigloop.config import LoopConfig
from bigloop.protocols.openai_request import InvalidRequest
from tests.protocols.mcp_servers.support import (
    TIME_SERVER,
    answer,
    call,
    model_server,
    servers_running,
)


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test() -> Iterator[None]:
    yield
    assert servers_running() == []


def time_model(refusing: list[bool] | None = None) -> FunctionModel:
    """Asks for Tokyo's time, then answers with the tool's result — or, while
    `refusing` holds True, refuses to answer (the run fails there, to be resumed)."""

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if messages[-1].role != "tool":
            assert "get_current_time" in [t.name for t in tools]
            return call("get_current_time", timezone="Asia/Tokyo")
        if refusing and refusing[0]:
            raise InvalidRequest("not now")  # HTTP 400: the client does not retry
        return answer(f"Tokyo: {json.loads(messages[-1].content)['datetime']}")

    return FunctionModel(reply, name="scripted")


def bigloop(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BIGLOOP_HOME": str(home)}
    command = [sys.executable, "-m", "bigloop", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def test_run_with_mcp_is_stored_and_resumed(tmp_path: Path) -> None:
    refusing = [True]
    with model_server(time_model(refusing)) as base_url:
        options = ("--model", "scripted", "--base-url", base_url, "--tools", "calculator")
        first = bigloop(
            "run", "What time is it in Tokyo?", *options, "--mcp", TIME_SERVER,
            "--planner", "react", "--clarify", "missing", "--json", home=tmp_path,
        )  # fmt: skip
        assert first.returncode == 1, first.stderr
        failed = json.loads(first.stdout)
        assert failed["status"] == "failed" and "not now" in failed["error"]
        refusing[0] = False
        resumed = bigloop("resume", failed["run_id"], "--json", home=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    done = json.loads(resumed.stdout)
    assert done["run_id"] == failed["run_id"]
    assert done["answer"].startswith("Tokyo: ") and done["answer"].endswith("+09:00")
    store = TraceStore(tmp_path / "traces.db")
    try:
        config = LoopConfig.from_data(store.run(done["run_id"]).config, source="test")
        steps = [(s.kind, s.name) for s in store.steps(done["run_id"])]
    finally:
        store.close()
    assert config.mcp == [TIME_SERVER]
    assert steps.count(("tool", "get_current_time")) == 1  # not repeated by the resume


def test_serve_mcp_runs_a_task_with_another_mcp_servers_tools(tmp_path: Path) -> None:
    """bigloop's MCP client, to bigloop's MCP server, whose loop uses mcp-server-time."""
    with model_server(time_model()) as base_url:
        command = [
            sys.executable, "-m", "bigloop", "serve", "mcp", "--model", "scripted",
            "--base-url", base_url, "--tools", "calculator", "--mcp", TIME_SERVER,
            "--trace-db", str(tmp_path / "t.db"),
        ]  # fmt: skip
        with McpServer(shlex.join(command)) as server:
            tools = {t.name: t for t in server.tools()}
            assert list(tools) == ["calculator", "get_current_time", "convert_time", "run_task"]
            assert tools["run_task"].effect == "read"  # as every tool of its loop
            answer_ = asyncio.run(tools["run_task"].call({"task": "What time is it in Tokyo?"}))
    outcome = json.loads(answer_)  # the structured content: run id, status, answer
    assert outcome["status"] == "ok"
    assert outcome["answer"].startswith("Tokyo: ") and outcome["answer"].endswith("+09:00")
