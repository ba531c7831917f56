"""`bigloop serve openai`: any `ChatModel` behind an OpenAI-compatible chat endpoint.

Served by a plain server, a small local model writes its calls as JSON text, and other
frameworks (LangGraph, pydantic-ai, smolagents) take that text for the answer. Here every
request goes through `ChatModel.chat` — for the embedded model, decoding under a grammar
built from the offered tools — and the calls go back as structured `tool_calls`, plain
text when no call fits, or SSE chunks when `stream` is set.

A model that only repeats calls whose results are already in the conversation (small
models do, and a client without the loop's repeat check goes round until its turn limit)
is asked once more, without tools, to answer from those results; that answer is returned.

`tool_choice="required"` (or a named function) narrows the decoding: the model is shown
bigloop's tool prompt and asked for structured output whose schema allows calls only
(`{"tool_calls": [...]}`, no `{"answer": ...}` branch), so the embedded model's grammar
cannot produce an answer. A model that ignores the schema and still answers is returned
as it answered.

Given a trace store, each completion is recorded as a run of one model step (its config
says `served: openai` and which replica answered), so that `bigloop trace list` and
`bigloop ui` show what every server process — or every Ray Serve replica
(`bigloop.protocols.openai_replicas`) — answered.

Errors come back in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`:
400 for a request this server cannot serve, 503 when the model is unavailable.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from bigloop._errors import BigloopError, InvalidToolSchema, RunFailure
from bigloop.atoms.models.base import (
    CallContinuation,
    ChatModel,
    Message,
    ModelResponse,
    Role,
    ToolSpec,
)
from bigloop.atoms.models.local import call_schema
from bigloop.atoms.models.parse import to_response
from bigloop.atoms.models.prompts import ANSWER_NOW, to_plain_chat
from bigloop.parts import PlannerRules, Policies
from bigloop.planners.rules import Answered, Retry
from bigloop.protocols.guard import LOOPBACK, Guard, allowed_hosts_for, require_token
from bigloop.protocols.openai_request import ChatTurn, InvalidRequest, read_request
from bigloop.runtime.call import call_key
from bigloop.trace.records import Step
from bigloop.trace.redact import Redactor
from bigloop.trace.store import TraceStore


def create_app(
    model: ChatModel,
    *,
    off: Sequence[str] = (),
    allowed_hosts: Sequence[str] = LOOPBACK,
    token: str | None = None,
    store: TraceStore | None = None,
    replica: str | None = None,
) -> FastAPI:
    """A FastAPI app serving `model` at `GET /v1/models` and `POST /v1/chat/completions`.

    Calls to the model are not serialized here: the embedded model serializes its own
    (one llama.cpp context per process), and a remote model may take several at once.

    Args:
        off: policies to switch off (`bigloop.parts`); the server applies the
            planner rules `more_calls` and `answer_from_results` and the answer rules
            (`bigloop.planners.rules`) to each reply.
        allowed_hosts: the host names requests may be addressed to (`Guard`: Host and
            Origin checked, bodies capped).
        token: the bearer token requests must carry (None: none).
        store: where each completion is recorded as a run (None: nowhere).
        replica: which process answers, for the trace (default: HOST:PID).
    """
    rules = Policies.build(off, clarify="off").rules
    app = FastAPI(title="bigloop", summary=f"{model.name}, OpenAI-compatible", version="1")
    app.add_middleware(Guard, allowed_hosts=allowed_hosts, token=token)
    started = int(time.time())
    replica = replica or f"{socket.gethostname()}:{os.getpid()}"

    @app.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        card = {"id": model.name, "object": "model", "created": started, "owned_by": "bigloop"}
        return {"object": "list", "data": [card]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> JSONResponse | StreamingResponse:
        try:
            turn = read_request(await _json_body(request))
            began = time.time()
            response = await reply(model, turn, rules)
        except InvalidRequest as e:
            return _error(400, str(e), "invalid_request_error", e.param)
        except InvalidToolSchema as e:
            return _error(400, str(e), "invalid_request_error", "tools")
        except RunFailure as e:
            return _error(503, str(e), "server_error", code="model_unavailable")
        except BigloopError as e:  # the server's own setup, e.g. missing weights
            return _error(500, str(e), "server_error")
        completion = _completion(response, turn, model.name)
        if store is not None:
            record_completion(store, turn, completion, response, model.name, began, replica)
        if turn.stream:
            return StreamingResponse(
                _chunks(completion, include_usage=turn.include_usage),
                media_type="text/event-stream",
            )
        return JSONResponse(completion)

    return app


async def reply(
    model: ChatModel, turn: ChatTurn, rules: PlannerRules | None = None
) -> ModelResponse:
    """The model's reply to `turn`, under the planner `rules` (default: all on): calls that
    only repeat earlier ones are answered from the results (`answer_from_results`), and
    calls are extended by `MoreCalls` when the client allows several and the model can
    continue its reply (`more_calls`). An answer an answer rule sends back with a note is
    asked for once more, with the note (`_judged`)."""
    rules = rules or PlannerRules()
    response = await _first_reply(model, turn)
    if not (response.tool_calls or response.error or turn.require_call) and turn.tools:
        return await _judged(model, turn, rules, response)
    repeats = response.tool_calls and _only_repeats(response, turn.messages)
    if repeats and rules.answer_from_results and not turn.require_call:
        return await _answer_from_results(model, turn, response)
    more = rules.more_calls
    if (
        more
        and response.tool_calls
        and not turn.single_call
        and isinstance(model, CallContinuation)
    ):
        user = "\n".join(m.content for m in turn.messages if m.role == "user").lower()
        next_call = functools.partial(model.next_call, turn.messages, turn.tools)
        await more.extend(response, user, lambda calls, stop: next_call(calls, turn.settings, stop))
    return response


async def _judged(
    model: ChatModel, turn: ChatTurn, rules: PlannerRules, answer: ModelResponse
) -> ModelResponse:
    """`answer`, unless an answer rule sends it back with a note to the model (a number
    from memory while tools were offered, an answer one step short…): then the model's
    next reply to the conversation with that note, a call or an answer. The note is the
    server's, never shown to the client; a rule that would end a loop run, or make calls
    for the client, leaves the answer as it is."""
    verdict = rules.answer.fresh().judge(Answered.of_chat(turn.messages, turn.tools, answer.text))
    if not isinstance(verdict, Retry) or verdict.note is None or not verdict.tools:
        return answer
    note = Message(role="user", content=verdict.note, origin="loop")
    said = Message(role="assistant", content=answer.text)
    again = await model.chat([*turn.messages, said, note], turn.tools, turn.settings)
    if again.error or not (again.tool_calls or again.text.strip()):
        return answer
    again.usage.add(answer.usage)
    return again


def _only_repeats(response: ModelResponse, messages: list[Message]) -> bool:
    """Whether every call of `response` was made before and its result is in `messages`."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    made = {
        call_key(c)
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
        if c.id in answered
    }
    return all(call_key(c) in made for c in response.tool_calls)


