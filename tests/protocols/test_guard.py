"""The guard in front of `serve openai` and `serve a2a` (issue 26, items 7, 8, 10): a
request addressed to another host name (DNS rebinding), a browser request from another
site, and a body over the cap are refused before any handler runs; a deeply nested JSON
body is a 400, not a 500."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bigloop import FunctionModel, Loop, ScriptedModel, TraceStore, tool
from bigloop.protocols import a2a_server, openai_server
from bigloop.protocols.guard import allowed_hosts_for
from tests import loopback

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
def openai_url() -> Iterator[str]:
    model = FunctionModel(lambda messages, tools: json.dumps({"answer": "hello"}), name="m")
    with loopback.serving(lambda _: openai_server.create_app(model), lifespan="off") as url:
        yield url


@pytest.fixture
def a2a_url() -> Iterator[str]:
    loop = Loop(ScriptedModel([json.dumps({"answer": "4"})]), [add], store=TraceStore())
    with loopback.serving(lambda url: a2a_server.create_app(loop, url=url)) as url:
        yield url


def test_the_openai_server_answers_loopback_and_refuses_other_hosts(openai_url: str) -> None:
    with httpx.Client(base_url=openai_url) as http:
        ok = http.post("v1/chat/completions", json=CHAT)
        assert ok.status_code == 200
        assert ok.json()["choices"][0]["message"]["content"] == "hello"
        rebound = http.post("v1/chat/completions", json=CHAT, headers={"Host": "evil.example"})
        assert rebound.status_code == 400 and "evil.example" in rebound.text
        cross = http.post(
            "v1/chat/completions",
            content=json.dumps(CHAT),
            headers={"Origin": "https://evil.example", "Content-Type": "text/plain"},
        )
        assert cross.status_code == 403
        same = http.post("v1/chat/completions", json=CHAT, headers={"Origin": openai_url[:-1]})
        assert same.status_code == 200


def test_bodies_over_the_cap_are_refused_whether_declared_or_streamed(openai_url: str) -> None:
    big = b'{"model": "m", "messages": [' + b" " * (9 * 1024 * 1024) + b"]}"
    with httpx.Client(base_url=openai_url) as http:
        declared = http.post("v1/chat/completions", content=big)
        assert declared.status_code == 413

        def chunks() -> Iterator[bytes]:
            for i in range(0, len(big), 1 << 20):
                yield big[i : i + (1 << 20)]

        streamed = http.post("v1/chat/completions", content=chunks())
        assert streamed.status_code == 413


def test_json_nested_too_deep_is_a_client_error(openai_url: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    with httpx.Client(base_url=openai_url) as http:
        answer = http.post("v1/chat/completions", content=deep)
    assert answer.status_code == 400


def test_the_a2a_server_refuses_other_hosts_and_origins(a2a_url: str) -> None:
    card = ".well-known/agent-card.json"
    with httpx.Client(base_url=a2a_url) as http:
        assert http.get(card).status_code == 200
        assert http.get(card, headers={"Host": "evil.example"}).status_code == 400
        assert http.get(card, headers={"Origin": "http://evil.example"}).status_code == 403


def test_allowed_hosts_follow_the_bound_address() -> None:
    assert allowed_hosts_for("0.0.0.0") == ["*"]
    assert "10.0.0.5" in allowed_hosts_for("10.0.0.5")


def test_upstream_errors_are_redacted_and_empty_choices_are_a_clear_error() -> None:
    from bigloop.atoms.models.openai_compat import OpenAIModel
    from tests.loopback import serving

    key = "sk-" + "a1b2c3d4" * 4

    def upstream(_: str) -> object:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def chat(request: Request) -> JSONResponse:
            body = await request.json()
            said = body["messages"][-1]["content"]
            if said == "empty":
                return JSONResponse({"id": "x", "object": "chat.completion", "choices": []})
            if said == "hi":
                error = {"message": f"Incorrect API key provided: {key}", "type": "auth"}
                return JSONResponse({"error": error}, status_code=401)
            message = {"role": "assistant", "content": f"got {said}"}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return JSONResponse(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [choice],
                }
            )

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])

    with serving(upstream) as up:
        model = OpenAIModel("m", base_url=f"{up}v1", api_key="unused")
        app = openai_server.create_app(model)
        with (
            loopback.serving(lambda _: app, lifespan="off") as url,
            httpx.Client(base_url=url) as http,
        ):
            refused = http.post("v1/chat/completions", json=CHAT)
            assert refused.status_code >= 400 and key not in refused.text
            surrogate = {"model": "m", "messages": [{"role": "user", "content": "\ud800"}]}
            relayed = http.post(
                "v1/chat/completions",
                content=json.dumps(surrogate),
                headers={"Content-Type": "application/json"},
            )
            assert (
                relayed.status_code == 200
                and "\ufffd" in relayed.json()["choices"][0]["message"]["content"]
            )
            empty = {"model": "m", "messages": [{"role": "user", "content": "empty"}]}
            answer = http.post("v1/chat/completions", json=empty)
            assert answer.status_code == 503 and "no choices" in answer.text


def test_a_token_is_required_beyond_loopback_and_checked_on_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uvicorn

    from bigloop import UserError

    ran: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.update(app=app, **kw))
    with pytest.raises(UserError, match="--token"):
        openai_server.serve_openai("m", host="0.0.0.0", base_url="http://127.0.0.1:9/v1")
    assert ran == {}
    openai_server.serve_openai("m", host="127.0.0.1", base_url="http://127.0.0.1:9/v1")
    assert ran["host"] == "127.0.0.1"  # loopback needs none

    model = FunctionModel(lambda messages, tools: json.dumps({"answer": "hello"}), name="m")
    app = openai_server.create_app(model, token="s3cret-token")
    with loopback.serving(lambda _: app, lifespan="off") as url, httpx.Client(base_url=url) as http:
        assert http.post("v1/chat/completions", json=CHAT).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert http.post("v1/chat/completions", json=CHAT, headers=wrong).status_code == 401
        right = {"Authorization": "Bearer s3cret-token"}
        assert http.post("v1/chat/completions", json=CHAT, headers=right).status_code == 200


def test_bodies_no_handler_can_read_are_refused_before_the_a2a_dispatcher(a2a_url: str) -> None:
    """Found by bench/server_soak.py: invalid UTF-8 and JSON nested 20,000 deep reached
    the A2A SDK's dispatcher, which answered JSON-RPC "internal error" and logged a
    traceback. The guard refuses them first, with a reason."""
    with httpx.Client(base_url=a2a_url) as http:
        for body, reason in [
            (b'{"jsonrpc": "2.0", "method": "\xff\xfe"}', "not UTF-8"),
            (b"[" * 20_000 + b"]" * 20_000, "nested too deep"),
        ]:
            answer = http.post("/", content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code == 400 and reason in answer.text


def test_the_mcp_http_server_and_the_viewer_need_a_token_beyond_loopback(tmp_path: Path) -> None:
    """`serve mcp --http` and `bigloop ui` refuse to listen beyond loopback without a
    token (exit 2, saying how), as `serve openai` and `serve a2a` do; with one, the MCP
    app behind the guard refuses requests without it."""
    from starlette.testclient import TestClient

    from bigloop.protocols.mcp_server import create_server, http_app

    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("BIGLOOP_TOKEN", None)
    for command in (
        [
            "serve",
            "mcp",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--http",
            "0.0.0.0:18999",
        ],
        ["ui", "--host", "0.0.0.0", "--trace-db", str(tmp_path / "t.db")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "bigloop", *command],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 2 and "--token" in done.stderr, done.stderr[-500:]
    loop = Loop(ScriptedModel([json.dumps({"answer": "4"})]), [add], store=TraceStore())
    app = http_app(create_server(loop), "127.0.0.1", token="s3cret-token")
    with TestClient(app, base_url="http://127.0.0.1:8765") as http:
        assert http.post("/mcp", json={}).status_code == 401
