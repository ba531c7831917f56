"""A2A on the embedded model: `bigloop serve a2a --model embedded` in its own process,
driven by the `a2a-sdk` client and, as a tool, by a loop on the embedded model."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bigloop import LocalModel, Loop, TraceStore
from bigloop.atoms.a2a_client import a2a_agent_tool
from tests.loopback import free_port
from tests.protocols.a2a_support import send, shown

pytestmark = [
    pytest.mark.real,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.fixture(scope="module")
def agent_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`bigloop serve a2a` on the embedded model with the calculator; its URL and traces."""
    home = tmp_path_factory.mktemp("a2a-agent")
    port = free_port()
    command = [sys.executable, "-m", "bigloop", "serve", "a2a", "--model", "embedded"]
    command += ["--tools", "calculator", "--name", "calculator_agent", "--port", str(port)]
    command += ["--description", "Computes arithmetic exactly."]
    command += ["--trace-db", str(home / "traces.db")]
    env = {**os.environ, "BIGLOOP_HOME": str(home)}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                if httpx.get(f"{url}.well-known/agent-card.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            pytest.fail("bigloop serve a2a did not start within 180 s")
        yield url, home / "traces.db"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_served_loop_computes_and_streams_its_steps(agent_url: tuple[str, Path]) -> None:
    url, traces = agent_url
    events = asyncio.run(send(url, "What is 17 * 23?"))
    rows = shown(events)
    assert rows[-1][:2] == ("status_update", "TASK_STATE_COMPLETED"), rows
    (answer,) = [text for kind, name, text in rows if kind == "artifact_update"]
    assert "391" in answer
    assert any(text.startswith("calculator -> ") for _, _, text in rows), rows
    assert any(r.answer and "391" in r.answer for r in TraceStore(traces).runs())


@pytest.mark.xfail(
    strict=False,
    reason="not yet passed on the embedded 0.5B model (first run 2026-11-30: the caller answered '$2304' without the agent's result; an unclosed pipe at teardown); kept running so a fix or a stronger model shows up as XPASS",  # noqa: E501
)
def test_a_loop_on_the_embedded_model_delegates_to_the_agent(
    agent_url: tuple[str, Path], embedded: LocalModel
) -> None:
    url, _ = agent_url
    remote = a2a_agent_tool(url, timeout_s=240)
    result = Loop(embedded, [remote]).run_sync(
        "Ask the calculator agent: what is 48 * 52? Then tell me the result."
    )
    assert result.status == "ok", result.error
    calls = [s for s in result.tool_steps if s.name == "calculator_agent"]
    assert calls and calls[0].error is None, result.steps
    assert re.search(r"2,?496", result.answer or ""), result.answer
