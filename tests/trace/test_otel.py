"""Runs exported as OpenTelemetry GenAI spans to a real OTLP/HTTP receiver on loopback: a
tiny HTTP server that decodes each POST /v1/traces with opentelemetry-proto."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from bigloop import Budget, FunctionModel, Loop, Message, ScriptedModel, ToolSpec, TraceStore, tool
from bigloop._errors import UserError
from bigloop.trace.otel import OtelHook, export_run, traces_endpoint
from bigloop.trace.records import Step


class Receiver:
    """What the OTLP endpoint was sent."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.url = ""

    def spans(self) -> list[Span]:
        return [
            span
            for request in list(self.requests)
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def named(self, name: str) -> list[Span]:
        return [s for s in self.spans() if s.name == name]


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            assert self.headers["Content-Type"] == "application/x-protobuf"
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            receiver.requests.append(request)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def attrs(span: Span | Span.Event) -> dict[str, Any]:
    return {a.key: value(a.value) for a in span.attributes}


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


def calls(*made: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in made]})


SCRIPT = [
    calls(("add", {"a": 2, "b": 3}), ("divide", {"a": 1, "b": 0})),
    json.dumps({"answer": "5"}),
]


def test_a_recorded_run_becomes_one_trace_of_genai_spans(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces.db")
    result = Loop(ScriptedModel(SCRIPT), [add, divide], store=store).run_sync("2 + 3, and 1 / 0?")
    with otlp_receiver() as receiver:
        assert export_run(store, result.run_id[:5], receiver.url) == 5
    assert len(receiver.requests) == 1
    resource = receiver.requests[0].resource_spans[0].resource
    assert {a.key: value(a.value) for a in resource.attributes}["service.name"] == "bigloop"
    assert receiver.requests[0].resource_spans[0].scope_spans[0].scope.name == "bigloop"
    spans = receiver.spans()
    assert sorted(s.name for s in spans) == [
        "chat scripted",
        "chat scripted",
        "execute_tool add",
        "execute_tool divide",
        "invoke_agent",
    ]
    (root,) = receiver.named("invoke_agent")
    assert root.parent_span_id == b"" and root.kind == Span.SPAN_KIND_INTERNAL
    for span in spans:
        assert span.trace_id == root.trace_id
        if span is not root:
            assert span.parent_span_id == root.span_id
            assert root.start_time_unix_nano <= span.start_time_unix_nano
            assert span.end_time_unix_nano <= root.end_time_unix_nano
    assert attrs(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "bigloop",
        "gen_ai.request.model": "scripted",
        "gen_ai.conversation.id": result.run_id,
        "bigloop.run.id": result.run_id,
        "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": result.usage.completion_tokens,
        "bigloop.run.status": "ok",
        "bigloop.run.steps": 4,
    }
    assert root.status.code == Status.STATUS_CODE_OK

    model_steps = [s for s in result.steps if s.kind == "model"]
    chats = sorted(receiver.named("chat scripted"), key=lambda s: s.start_time_unix_nano)
    for chat, step in zip(chats, model_steps, strict=True):
        assert chat.kind == Span.SPAN_KIND_CLIENT
        assert attrs(chat) == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "bigloop",
            "gen_ai.request.model": "scripted",
            "gen_ai.response.model": "scripted",
            "gen_ai.usage.input_tokens": step.prompt_tokens,
            "gen_ai.usage.output_tokens": step.completion_tokens,
            "gen_ai.response.finish_reasons": ["tool_calls" if step.index == 0 else "stop"],
            "bigloop.step.index": step.index,
        }
        assert chat.start_time_unix_nano == int(step.started_at * 1e9)

    first_turn = model_steps[0].message
    assert first_turn is not None
    ids = {c.name: c.id for c in first_turn.tool_calls}
    (ok,) = receiver.named("execute_tool add")
    assert attrs(ok) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": ids["add"],
        "bigloop.step.index": 1,
    }
    assert ok.status.code == Status.STATUS_CODE_UNSET
    (failed,) = receiver.named("execute_tool divide")
    assert attrs(failed)["gen_ai.tool.call.id"] == ids["divide"]
    assert attrs(failed)["error.type"] == "tool_error"
    assert failed.status.code == Status.STATUS_CODE_ERROR
    # What the model and tools said stays out unless asked for.
    assert not any(k.startswith(("gen_ai.tool.call.a", "gen_ai.tool.call.r")) for k in attrs(ok))


