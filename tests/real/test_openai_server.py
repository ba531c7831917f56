"""The OpenAI-compatible client against a real server: llama.cpp's, on loopback, serving
the embedded model."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from bigloop import Loop, Message, OpenAIModel
from bigloop.atoms.builtin import default_tools
from bigloop.atoms.models.weights import default_model_path
from tests.loopback import free_port

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--model_alias",
            "qwen-0.5b",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            pytest.fail("llama_cpp.server did not start within 120 s")
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_chat_and_usage(server: str) -> None:
    import asyncio

    model = OpenAIModel("qwen-0.5b", base_url=server)
    assert model.card.privacy == "local"
    response = asyncio.run(model.chat([Message(role="user", content="Say hello.")], []))
    assert response.text
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


@pytest.mark.parametrize("tool_mode", ["native", "prompted"])
def test_tool_loop_through_the_server(server: str, tool_mode: str) -> None:
    model = OpenAIModel("qwen-0.5b", base_url=server, tool_mode=tool_mode)  # type: ignore[arg-type]
    result = Loop(model, default_tools()).run_sync("What is (45 + 12) / 3?")
    assert result.status == "ok", result.error
    assert [(s.name, s.output) for s in result.tool_steps][:1] == [("calculator", "19")]
    assert "19" in (result.answer or "")


def test_unreachable_server_is_a_clear_failure() -> None:
    port = free_port()
    model = OpenAIModel("x", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=2)
    result = Loop(model, default_tools()).run_sync("hi")
    assert result.status == "failed"
    assert result.error is not None and "Cannot reach the model server" in result.error


def test_graph_planner_through_the_server(server: str) -> None:
    """Structured output (response_format with a schema) drives the task-graph planner."""
    from bigloop import tool

    @tool
    def population(city: str) -> float:
        """Population of a city (how many people live there), in millions.

        Args:
            city: the city's name.
        """
        return {"Oslo": 0.7, "Lima": 10.7}[city]

    model = OpenAIModel("qwen-0.5b", base_url=server, structured="json_object")
    result = Loop(model, [population], planner="graph").run_sync(
        "Which city has the larger population: Oslo or Lima?"
    )
    assert result.status == "ok", result.error
    assert sorted(s.input["city"] for s in result.tool_steps) == ["Lima", "Oslo"]
    assert result.answer