async def _answer_from_results(
    model: ChatModel, turn: ChatTurn, repeated: ModelResponse
) -> ModelResponse:
    """The model's answer from the results it has, asked for without tools; the repeated
    calls when it still gives none."""
    task = next((m.content for m in turn.messages if m.role == "user"), "")
    note = Message(role="user", content=ANSWER_NOW.format(task=task), origin="loop")
    answer = await model.chat([*turn.messages, note], [], turn.settings)
    if answer.error or answer.tool_calls or not answer.text.strip():
        return repeated
    answer.usage.add(repeated.usage)
    return answer


async def _first_reply(model: ChatModel, turn: ChatTurn) -> ModelResponse:
    """A required call is asked for under a calls-only schema."""
    if not turn.require_call:
        return await model.chat(turn.messages, turn.tools, turn.settings)
    plain = [
        Message(role=cast(Role, m["role"]), content=m["content"])
        for m in to_plain_chat(turn.messages, turn.tools)
    ]
    settings = replace(turn.settings, response_schema=calls_only_schema(turn.tools))
    response = await model.chat(plain, turn.tools, settings)
    if response.tool_calls:
        return response
    parsed = to_response(response.text, itertools.count(1))
    parsed.usage = response.usage
    return parsed if parsed.tool_calls else response


def record_completion(
    store: TraceStore,
    turn: ChatTurn,
    completion: dict[str, Any],
    response: ModelResponse,
    model_name: str,
    began: float,
    replica: str,
) -> None:
    """Record one served completion in `store`: a run whose task is the last user turn,
    with one model step (what the client got back) and the completion's id as its run id."""
    run_id = completion["id"]
    task = next((m.content for m in reversed(turn.messages) if m.role == "user"), "")
    config = {"served": "openai", "replica": replica, "tools": [t.name for t in turn.tools]}
    store.start_run(run_id, task, model_name, config)
    sent = completion["choices"][0]["message"]
    calls = [  # the ids the client got, the calls as the model made them
        replace(call, id=c["id"])
        for c, call in zip(sent.get("tool_calls") or [], response.tool_calls, strict=False)
    ]
    message = Message(role="assistant", content=sent["content"] or "", tool_calls=calls)
    step = Step(
        run_id=run_id,
        index=0,
        kind="model",
        name=model_name,
        input={"messages": len(turn.messages), "tools": len(turn.tools), "replica": replica},
        output=message.content or [{"name": c.name, "arguments": c.arguments} for c in calls],
        error="malformed_reply" if response.error else None,
        seconds=time.time() - began,
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens,
        message=message,
        started_at=began,
    )
    store.add_step(step)
    answer = message.content or json.dumps(step.output)
    store.finish_run(run_id, "ok", answer, None)


