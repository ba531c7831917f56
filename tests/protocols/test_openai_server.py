"""`bigloop serve openai` through the `openai` SDK and the peer frameworks, against a real
uvicorn server on loopback serving scripted models."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import uvicorn
from fastapi import FastAPI
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionToolParam

from bigloop import (
    ChatModel,
    FunctionModel,
    Message,
    ModelResponse,
    ModelSettings,
    ScriptedModel,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.models.prompts import to_plain_chat
from bigloop.protocols import openai_server
from bigloop.protocols.openai_server import calls_only_schema, create_app
from tests import loopback

ROOT = Path(__file__).resolve().parents[2]
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"

WEATHER: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone.",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}
WEATHER_SPEC = ToolSpec(
    name="get_weather",
    description="Current weather of a city.",
    parameters=WEATHER["function"]["parameters"],
)
TIME_SPEC = ToolSpec(
    name="get_time",
    description="Current time in a time zone.",
    parameters=TIME["function"]["parameters"],
)
ASK = Message(role="user", content="Weather in Paris?")


@dataclass(kw_only=True)
class Seen:
    messages: list[Message]
    tools: list[ToolSpec]
    settings: ModelSettings


def weather_model(seen: list[Seen]) -> FunctionModel:
    """Calls the first tool offered for Paris; answers from a tool result once it has one."""

    def fn(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(Seen(messages=messages, tools=tools, settings=settings))
        results = [m.content for m in messages if m.role == "tool"]
        if results:
            return json.dumps({"answer": f"It is {results[-1]} in Paris."})
        if tools:
            call = {"name": tools[0].name, "arguments": {"city": "Paris"}}
            return json.dumps({"tool_calls": [call]})
        return json.dumps({"answer": "Hello!"})

    return FunctionModel(fn, name="weather")


@contextmanager
def serving(model: ChatModel) -> Iterator[str]:
    """`model` served by uvicorn on a free loopback port, in a thread; its base URL."""
    with loopback.serving(lambda _: create_app(model), lifespan="off") as url:
        yield f"{url}v1"


@pytest.fixture
def serve() -> Iterator[Callable[[ChatModel], str]]:
    with ExitStack() as stack:
        yield lambda model: stack.enter_context(serving(model))


@pytest.fixture
def client(serve: Callable[[ChatModel], str]) -> Iterator[Callable[[ChatModel], openai.OpenAI]]:
    with ExitStack() as stack:

        def connect(model: ChatModel) -> openai.OpenAI:
            sdk = openai.OpenAI(base_url=serve(model), api_key="unused", max_retries=0)
            return stack.enter_context(sdk)

        yield connect


def function_call(message: Any) -> ChatCompletionMessageFunctionToolCall:
    """The one function call of an SDK message."""
    assert message.tool_calls is not None and len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    return call


def test_models_lists_the_one_model(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    models = client(ScriptedModel([], name="qwen-local")).models.list()
    assert [(m.id, m.object, m.owned_by) for m in models.data] == [
        ("qwen-local", "model", "bigloop")
    ]


def test_plain_answer(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    seen: list[Seen] = []
    sdk = client(weather_model(seen))
    out = sdk.chat.completions.create(
        model="anything",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    )
    assert out.object == "chat.completion" and out.model == "weather"
    assert out.choices[0].finish_reason == "stop"
    assert out.choices[0].message.model_dump(exclude_none=True) == {
        "role": "assistant",
        "content": "Hello!",
    }
    assert out.usage is not None
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (3, 2)
    assert out.usage.total_tokens == 5
    assert seen == [
        Seen(
            messages=[
                Message(role="system", content="Be brief."),
                Message(role="user", content="Hi"),
            ],
            tools=[],
            settings=ModelSettings(),
        )
    ]


def test_tool_call_round_trip(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    seen: list[Seen] = []
    sdk = client(weather_model(seen))
    first = sdk.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER]
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = function_call(choice.message)
    assert call.id.startswith("call_") and call.type == "function"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )

    second = sdk.chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": call.function.arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": "21 °C"},
        ],
        tools=[WEATHER],
    )
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It is 21 °C in Paris."
    assert second.choices[0].message.tool_calls is None
    assert seen[1].tools == [WEATHER_SPEC]
    assert seen[1].messages == [
        ASK,
        Message(
            role="assistant",
            tool_calls=[ToolCall(id=call.id, name="get_weather", arguments={"city": "Paris"})],
        ),
        Message(role="tool", content="21 °C", tool_call_id=call.id),
    ]


def test_content_parts_developer_and_legacy_function_roles(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    seen: list[Seen] = []
    sdk = client(weather_model(seen))
    sdk.chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": [{"type": "text", "text": "You are an agent."}]},
            {"role": "developer", "content": "Be brief."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "New task:"}, {"type": "text", "text": "Hi"}],
            },
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
            },
            {"role": "function", "name": "get_weather", "content": "30 °C"},
        ],
    )
    assert seen[0].messages == [
        Message(role="system", content="You are an agent."),
        Message(role="system", content="Be brief."),
        Message(role="user", content="New task:\nHi"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="legacy_3", name="get_weather", arguments={"city": "Rome"})],
        ),
        Message(role="tool", content="30 °C", name="get_weather"),
    ]


def test_tool_choice_none_offers_no_tools(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    seen: list[Seen] = []
    out = client(weather_model(seen)).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], tools=[WEATHER], tool_choice="none"
    )
    assert out.choices[0].message.content == "Hello!"
    assert seen[0].tools == []


def test_tool_choice_forced_function_offers_it_alone_and_allows_calls_only(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    seen: list[Seen] = []
    out = client(weather_model(seen)).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_time"}},
    )
    assert function_call(out.choices[0].message).function.name == "get_time"
    assert seen[0].tools == [TIME_SPEC]
    # Narrowed: bigloop's tool prompt, and structured output whose schema has no answer.
    schema = seen[0].settings.response_schema
    assert schema == calls_only_schema([TIME_SPEC])
    assert schema is not None and schema["required"] == ["tool_calls"]
    plain = to_plain_chat([ASK], [TIME_SPEC])
    assert [(m.role, m.content) for m in seen[0].messages] == [
        (m["role"], m["content"]) for m in plain
    ]


def test_tool_choice_required_narrows_to_the_calls_of_every_tool(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    seen: list[Seen] = []
    out = client(weather_model(seen)).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER, TIME],
        tool_choice="required",
    )
    assert out.choices[0].finish_reason == "tool_calls"
    assert function_call(out.choices[0].message).function.name == "get_weather"
    assert seen[0].settings.response_schema == calls_only_schema([WEATHER_SPEC, TIME_SPEC])


def test_tool_choice_required_returns_an_answer_from_a_model_that_ignores_the_schema(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    out = client(ScriptedModel(["No tool needed: 42."])).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "?"}],
        tools=[WEATHER],
        tool_choice="required",
    )
    assert out.choices[0].message.content == "No tool needed: 42."
    assert out.choices[0].finish_reason == "stop"


def test_stream_text(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    sdk = client(weather_model([]))
    with sdk.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "Hi"}]
    ) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    assert events[:2] == ["chunk", "content.delta"] and "content.done" in events
    assert final.choices[0].message.content == "Hello!"
    assert final.choices[0].finish_reason == "stop"

    chunks = list(
        sdk.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert [c.choices[0].delta.content for c in chunks[:-1]] == ["", "Hello!", None]
    assert [c.choices[0].finish_reason for c in chunks[:-1]] == [None, None, "stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 3


def test_stream_tool_calls(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    sdk = client(weather_model([]))
    with sdk.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "Weather?"}], tools=[WEATHER]
    ) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "tool_calls.function.arguments.done" in events
    assert final.choices[0].finish_reason == "tool_calls"
    call = function_call(final.choices[0].message)
    assert call.id.startswith("call_")
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )


def test_n_above_one_is_a_400(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client(weather_model([])).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], n=2
        )
    assert e.value.status_code == 400
    assert e.value.body == {
        "message": "Only n=1 is supported: this server returns one choice.",
        "type": "invalid_request_error",
        "param": "n",
        "code": None,
    }


def test_model_unavailable_is_a_503(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    with pytest.raises(openai.InternalServerError) as e:
        client(ScriptedModel([], name="empty")).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}]
        )
    assert e.value.status_code == 503
    assert e.value.body == {
        "message": "empty: the script has no more replies.",
        "type": "server_error",
        "param": None,
        "code": "model_unavailable",
    }


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "robot", "content": "Hi"}]}, "messages[0].role"),
        ({"messages": []}, "messages"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages[0].content",
        ),
        (
            {
                "messages": [{"role": "user", "content": "Hi"}],
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "function": {"name": "nope"}},
            },
            "tool_choice",
        ),
        (
            {"messages": [{"role": "user", "content": "Hi"}], "tool_choice": "required"},
            "tool_choice",
        ),
        ({"messages": [{"role": "user", "content": "Hi"}], "temperature": 9}, "temperature"),
    ],
)
def test_bad_requests_are_400s_naming_the_param(
    serve: Callable[[ChatModel], str], body: dict[str, Any], param: str
) -> None:
    reply = httpx.post(f"{serve(weather_model([]))}/chat/completions", json=body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert error["message"].startswith(param)


def test_a_body_that_is_not_json_is_a_400(serve: Callable[[ChatModel], str]) -> None:
    reply = httpx.post(f"{serve(weather_model([]))}/chat/completions", content=b"{not json")
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith("The body is not JSON")


def test_settings_response_format_and_stop(client: Callable[[ChatModel], openai.OpenAI]) -> None:
    seen: list[Seen] = []
    sdk = client(weather_model(seen))
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    sdk.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Hi"}],
        temperature=0.7,
        max_completion_tokens=64,
        seed=7,
        response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}},
    )
    sdk.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Hi"}],
        max_tokens=32,
        response_format={"type": "json_object"},
    )
    out = sdk.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], stop=["llo"]
    )
    assert [s.settings for s in seen] == [
        ModelSettings(temperature=0.7, max_tokens=64, seed=7, response_schema=schema),
        ModelSettings(max_tokens=32, response_schema={"type": "object"}),
        ModelSettings(),
    ]
    assert out.choices[0].message.content == "He"


def test_finish_reason_length_when_the_model_used_every_token(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    full = ModelResponse(text="It was a dark", usage=Usage(completion_tokens=4))
    out = client(ScriptedModel([full])).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "A story"}], max_tokens=4
    )
    assert out.choices[0].finish_reason == "length"


def test_parallel_tool_calls_false_keeps_the_first_call(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    calls = [{"name": "get_weather", "arguments": {"city": c}} for c in ("Oslo", "Rome")]
    sdk = client(ScriptedModel([json.dumps({"tool_calls": calls})] * 2))
    ask: Any = {"model": "m", "messages": [{"role": "user", "content": "?"}], "tools": [WEATHER]}
    assert len(sdk.chat.completions.create(**ask).choices[0].message.tool_calls or []) == 2
    one = sdk.chat.completions.create(**ask, parallel_tool_calls=False)
    assert json.loads(function_call(one.choices[0].message).function.arguments) == {"city": "Oslo"}


def test_concurrent_requests_all_succeed(serve: Callable[[ChatModel], str]) -> None:
    async def slow_echo(messages: list[Message], tools: list[ToolSpec]) -> str:
        await asyncio.sleep(0.05)
        return json.dumps({"answer": messages[-1].content})

    base_url = serve(FunctionModel(slow_echo))
    answers: dict[int, str | None] = {}

    def ask(i: int) -> None:
        with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as sdk:
            out = sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"n{i}"}]
            )
            answers[i] = out.choices[0].message.content

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert answers == {i: f"n{i}" for i in range(6)}


def test_serve_openai_builds_the_model_and_binds_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: dict[str, Any] = {}

    def run(app: FastAPI, *, host: str, port: int, log_level: str) -> None:
        ran.update(app=app, host=host, port=port)

    monkeypatch.setattr(uvicorn, "run", run)
    openai_server.serve_openai("qwen", port=8123, base_url="http://127.0.0.1:9/v1")
    assert (ran["host"], ran["port"]) == ("127.0.0.1", 8123)
    from starlette.testclient import TestClient

    with TestClient(ran["app"], base_url="http://127.0.0.1") as http:
        assert http.get("/v1/models").json()["data"][0]["id"] == "qwen"


def peer_model(messages: list[Message], tools: list[ToolSpec]) -> str:
    """A tool call on the first turn; then the answer, from the last message (the tool's
    result): through `final_answer` when offered (smolagents), else as text."""
    if not any(m.role in ("assistant", "tool") for m in messages):
        tool = next(t for t in tools if t.name != "final_answer")
        props = tool.parameters.get("properties", {})
        args = {k: "Paris" for k in tool.parameters.get("required", props)}
        return json.dumps({"tool_calls": [{"name": tool.name, "arguments": args}]})
    result = messages[-1].content
    if any(t.name == "final_answer" for t in tools):
        return json.dumps(
            {"tool_calls": [{"name": "final_answer", "arguments": {"answer": result}}]}
        )
    return json.dumps({"answer": f"The tool says: {result}"})


@pytest.mark.skipif(
    not BENCH_PYTHON.exists(),
    reason="the peers' environment .venv-bench is absent (create it: bash scripts/bench-peers.sh)",
)
def test_peer_frameworks_call_tools_through_the_server(serve: Callable[[ChatModel], str]) -> None:
    base_url = serve(FunctionModel(peer_model, name="scripted"))
    out = subprocess.run(
        [str(BENCH_PYTHON), str(ROOT / "bench" / "peers_smoke.py"), "--base-url", base_url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    verdicts = [line.split(":")[0] for line in out.stdout.splitlines()]
    assert verdicts == ["PASS langgraph", "PASS pydantic-ai", "PASS smolagents"], (
        out.stdout + out.stderr
    )
    assert out.returncode == 0


def test_a_repeated_call_whose_result_is_known_gets_an_answer_from_the_results(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    seen: list[Seen] = []

    def repeats(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(Seen(messages=messages, tools=tools, settings=settings))
        if tools:  # a small model that calls again whatever it has
            return json.dumps(
                {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
            )
        results = [m.content for m in messages if m.role == "tool"]
        return json.dumps({"answer": f"It is {results[-1]} in Paris."})

    sdk = client(FunctionModel(repeats, name="repeats"))
    asked: Any = {"role": "user", "content": "Weather in Paris?"}
    made: Any = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    first = sdk.chat.completions.create(model="m", messages=[asked], tools=[WEATHER])
    assert function_call(first.choices[0].message).function.name == "get_weather"
    answered = sdk.chat.completions.create(
        model="m",
        messages=[asked, made, {"role": "tool", "tool_call_id": "call_1", "content": "21 °C"}],
        tools=[WEATHER],
    )
    assert answered.choices[0].finish_reason == "stop"
    assert answered.choices[0].message.content == "It is 21 °C in Paris."
    assert [len(s.tools) for s in seen] == [1, 1, 0]
    assert "answer my request now: Weather in Paris?" in seen[-1].messages[-1].content
    # a result not yet returned is no repeat: the call goes back to the client
    pending = sdk.chat.completions.create(model="m", messages=[asked, made], tools=[WEATHER])
    assert pending.choices[0].finish_reason == "tool_calls"


def test_an_answer_from_memory_is_sent_back_once_and_a_grounded_one_passes_unchanged(
    client: Callable[[ChatModel], openai.OpenAI],
) -> None:
    seen: list[Seen] = []

    def guesses(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(Seen(messages=messages, tools=tools, settings=settings))
        if messages[-1].origin == "loop":  # told that 19 came from nowhere: it calls
            return json.dumps(
                {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
            )
        results = [m.content for m in messages if m.role == "tool"]
        return json.dumps({"answer": f"It is {results[-1] if results else '19 °C'} in Paris."})

    sdk = client(FunctionModel(guesses, name="guesses"))
    asked: Any = {"role": "user", "content": "Weather in Paris?"}
    first = sdk.chat.completions.create(model="m", messages=[asked], tools=[WEATHER])
    assert function_call(first.choices[0].message).function.name == "get_weather"
    assert "You answered 19 without using a tool" in seen[-1].messages[-1].content
    made: Any = first.choices[0].message.model_dump(exclude_none=True)
    result: Any = {"role": "tool", "tool_call_id": made["tool_calls"][0]["id"], "content": "21 °C"}
    seen.clear()
    answered = sdk.chat.completions.create(
        model="m", messages=[asked, made, result], tools=[WEATHER]
    )
    assert answered.choices[0].message.content == "It is 21 °C in Paris." and len(seen) == 1
