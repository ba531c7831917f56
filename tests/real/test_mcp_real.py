"""The embedded model with a third-party MCP server's tools (mcp-server-time, over
stdio): it must call get_current_time for Tokyo (after any refused attempt) and answer
with the time the server gave."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from bigloop import LocalModel, Loop, TraceStore
from bigloop.atoms.mcp_client import McpServer

pytestmark = pytest.mark.real

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


@pytest.mark.xfail(
    strict=False,
    reason="not yet passed on the embedded 0.5B model (first run 2026-11-30: it called convert_time with invalid arguments first); kept running so a fix or a stronger model shows up as XPASS",  # noqa: E501
)
def test_what_time_is_it_in_tokyo(embedded: LocalModel, tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces.db")
    with McpServer(TIME_SERVER) as server:
        loop = Loop(embedded, server.tools(), store=store)
        result = loop.run_sync("What time is it in Tokyo?")
    assert result.status == "ok", result.error
    # A malformed first call goes back to the model as data; what must happen is a
    # correct call for Tokyo and an answer with the time the server gave.
    made = [
        s
        for s in result.steps
        if s.kind == "tool" and s.name == "get_current_time" and s.error is None
    ]
    assert made, [(s.name, s.input, s.error) for s in result.steps if s.kind == "tool"]
    assert made[0].input == {"timezone": "Asia/Tokyo"}
    told = json.loads(str(made[-1].output))
    hour, minute = told["datetime"][11:13], told["datetime"][14:16]
    assert re.search(rf"\b0?{int(hour)}:{minute}\b", result.answer or ""), result.answer
