"""`bigloop serve mcp` driven by the `mcp` SDK's own client, over stdio and streamable
HTTP on loopback: the loop's tools with their schemas, calls and their errors, and
`run_task` — a run whose question goes back to the client as an elicitation (in the
result on the 2026-07-28 protocol, as a request during the call on earlier ones) or, for
a client that cannot be asked, as text with the run id to answer with."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp import types as mcp_types
from mcp.client.session import ClientRequestContext

from bigloop import Loop, ScriptedModel, TraceStore, UserError, tool
from bigloop.protocols.mcp_server import create_server
from tests.loopback import free_port
from tests.protocols.mcp_servers.scripted_loop import scripted_loop
from tests.protocols.mcp_servers.support import (
    SCRIPTED_LOOP,
    http_server,
    servers_running,
    serving,
)

QUESTION = "To call send_note, what is the receiver (who gets the note)?"
REPO = Path(__file__).parent.parent.parent


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test() -> Iterator[None]:
    yield
    assert servers_running() == []


def serve_command(trace_db: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "bigloop", "serve", "mcp", "--trace-db", str(trace_db), *options]


def stdio(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], cwd=REPO)


def text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


async def exercise_builtin_tools(client: Client) -> None:
    """What every transport must do: list the tools, call one, report its errors."""
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert {"calculator", "days_between", "run_task"} <= set(listed)
    calculator = listed["calculator"]
    assert calculator.input_schema["required"] == ["expression"]
    assert calculator.annotations is not None and calculator.annotations.read_only_hint
    assert listed["run_task"].input_schema["required"] == ["task"]
    result = await client.call_tool("calculator", {"expression": "(45 + 12) / 3"})
    assert (text(result), result.is_error) == ("19", False)
    wrong = await client.call_tool("calculator", {"expr": "1 + 1"})
    assert wrong.is_error and "Invalid arguments for 'calculator'" in text(wrong)
    with pytest.raises(MCPError, match="Unknown tool 'nope'"):
        await client.call_tool("nope", {})


def test_bigloop_serve_mcp_over_stdio(tmp_path: Path) -> None:
    async def main() -> None:
        command = serve_command(tmp_path / "t.db", "--tools", "calculator,days_between")
        async with Client(stdio(command)) as client:
            assert client.protocol_version == "2026-07-28"
            await exercise_builtin_tools(client)

    anyio.run(main)


def test_bigloop_serve_mcp_over_http_to_both_protocol_eras(tmp_path: Path) -> None:
    port = free_port()
    command = serve_command(tmp_path / "t.db", "--http", f"127.0.0.1:{port}")

    async def main() -> None:
        for mode in ("auto", "legacy"):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
                modern = client.protocol_version == "2026-07-28"
                assert modern == (mode == "auto")
                await exercise_builtin_tools(client)

    with http_server(command, port):
        anyio.run(main)


def answering(answer: str | None, asked: list[str]) -> Any:
    """An elicitation callback that records the question and gives `answer` (None:
    declines)."""

    async def elicit(
        ctx: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.append(params.message)
        if answer is None:
            return mcp_types.ElicitResult(action="decline")
        return mcp_types.ElicitResult(action="accept", content={"answer": answer})

    return elicit


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_question_is_elicited_and_the_answer_resumes_the_run_over_stdio(
    tmp_path: Path, mode: str
) -> None:
    asked: list[str] = []

    async def main() -> mcp_types.CallToolResult:
        server = stdio([*SCRIPTED_LOOP.split(), str(tmp_path / "t.db")])
        async with Client(server, mode=mode, elicitation_callback=answering("Ann", asked)) as c:
            return await c.call_tool("run_task", {"task": "Say hi to my colleague."})

    result = anyio.run(main)
    assert asked == [QUESTION]
    assert (text(result), result.is_error) == ("Done: sent to Ann.", False)
    assert result.structured_content is not None
    run_id = result.structured_content["run_id"]
    store = TraceStore(tmp_path / "t.db")
    try:
        assert [r.run_id for r in store.runs()] == [run_id]  # one run, resumed
        assert [(s.kind, s.name) for s in store.steps(run_id)] == [
            ("model", "scripted"),
            ("ask", "send_note"),
            ("ask", "user"),
            ("model", "scripted"),
            ("tool", "send_note"),
            ("model", "scripted"),
        ]
    finally:
        store.close()


def test_without_elicitation_the_question_comes_back_with_the_run_id(tmp_path: Path) -> None:
    async def main(client: Client) -> None:
        first = await client.call_tool("run_task", {"task": "Say hi to my colleague."})
        assert first.structured_content is not None
        run_id = first.structured_content["run_id"]
        assert text(first) == (
            f"The run needs an answer: {QUESTION}\nAnswer with run_task(task=ANSWER, "
            f"run_id={run_id!r}), or `bigloop resume {run_id} --answer ANSWER`."
        )
        assert first.structured_content["status"] == "input_required"
        second = await client.call_tool("run_task", {"task": "Ann", "run_id": run_id})
        assert text(second) == "Done: sent to Ann."
        assert second.structured_content == {
            "run_id": run_id,
            "status": "ok",
            "answer": "Done: sent to Ann.",
        }
        unknown = await client.call_tool("run_task", {"task": "Ann", "run_id": "nope"})
        assert unknown.is_error and "nope" in text(unknown)
        empty = await client.call_tool("run_task", {"task": " "})
        assert empty.is_error and "takes a task" in text(empty)

    with_client(scripted_loop(str(tmp_path / "t.db")), main)


def test_a_declined_question_leaves_the_run_stopped(tmp_path: Path) -> None:
    asked: list[str] = []

    async def main(client: Client) -> None:
        result = await client.call_tool("run_task", {"task": "Say hi to my colleague."})
        assert result.is_error
        assert text(result).startswith("Run ") and "stays stopped on its question" in text(result)

    loop = scripted_loop(str(tmp_path / "t.db"))
    with_client(loop, main, elicitation=answering(None, asked))
    assert asked == [QUESTION]
    assert loop.store is not None
    assert [r.status for r in loop.store.runs()] == ["input_required"]


def test_a_loop_without_a_store_returns_the_question() -> None:
    async def main(client: Client) -> None:
        result = await client.call_tool("run_task", {"task": "Say hi to my colleague."})
        assert text(result).endswith(
            "This server keeps no trace store, so the run cannot be resumed."
        )

    with_client(scripted_loop(None), main, elicitation=answering("Ann", []))


def test_a_task_needing_no_question_and_a_failed_run(tmp_path: Path) -> None:
    async def main(client: Client) -> None:
        done = await client.call_tool("run_task", {"task": "Say hi to Ann."})
        assert (text(done), done.is_error) == ("Done: sent to Ann.", False)

    with_client(scripted_loop(str(tmp_path / "t.db")), main)

    async def fails(client: Client) -> None:
        failed = await client.call_tool("run_task", {"task": "Add 2 and 3."})
        assert failed.is_error
        assert "ended failed" in text(failed) and "no more replies" in text(failed)

    with_client(Loop(ScriptedModel([]), [add]), fails)


def test_run_task_over_http_elicits_in_the_result_or_answers_with_the_question(
    tmp_path: Path,
) -> None:
    """Stateless HTTP: a 2026-07-28 client is asked in the result; an earlier one cannot
    be asked during the call (no channel back), so it gets the question as text."""
    server = create_server(scripted_loop(str(tmp_path / "t.db")))
    asked: list[str] = []

    async def main(url: str, mode: str) -> str:
        elicit = answering("Ann", asked)
        async with Client(url, mode=mode, elicitation_callback=elicit) as client:
            result = await client.call_tool("run_task", {"task": "Say hi to my colleague."})
            return text(result)

    with serving(server.streamable_http_app(stateless_http=True)) as base_url:
        url = f"{base_url}mcp"
        assert anyio.run(main, url, "auto") == "Done: sent to Ann."
        assert asked == [QUESTION]
        assert anyio.run(main, url, "legacy").startswith(f"The run needs an answer: {QUESTION}")
        assert asked == [QUESTION]


def test_a_loop_with_a_tool_named_run_task_cannot_be_served() -> None:
    @tool
    def run_task(task: str) -> str:
        """Clash."""
        return task

    with pytest.raises(UserError, match="named 'run_task'"):
        create_server(Loop(ScriptedModel([]), [run_task]))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def with_client(loop: Loop, body: Any, *, elicitation: Any = None) -> None:
    """`body(client)` with the SDK's client connected in process to `loop`'s server."""

    async def main() -> None:
        async with Client(create_server(loop), elicitation_callback=elicitation) as client:
            await body(client)

    anyio.run(main)


def test_a_run_is_resumed_only_by_its_whole_id_and_only_if_this_server_started_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "t.db")
    elsewhere = scripted_loop(db).run_sync("Say hi to my colleague.")  # another program's
    assert elsewhere.status == "input_required"

    async def main(client: Client) -> None:
        first = await client.call_tool("run_task", {"task": "Say hi to my colleague."})
        assert first.structured_content is not None
        run_id = first.structured_content["run_id"]
        prefix = await client.call_tool("run_task", {"task": "Bob", "run_id": run_id[:2]})
        assert prefix.is_error
        other = await client.call_tool("run_task", {"task": "Bob", "run_id": elsewhere.run_id})
        assert other.is_error and "Bob" not in text(other)
        mine = await client.call_tool("run_task", {"task": "Ann", "run_id": run_id})
        assert text(mine) == "Done: sent to Ann."

    with_client(scripted_loop(db), main)
    store = TraceStore(Path(db))
    try:
        assert store.run(elsewhere.run_id).status == "input_required"  # left as it was
    finally:
        store.close()
