"""The guard in front of `serve openai` and `serve a2a` (issue 26, items 7, 8, 10): a
request addressed to another host name (DNS rebinding), a browser request from another
site, and a body over the cap are refused before any handler runs; a deeply nested JSON
body is a 400, not a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator

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
