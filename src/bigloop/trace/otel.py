"""Runs as OpenTelemetry spans, following the GenAI semantic conventions, sent to any
OTLP/HTTP endpoint. Opt-in; needs the `otel` extra.

One trace per run::

    invoke_agent                  the run: model, run id, token totals, status
    ├── chat {model}              a model turn: tokens, routing, the model that answered
    ├── execute_tool {tool}       a tool call: tool name, call id, error
    └── ...                       questions put to the user are events of the run's span

`export_run(store, run_id)` sends a recorded run from the trace store. `OtelHook` is an
`on_step` callback (`Loop.run(task, on_step=hook)`) that sends each step as it completes;
the run's own span follows at `hook.end_run(result)`.

The endpoint is a collector's base URL (`http://127.0.0.1:4318`, to which `/v1/traces`
is added) or its full traces URL; without one, `$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
`$OTEL_EXPORTER_OTLP_ENDPOINT` as the OpenTelemetry SDKs read them.

What the model and tools said (prompts, replies, arguments, results, the task) is not
sent unless `capture_content=True`: trace backends are often shared. When it is, secrets
are redacted first: `export_run` reads the store, which never holds them; `OtelHook` sees
live steps and redacts them with its `redactor` (the CLI passes the trace store's).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from bigloop._errors import UserError
from bigloop.trace.records import RunResult, Step, message_to_dict
from bigloop.trace.redact import Redactor
from bigloop.trace.store import TraceStore

TRACES_PATH = "/v1/traces"
AGENT = "invoke_agent"
SCOPE = "bigloop"


def traces_endpoint(url: str | None = None) -> str | None:
    """The OTLP/HTTP traces URL for `url`, or from the environment; None when neither
    gives one."""
    if url:
        return _with_path(url)
    if full := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return full
    if base := os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return _with_path(base)
    return None


def _with_path(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith(TRACES_PATH) else url + TRACES_PATH


def _required_endpoint(url: str | None) -> str:
    endpoint = traces_endpoint(url)
    if endpoint is None:
        raise UserError(
            "No OTLP endpoint: pass one (e.g. http://127.0.0.1:4318) or set "
            "OTEL_EXPORTER_OTLP_ENDPOINT."
        )
    return endpoint


def provider_of(config: Mapping[str, Any]) -> str:
    """`gen_ai.provider.name` for a run's stored config: "openai" for a model behind an
    OpenAI-compatible API, else "bigloop" (a model run in process)."""
    return "openai" if config.get("base_url") else "bigloop"


class _Spans:
    """Makes a run's spans from its steps, with explicit times from the trace."""

    def __init__(self, provider: TracerProvider, *, capture_content: bool, gen_ai: str) -> None:
        self.tracer = provider.get_tracer(SCOPE)
        self.capture_content = capture_content
        self.gen_ai = gen_ai

    def root(self, run_id: str, model: str, started_at: float, task: str | None) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": AGENT,
            "gen_ai.provider.name": self.gen_ai,
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": run_id,
            "bigloop.run.id": run_id,
        }
        if self.capture_content and task is not None:
            attributes["bigloop.run.task"] = task
        return self.tracer.start_span(
            AGENT, kind=SpanKind.INTERNAL, attributes=attributes, start_time=_ns(started_at)
        )

    def step(self, root: Span, step: Step) -> None:
        if step.kind == "ask":
            self._ask(root, step)
            return
        context = trace.set_span_in_context(root)
        name, kind, attributes = self._model(step) if step.kind == "model" else self._tool(step)
        attributes["bigloop.step.index"] = step.index
        start = _ns(step.started_at)
        span = self.tracer.start_span(
            name, context=context, kind=kind, attributes=attributes, start_time=start
        )
        if step.error:
            span.set_attribute("error.type", step.error)
            span.set_status(Status(StatusCode.ERROR, step.error))
        span.end(end_time=start + int(step.seconds * 1e9))

    def _model(self, step: Step) -> tuple[str, SpanKind, dict[str, Any]]:
        info = step.input if isinstance(step.input, dict) else {}
        calls = step.message.tool_calls if step.message is not None else []
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.gen_ai,
            "gen_ai.request.model": step.name,
            "gen_ai.response.model": info.get("answered_by") or step.name,
            "gen_ai.usage.input_tokens": step.prompt_tokens,
            "gen_ai.usage.output_tokens": step.completion_tokens,
            "gen_ai.response.finish_reasons": ["tool_calls" if calls else "stop"],
        }
        if role := info.get("role"):
            attributes["bigloop.step.role"] = str(role)
        if answered_by := info.get("answered_by"):
            attributes["bigloop.answered_by"] = str(answered_by)
        if (route := info.get("route")) is not None:
            attributes["bigloop.route"] = _json(route)
        if self.capture_content and step.message is not None:
            attributes["gen_ai.output.messages"] = _json([message_to_dict(step.message)])
        return f"chat {step.name}", SpanKind.CLIENT, attributes

    def _tool(self, step: Step) -> tuple[str, SpanKind, dict[str, Any]]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": step.name,
            "gen_ai.tool.type": "function",
        }
        if step.message is not None and step.message.tool_call_id:
            attributes["gen_ai.tool.call.id"] = step.message.tool_call_id
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _json(step.input)
            attributes["gen_ai.tool.call.result"] = _text(step.output)
        return f"execute_tool {step.name}", SpanKind.INTERNAL, attributes

    def _ask(self, root: Span, step: Step) -> None:
        attributes: dict[str, Any] = {
            "bigloop.step.index": step.index,
            "bigloop.ask.for": step.name,
        }
        if step.error:
            attributes["error.type"] = step.error
        if self.capture_content:
            attributes["bigloop.ask.input"] = _json(step.input)
            attributes["bigloop.ask.output"] = _text(step.output)
        root.add_event("bigloop.ask", attributes=attributes, timestamp=_ns(step.started_at))

    def end_root(
        self,
        root: Span,
        *,
        status: str,
        error: str | None,
        usage: tuple[int, int],
        steps: int,
        ended_at: float,
    ) -> None:
        root.set_attribute("gen_ai.usage.input_tokens", usage[0])
        root.set_attribute("gen_ai.usage.output_tokens", usage[1])
        root.set_attribute("bigloop.run.status", status)
        root.set_attribute("bigloop.run.steps", steps)
        if status == "ok":
            root.set_status(Status(StatusCode.OK))
        elif status != "running":
            root.set_attribute("error.type", status)
            root.set_status(Status(StatusCode.ERROR, error or status))
        root.end(end_time=_ns(ended_at))


