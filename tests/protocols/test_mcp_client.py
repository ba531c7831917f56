"""MCP servers' tools as atoms, against real servers on loopback: the reference servers
`mcp-server-time` and `mcp-server-git` from PyPI over stdio, and a server of ours (the
`mcp` SDK's MCPServer) whose tools hang, crash the process, or return 10 MB — over
stdio and streamable HTTP. Every failure is a clear `ToolFailure` within the timeout,
the next call works, and no server process outlives its test."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import types as mcp_types

from bigloop import Loop, ScriptedModel, Tool, ToolFailure, UserError
from bigloop.atoms.mcp_client import McpServer, close_all_servers, mcp_tools, result_text
from bigloop.config import LoopConfig
from tests.loopback import free_port
from tests.protocols.mcp_servers import misbehaving
from tests.protocols.mcp_servers.support import (
    GIT_SERVER,
    MISBEHAVING,
    TIME_SERVER,
    answer,
    call,
    children,
    servers_running,
    serving,
)


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test() -> Iterator[None]:
    yield
    assert servers_running() == []


def run(tool: Tool, **arguments: object) -> str:
    return asyncio.run(tool.call(arguments))


def failure(tool: Tool, **arguments: object) -> tuple[str, float]:
    """The failure of a call, and the seconds it took to fail."""
    start = time.perf_counter()
    with pytest.raises(ToolFailure) as caught:
        run(tool, **arguments)
    return str(caught.value), time.perf_counter() - start


def test_the_time_servers_tools_keep_their_schemas_and_answer_a_loop() -> None:
    with McpServer(TIME_SERVER) as server:
        tools = {t.name: t for t in server.tools()}
        assert set(tools) == {"get_current_time", "convert_time"}
        now = tools["get_current_time"]
        assert now.description == "Get current time in a specific timezone"
        assert now.schema["required"] == ["timezone"]
        assert "IANA timezone name" in now.schema["properties"]["timezone"]["description"]
        assert (now.effect, now.idempotent) == ("read", True)
        result = json.loads(run(now, timezone="Asia/Tokyo"))  # the structured content
        assert set(result) == {"timezone", "datetime", "day_of_week", "is_dst"}
        assert result["timezone"] == "Asia/Tokyo"
        assert result["datetime"].endswith("+09:00")
        error, _ = failure(now, timezone="Nowhere/Atlantis")
        assert "reported an error" in error and "Invalid timezone" in error
        converted = json.loads(
            run(
                tools["convert_time"],
                source_timezone="Europe/London",
                time="12:00",
                target_timezone="Asia/Tokyo",
            )
        )
        assert converted["target"]["timezone"] == "Asia/Tokyo"
        for _ in range(2):  # a loop's runs, each in its own event loop
            model = ScriptedModel(
                [call("get_current_time", timezone="Asia/Tokyo"), answer("It is 9 in Tokyo.")]
            )
            result = Loop(model, list(tools.values())).run_sync("What time is it in Tokyo?")
            assert result.status == "ok", result.error
            assert result.answer == "It is 9 in Tokyo."
            assert [(s.kind, s.name, s.error) for s in result.steps] == [
                ("model", "scripted", None),
                ("tool", "get_current_time", None),
                ("model", "scripted", None),
            ]
            assert json.loads(str(result.steps[1].output))["timezone"] == "Asia/Tokyo"
        assert len(servers_running()) == 1  # one connection for every call
    assert servers_running() == []


def test_the_git_server_reads_a_temporary_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "notes.txt").write_text("first\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add the notes"], check=True)
    (repo / "notes.txt").write_text("first\nsecond\n")
    with McpServer(f"{GIT_SERVER} --repository {repo}") as server:
        tools = {t.name: t for t in server.tools()}
        assert {"git_status", "git_log", "git_commit", "git_reset"} <= set(tools)
        assert tools["git_status"].effect == "read"
        assert tools["git_commit"].effect == "write"
        assert tools["git_reset"].effect == "irreversible"
        assert "modified:   notes.txt" in run(tools["git_status"], repo_path=str(repo))
        assert "Add the notes" in run(tools["git_log"], repo_path=str(repo))
        diff = run(tools["git_diff_unstaged"], repo_path=str(repo))
        assert "+second" in diff


def test_a_hung_call_fails_within_the_timeout_and_the_next_call_reconnects() -> None:
    with McpServer(MISBEHAVING, timeout_s=0.5) as server:
        tools = {t.name: t for t in server.tools()}
        first = _server_pids()
        for name in ("hang", "hang_loop"):  # a worker thread, then the event loop, stuck
            error, seconds = failure(tools[name])
            assert f"{name!r} gave no answer within 0.5 s" in error
            assert "the connection was closed and the next call opens a new one" in error
            assert 0.5 <= seconds < 2
            assert run(tools["echo"], text="still here") == '{"result": "still here"}'
        assert _server_pids() - first  # a new server process answered (the old ones stop)


def test_a_server_that_crashes_mid_call_or_dies_between_calls() -> None:
    with McpServer(MISBEHAVING) as server:
        tools = {t.name: t for t in server.tools()}
        error, seconds = failure(tools["crash"])
        assert "the connection closed during 'crash'" in error
        assert seconds < 2
        assert run(tools["echo"], text="again") == '{"result": "again"}'
        (pid,) = _server_pids(live_only=True)
        os.kill(pid, signal.SIGKILL)  # between two calls: the next one just reconnects
        deadline = time.monotonic() + 5
        while pid in _server_pids(live_only=True) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1)  # the worker sees the end of the server's output (in ms; slack for load)
        assert run(tools["echo"], text="back") == '{"result": "back"}'


def test_ten_megabytes_or_an_error_are_failures_and_the_connection_stays() -> None:
    with McpServer(MISBEHAVING, timeout_s=20) as server:
        tools = {t.name: t for t in server.tools()}
        pids = _server_pids()
        error, _ = failure(tools["big"], megabytes=10)
        assert "'big' returned 10.0 MB, more than the 1 MB a result may have" in error
        kept = run(tools["big"], megabytes=1)  # within the limit: cut for the model
        assert kept.endswith("… [truncated 996000 characters]")
        error, _ = failure(tools["fail"], reason="no luck")
        assert "'fail' reported an error: Error executing tool fail" in error
        assert json.loads(run(tools["weather"], city="Oslo")) == {"city": "Oslo", "celsius": 21.5}
        assert _server_pids() == pids
    assert (tools["echo"].effect, tools["echo"].idempotent) == ("read", True)
    assert (tools["delete_everything"].effect, tools["delete_everything"].idempotent) == (
        "irreversible",
        False,
    )
    # no annotations: MCP's default is destructive, and undescribed side effects are gated
    assert (tools["note"].effect, tools["note"].idempotent) == ("irreversible", False)


def test_a_server_slow_to_start_fails_within_the_connect_timeout() -> None:
    start = time.perf_counter()
    with (
        McpServer(f"{MISBEHAVING} --slow-start 30", connect_timeout_s=0.5) as server,
        pytest.raises(UserError, match=r"cannot connect: no answer within 0.5 s\."),
    ):
        server.tools()
    assert time.perf_counter() - start < 8  # including stopping it: SIGTERM after 2 s


def test_a_command_that_does_not_exist_is_a_developer_error() -> None:
    with pytest.raises(UserError, match=r"cannot connect: FileNotFoundError"):
        mcp_tools("/nonexistent/mcp-server")
    with pytest.raises(UserError, match="not a valid command line"):
        McpServer("server 'unclosed")
    with pytest.raises(UserError, match="The MCP server is empty"):
        McpServer("  ")


def test_a_server_that_exits_at_start_is_reported_with_its_stderr() -> None:
    script = f"{sys.executable} -c \"import sys; sys.exit('no config file here')\""
    with pytest.raises(UserError, match="Its stderr ends: no config file here"):
        mcp_tools(script, connect_timeout_s=5)


def test_streamable_http_calls_fail_cleanly_and_reconnect() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with McpServer(url, timeout_s=0.5) as server:
        with serving(misbehaving.server.streamable_http_app(), port):
            tools = {t.name: t for t in server.tools()}
            assert run(tools["echo"], text="over http") == '{"result": "over http"}'
            error, seconds = failure(tools["hang"], seconds=1)
            assert "'hang' gave no answer within 0.5 s" in error and seconds < 2
            assert json.loads(run(tools["weather"], city="Oslo"))["city"] == "Oslo"
        error, seconds = failure(tools["echo"], text="nobody there")
        assert "the next call opens a new one" in error and seconds < 3
        with serving(misbehaving.server.streamable_http_app(), port):  # up again
            assert run(tools["echo"], text="back") == '{"result": "back"}'


def test_a_loop_config_offers_the_servers_tools() -> None:
    config = LoopConfig(tools=["calculator"], mcp=[TIME_SERVER], mcp_timeout_s=5)
    tools = config.build_tools()
    assert [t.name for t in tools] == ["calculator", "get_current_time", "convert_time"]
    assert tools[1].timeout_s == 30 + 5 + 2  # connect + call + grace
    close_all_servers()
    with pytest.raises(UserError, match="Cannot list the tools of the MCP server"):
        LoopConfig(mcp=["/nonexistent/mcp-server"]).build_tools()


def test_content_blocks_become_text() -> None:
    blocks: list[mcp_types.ContentBlock] = [
        mcp_types.TextContent(type="text", text="two lines"),
        mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
        mcp_types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt"),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(uri="file:///b.txt", text="inside b"),
        ),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.BlobResourceContents(
                uri="file:///c.bin", blob="aGk=", mime_type="application/zip"
            ),
        ),
    ]
    assert result_text(mcp_types.CallToolResult(content=blocks)).splitlines() == [
        "two lines",
        "[image image/png]",
        "[resource link file:///a.txt: a.txt]",
        "inside b",
        "[resource file:///c.bin (application/zip)]",
    ]
    structured = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="{}")], structured_content={"ok": 1}
    )
    assert result_text(structured) == '{"ok": 1}'


def _server_pids(*, live_only: bool = False) -> set[int]:
    return {
        pid
        for pid, state, command in children()
        if "misbehaving.py" in command and not (live_only and state == "Z")
    }