def calls_only_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """The local model's reply schema (`call_schema`) without its `{"answer": ...}` branch."""
    schema = call_schema(tools)
    return next(s for s in schema["anyOf"] if "tool_calls" in s["properties"])


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InvalidRequest(f"The body is not JSON: {e}.") from None
    except RecursionError:
        raise InvalidRequest("The body is JSON nested too deeply to read.") from None


def _completion(response: ModelResponse, turn: ChatTurn, model_name: str) -> dict[str, Any]:
    """A `chat.completion` object for `response`."""
    calls = response.tool_calls[:1] if turn.single_call else response.tool_calls
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c.name, "arguments": _json_text(c.arguments)},
            }
            for c in calls
        ]
        finish = "tool_calls"
    else:
        message["content"] = _cut(response.raw if response.error else response.text, turn.stop)
        ran_out = response.usage.completion_tokens >= turn.settings.max_tokens
        finish = "length" if ran_out else "stop"
    usage = response.usage
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


async def _chunks(completion: dict[str, Any], *, include_usage: bool) -> AsyncIterator[str]:
    """The completion as server-sent `chat.completion.chunk` events: the role, the content
    or one delta per tool call (its arguments whole), the finish reason, the usage when
    asked for, then `[DONE]`."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    choice = completion["choices"][0]
    message = choice["message"]

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        chunk = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
        if include_usage:
            chunk.setdefault("usage", None)
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    def delta(delta: dict[str, Any], finish: str | None = None) -> str:
        return event([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    yield delta({"role": "assistant", "content": ""})
    for i, call in enumerate(message.get("tool_calls", [])):
        yield delta({"tool_calls": [{"index": i, **call}]})
    if message["content"]:
        yield delta({"content": message["content"]})
    yield delta({}, choice["finish_reason"])
    if include_usage:
        yield event([], usage=completion["usage"])
    yield "data: [DONE]\n\n"


def _json_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _cut(text: str, stop: list[str]) -> str:
    """`text` up to the first stop sequence."""
    ends = [i for s in stop if s and (i := text.find(s)) >= 0]
    return text[: min(ends)] if ends else text


_REDACT = Redactor()


def _error(
    status: int, message: str, kind: str, param: str | None = None, code: str | None = None
) -> JSONResponse:
    """An OpenAI-style error; its message redacted (an upstream server's error may echo
    the key it was sent: "Incorrect API key provided: sk-…")."""
    message = _REDACT.text(message)
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status)


def serve_openai(
    model_name: str = "embedded",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    base_url: str | None = None,
    off: Sequence[str] = (),
    token: str | None = None,
    trace_db: str | None = None,
) -> None:
    """Serve a model at `http://HOST:PORT/v1` until interrupted (`bigloop serve openai`).

    Args:
        model_name: "embedded", a .gguf file, or a server's model name with `base_url`.
        host: the address to bind; the default answers this machine only. "0.0.0.0"
            answers the whole network, and needs a `token`.
        port: the TCP port.
        base_url: an OpenAI-compatible server to relay to, instead of a local model.
        off: policies to switch off (`create_app`).
        token: the bearer token clients must send; required beyond loopback.
        trace_db: where each completion is recorded (a file or a postgresql:// URL;
            None: not recorded).

    Raises:
        UserError: `host` is not loopback and there is no `token`.
    """
    import uvicorn

    require_token(host, token)

    from bigloop.atoms.models.local import LocalModel
    from bigloop.atoms.models.spec import ModelSpec

    model = ModelSpec(name=model_name, base_url=base_url).build()
    if isinstance(model, LocalModel):
        model.llama()  # load the weights now, not during the first request
    store = TraceStore(trace_db) if trace_db else None
    app = create_app(
        model, off=off, allowed_hosts=allowed_hosts_for(host), token=token, store=store
    )
    uvicorn.run(app, host=host, port=port, log_level="info")