class _Collected(SpanExporter):
    """Keeps the spans it is given (so `export_run` can send them in one request and
    report whether the endpoint took them)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def export_run(
    store: TraceStore,
    run_id: str,
    endpoint: str | None = None,
    *,
    capture_content: bool = False,
    timeout: float = 10.0,
) -> int:
    """Send a recorded run (a unique prefix of its id works) as one trace; returns the
    number of spans sent.

    Raises:
        UserError: no such run, no endpoint, or the endpoint did not accept the spans.
    """
    url = _required_endpoint(endpoint)
    summary = store.run(run_id)
    steps = store.steps(summary.run_id)
    collected = _Collected()
    provider = TracerProvider(resource=_resource())
    provider.add_span_processor(SimpleSpanProcessor(collected))
    spans = _Spans(provider, capture_content=capture_content, gen_ai=provider_of(summary.config))
    root = spans.root(summary.run_id, summary.model, summary.started_at, summary.task)
    for step in steps:
        spans.step(root, step)
    last = max((s.started_at + s.seconds for s in steps), default=summary.started_at)
    spans.end_root(
        root,
        status=summary.status,
        error=summary.error,
        usage=(summary.prompt_tokens, summary.completion_tokens),
        steps=len(steps),
        ended_at=summary.ended_at if summary.ended_at is not None else last,
    )
    provider.shutdown()
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
    try:
        result = exporter.export(collected.spans)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
    if result is not SpanExportResult.SUCCESS:
        raise UserError(
            f"The OTLP endpoint {url} did not accept the trace of run {summary.run_id}: is an "
            "OTLP/HTTP collector listening there?"
        )
    return len(collected.spans)


class OtelHook:
    """An `on_step` callback that sends each step as a span as soon as it completes.

    A run's span starts with its first step and is sent at `end_run(result)`; `close()`
    (or leaving a `with` block) ends the spans of runs still open and sends what is left.
    Export happens in a background thread, every `flush_seconds`; a failing endpoint is
    logged by the OpenTelemetry SDK and never stops a run.

    Args:
        endpoint: a collector's base or traces URL (default: from the environment).
        provider: `gen_ai.provider.name` ("openai" for OpenAI-compatible servers).
        capture_content: also send prompts, replies, arguments, results and the task,
            redacted by `redactor`.
        redactor: what never leaves the process (default: `Redactor.from_env()`; pass
            the trace store's, `loop.store.redactor`, to hide the loop's `secrets` too).
        exporter: send spans elsewhere than OTLP/HTTP (tests, other protocols).
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        provider: str = "bigloop",
        capture_content: bool = False,
        timeout: float = 10.0,
        flush_seconds: float = 1.0,
        redactor: Redactor | None = None,
        exporter: SpanExporter | None = None,
    ) -> None:
        if exporter is None:
            exporter = OTLPSpanExporter(endpoint=_required_endpoint(endpoint), timeout=timeout)
        self._provider = TracerProvider(resource=_resource())
        processor = BatchSpanProcessor(exporter, schedule_delay_millis=int(flush_seconds * 1000))
        self._provider.add_span_processor(processor)
        self._spans = _Spans(self._provider, capture_content=capture_content, gen_ai=provider)
        self._roots: dict[str, tuple[Span, int, int, int]] = {}
        self._lock = threading.Lock()
        self.redactor = redactor if redactor is not None else Redactor.from_env()

    def __call__(self, step: Step) -> None:
        if self._spans.capture_content:
            step = self.redactor.step(step)
        with self._lock:
            root, prompt, completion, count = self._open(step.run_id, step.name, step.started_at)
            self._spans.step(root, step)
            self._roots[step.run_id] = (
                root,
                prompt + step.prompt_tokens,
                completion + step.completion_tokens,
                count + 1,
            )

    def _open(self, run_id: str, model: str, started_at: float) -> tuple[Span, int, int, int]:
        if run_id not in self._roots:
            root = self._spans.root(run_id, model, min(started_at, time.time()), None)
            self._roots[run_id] = (root, 0, 0, 0)
        return self._roots[run_id]

    def end_run(self, result: RunResult) -> None:
        """End the run's span with its outcome and totals, and send it."""
        with self._lock:
            if result.run_id not in self._roots:
                model = next((s.name for s in result.steps if s.kind == "model"), "")
                self._open(result.run_id, model, time.time())
            root = self._roots.pop(result.run_id)[0]
            if self._spans.capture_content:
                root.set_attribute("bigloop.run.task", self.redactor.text(result.task))
            self._spans.end_root(
                root,
                status=result.status,
                error=None if result.error is None else self.redactor.text(result.error),
                usage=(result.usage.prompt_tokens, result.usage.completion_tokens),
                steps=len(result.steps),
                ended_at=time.time(),
            )

    def close(self) -> None:
        """End the spans of runs still open (status unset) and send every span."""
        with self._lock:
            for root, prompt, completion, count in self._roots.values():
                self._spans.end_root(
                    root,
                    status="running",
                    error=None,
                    usage=(prompt, completion),
                    steps=count,
                    ended_at=time.time(),
                )
            self._roots.clear()
        self._provider.shutdown()

    def __enter__(self) -> OtelHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _resource() -> Resource:
    """The SDK's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); service "bigloop"
    unless those name one."""
    detected = Resource.create()
    if str(detected.attributes.get("service.name", "")).startswith("unknown_service"):
        return detected.merge(Resource({"service.name": SCOPE}))
    return detected


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)
