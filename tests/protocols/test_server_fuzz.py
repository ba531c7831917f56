"""Fuzzing the HTTP servers (issue 26): whatever a client sends — any bytes, any JSON, any
header value — `serve openai`, `serve a2a` and the trace viewer answer with a status, never
a 5xx (but 503, busy) and never a dropped connection. The whole-process soak with memory
figures is `bench/server_soak.py` (results in bench/results/hardening/soak.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bigloop import FunctionModel, Loop, ScriptedModel, TraceStore, tool
from bigloop.protocols import a2a_server, openai_server
from bigloop.ui import create_app as viewer_app
from tests import loopback

FUZZ = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
SHAPED = st.fixed_dictionaries(  # close to a real request, so the handlers are reached
    {
        "model": JSON,
        "messages": st.lists(
            st.dictionaries(st.sampled_from(["role", "content", "tool_calls", "name"]), JSON),
            max_size=3,
        ),
    },
    optional={"tools": JSON, "stream": JSON, "temperature": JSON, "max_tokens": JSON},
)
RPC = st.fixed_dictionaries(
    {
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": JSON,
        "method": st.sampled_from(["message/send", "tasks/get", "tasks/cancel", "x"])
        | st.text(max_size=12),
    },
    optional={"params": JSON},
)
HEADER = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=200).map(str.strip)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    model = FunctionModel(lambda messages, tools: json.dumps({"answer": "hello"}), name="m")
    replies = [json.dumps({"answer": "4"})] * 10_000
    loop = Loop(ScriptedModel(replies), [add], store=TraceStore())
    store = TraceStore()
    with (
        loopback.serving(lambda _: openai_server.create_app(model), lifespan="off") as openai,
        loopback.serving(lambda url: a2a_server.create_app(loop, url=url)) as a2a,
        loopback.serving(lambda _: viewer_app(store)) as viewer,
    ):
        yield {"openai": openai + "v1/chat/completions", "a2a": a2a, "viewer": viewer}


def answered(response: httpx.Response) -> None:
    assert response.status_code < 500 or response.status_code == 503, response.text[:500]


@FUZZ
@given(body=st.binary(max_size=2000), content_type=HEADER)
def test_any_bytes_get_a_status(urls: dict[str, str], body: bytes, content_type: str) -> None:
    for url in urls.values():
        answered(httpx.post(url, content=body, headers={"Content-Type": content_type}, timeout=30))


@FUZZ
@given(value=JSON | SHAPED)
def test_any_json_gets_a_status_from_the_openai_server(urls: dict[str, str], value: object) -> None:
    answered(httpx.post(urls["openai"], content=json.dumps(value), timeout=30))


@FUZZ
@given(value=RPC)
def test_any_json_rpc_gets_a_status_from_the_a2a_server(
    urls: dict[str, str], value: object
) -> None:
    answered(httpx.post(urls["a2a"], content=json.dumps(value), timeout=30))


@FUZZ
@given(
    path=st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=40),
    host=HEADER,
    origin=HEADER,
)
def test_any_path_host_and_origin_get_a_status(
    urls: dict[str, str], path: str, host: str, origin: str
) -> None:
    for url in urls.values():
        base = url.split("/v1/")[0].rstrip("/")
        headers = {"Host": host or "x", "Origin": origin}
        try:
            request = httpx.Request("GET", base + "/" + path.lstrip("/"), headers=headers)
        except (httpx.InvalidURL, ValueError):
            continue  # not a request a client can send
        with httpx.Client(timeout=30) as http:
            answered(http.send(request))