def test_content_is_sent_only_when_asked_for(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces.db")
    result = Loop(ScriptedModel(SCRIPT), [add, divide], store=store).run_sync("2 + 3, and 1 / 0?")
    with otlp_receiver() as receiver:
        export_run(store, result.run_id, receiver.url + "/v1/traces", capture_content=True)
    (ok,) = receiver.named("execute_tool add")
    assert json.loads(attrs(ok)["gen_ai.tool.call.arguments"]) == {"a": 2, "b": 3}
    assert attrs(ok)["gen_ai.tool.call.result"] == "5.0"
    (root,) = receiver.named("invoke_agent")
    assert attrs(root)["bigloop.run.task"] == "2 + 3, and 1 / 0?"


def test_the_live_hook_sends_steps_while_the_run_goes_on(tmp_path: Path) -> None:
    """The second model turn waits until the receiver has the first turn's span: the
    steps reach the endpoint during the run, not after it."""
    with otlp_receiver() as receiver:
        seen_during_run: list[str] = []

        def model(messages: list[Message], tools: list[ToolSpec]) -> str:
            if len(messages) == 1:
                return calls(("add", {"a": 2, "b": 3}))
            deadline = time.monotonic() + 5
            while not receiver.named("execute_tool add") and time.monotonic() < deadline:
                time.sleep(0.02)
            seen_during_run.extend(s.name for s in receiver.spans())
            return json.dumps({"answer": "5"})

        loop = Loop(FunctionModel(model, name="fn"), [add], budget=Budget(max_steps=3))
        with OtelHook(receiver.url, flush_seconds=0.05) as hook:
            result = loop.run_sync("2 + 3?", on_step=hook)
            hook.end_run(result)
    assert "execute_tool add" in seen_during_run and "invoke_agent" not in seen_during_run
    names = sorted(s.name for s in receiver.spans())
    assert names == ["chat fn", "chat fn", "execute_tool add", "invoke_agent"]
    (root,) = receiver.named("invoke_agent")
    assert all(s.parent_span_id == root.span_id for s in receiver.spans() if s is not root)
    assert attrs(root)["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert attrs(root)["bigloop.run.status"] == "ok"


def test_the_live_hook_redacts_what_it_sends_as_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Live steps hold the real values (the loop needs them); the spans get them redacted:
    a declared secret, a secret-named argument, and an environment variable's secret."""
    monkeypatch.setenv("SHOP_API_KEY", "envsecret-4242-abcd")

    @tool
    def login(user: str, password: str) -> str:
        """Log a user in."""
        return f"session for {user}: token hunter2-prod-9 (key envsecret-4242-abcd)"

    script = [
        calls(("login", {"user": "ann", "password": "pa55-word-x"})),
        json.dumps({"answer": "Logged in with hunter2-prod-9."}),
    ]
    store = TraceStore(tmp_path / "traces.db")
    loop = Loop(ScriptedModel(script), [login], store=store, secrets=["hunter2-prod-9"])
    with otlp_receiver() as receiver:
        with OtelHook(
            receiver.url, capture_content=True, flush_seconds=0.05, redactor=store.redactor
        ) as hook:
            result = loop.run_sync("Log ann in; password hunter2-prod-9.", on_step=hook)
            hook.end_run(result)
    assert result.tool_steps[0].output.startswith("session for ann: token hunter2-prod-9")
    sent = " ".join(json.dumps(attrs(s)) for s in receiver.spans())
    for secret in ("hunter2-prod-9", "pa55-word-x", "envsecret-4242-abcd"):
        assert secret not in sent
    (call,) = receiver.named("execute_tool login")
    assert json.loads(attrs(call)["gen_ai.tool.call.arguments"]) == {
        "user": "ann",
        "password": "[REDACTED]",
    }
    assert attrs(call)["gen_ai.tool.call.result"] == (
        "session for ann: token [REDACTED] (key [REDACTED])"
    )
    (root,) = receiver.named("invoke_agent")
    assert attrs(root)["bigloop.run.task"] == "Log ann in; password [REDACTED]."


def test_the_live_hook_redacts_with_the_environment_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_API_KEY", "envsecret-4242-abcd")
    with otlp_receiver() as receiver, OtelHook(receiver.url, capture_content=True) as hook:
        assert hook.redactor.text("key envsecret-4242-abcd") == "key [REDACTED]"


def test_questions_to_the_user_are_events_and_failures_errors(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces.db")
    store.start_run("asked0000001", "Weather?", "m", {"base_url": "http://127.0.0.1:1/v1"})
    store.add_step(Step(run_id="asked0000001", index=0, kind="model", name="m", output="{}"))
    store.add_step(
        Step(
            run_id="asked0000001",
            index=1,
            kind="ask",
            name="weather",
            input={"city": None},
            output="Not called: waiting for the user's answer to: Which city?",
            error="unanswered",
        )
    )
    store.finish_run("asked0000001", "input_required", None, "Which city?")
    with otlp_receiver() as receiver:
        assert export_run(store, "asked0000001", receiver.url) == 2
    (root,) = receiver.named("invoke_agent")
    assert attrs(root)["gen_ai.provider.name"] == "openai"  # an OpenAI-compatible server
    assert attrs(root)["error.type"] == "input_required"
    assert root.status.code == Status.STATUS_CODE_ERROR and root.status.message == "Which city?"
    (event,) = root.events
    assert event.name == "bigloop.ask"
    assert attrs(event) == {
        "bigloop.step.index": 1,
        "bigloop.ask.for": "weather",
        "error.type": "unanswered",
    }


def test_the_endpoint_comes_from_the_flag_or_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert traces_endpoint(None) is None
    assert traces_endpoint("http://h:4318/") == "http://h:4318/v1/traces"
    assert traces_endpoint("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318")
    assert traces_endpoint(None) == "http://base:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://full:9/custom")
    assert traces_endpoint(None) == "http://full:9/custom"
    assert traces_endpoint("http://flag:1") == "http://flag:1/v1/traces"
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    with pytest.raises(UserError, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
        export_run(TraceStore(tmp_path / "t.db"), "x")


def test_an_endpoint_that_refuses_is_a_clear_error(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces.db")
    result = Loop(ScriptedModel(SCRIPT), [add, divide], store=store).run_sync("2 + 3?")
    with otlp_receiver() as receiver:
        url = receiver.url + "/wrong/path"
        with pytest.raises(UserError, match="did not accept the trace"):
            export_run(store, result.run_id, url, timeout=2)
