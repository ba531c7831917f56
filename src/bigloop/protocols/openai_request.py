"""The request side of OpenAI's chat-completions protocol, read as permissively as real
servers read it, and turned into bigloop's records.

Accepted: a message `content` that is a string, null or a list of text parts (what
smolagents sends); the roles system, developer (as system), user, assistant (its
`tool_calls` carry `function.arguments` as a JSON string), tool, and the legacy function
role (as tool); `tools`, `tool_choice`, `temperature`, `max_tokens` /
`max_completion_tokens`, `seed`, `stop`, `stream`, `stream_options.include_usage`,
`parallel_tool_calls`, `response_format` and `n=1`. Unknown fields are ignored. Sampling
settings a request leaves out keep bigloop's defaults (greedy, seed 0, 512 tokens).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from bigloop._errors import UserError
from bigloop.atoms.models.base import Message, ModelSettings, Role, ToolCall, ToolSpec
from bigloop.trace.records import valid_text

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}


class InvalidRequest(UserError):
    """A request this server cannot serve; answered with HTTP 400 and `param` named."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class FunctionCallIn(BaseModel):
    name: str
    arguments: str | dict[str, Any] | None = None


class ToolCallIn(BaseModel):
    id: str = ""
    type: str = "function"
    function: FunctionCallIn


class ContentPart(BaseModel):
    type: str
    text: str | None = None


class MessageIn(BaseModel):
    role: str
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    function_call: FunctionCallIn | None = None


class FunctionIn(BaseModel):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolIn(BaseModel):
    type: Literal["function"] = "function"
    function: FunctionIn


class NamedFunction(BaseModel):
    name: str


class NamedToolChoice(BaseModel):
    type: Literal["function"] = "function"
    function: NamedFunction


class JsonSchemaIn(BaseModel):
    name: str = "reply"
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class ResponseFormatIn(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaIn | None = None


class StreamOptionsIn(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The body of `POST /v1/chat/completions` (the fields this server reads)."""

    model: str = ""
    messages: list[MessageIn] = Field(min_length=1)
    tools: list[ToolIn] | None = None
    tool_choice: Literal["auto", "none", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    n: int | None = None
    stop: str | list[str] | None = None
    stream: bool | None = False
    stream_options: StreamOptionsIn | None = None
    response_format: ResponseFormatIn | None = None


@dataclass(kw_only=True)
class ChatTurn:
    """One request in bigloop's terms: what to ask the model, and how to answer."""

    messages: list[Message]
    tools: list[ToolSpec]
    settings: ModelSettings
    require_call: bool = False
    """`tool_choice` "required" or a named function: the reply must be a call."""
    single_call: bool = False
    """`parallel_tool_calls: false`: keep the first call only."""
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False


def read_request(body: Any) -> ChatTurn:
    """A `ChatTurn` from a decoded JSON body.

    Raises:
        InvalidRequest: the body is not a chat-completions request this server can serve.
    """
    try:
        request = ChatRequest.model_validate(body)
    except ValidationError as e:
        first = e.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidRequest(f"{param or 'body'}: {first['msg']}", param) from None
    if request.n not in (None, 1):
        raise InvalidRequest("Only n=1 is supported: this server returns one choice.", "n")
    tools, require_call = _offered_tools(request)
    defaults = ModelSettings()
    settings = ModelSettings(
        temperature=defaults.temperature if request.temperature is None else request.temperature,
        max_tokens=request.max_completion_tokens or request.max_tokens or defaults.max_tokens,
        seed=defaults.seed if request.seed is None else request.seed,
        # With tools offered the reply's shape is a call or an answer, not this format.
        response_schema=None if tools else _response_schema(request.response_format),
    )
    return ChatTurn(
        messages=[_message(m, i) for i, m in enumerate(request.messages)],
        tools=tools,
        settings=settings,
        require_call=require_call,
        single_call=request.parallel_tool_calls is False,
        stop=[request.stop] if isinstance(request.stop, str) else list(request.stop or []),
        stream=bool(request.stream),
        include_usage=bool(request.stream_options and request.stream_options.include_usage),
    )


def _offered_tools(request: ChatRequest) -> tuple[list[ToolSpec], bool]:
    """The tools to offer the model, and whether it must call one."""
    tools = [
        ToolSpec(
            name=t.function.name,
            description=t.function.description or "",
            parameters=t.function.parameters or {"type": "object", "properties": {}},
        )
        for t in request.tools or []
    ]
    choice = request.tool_choice or "auto"
    if choice == "none":
        return [], False
    if choice == "auto":
        return tools, False
    if not tools:
        raise InvalidRequest("tool_choice asks for a call, but no tools were given.", "tool_choice")
    if choice == "required":
        return tools, True
    chosen = [t for t in tools if t.name == choice.function.name]
    if not chosen:
        raise InvalidRequest(
            f"tool_choice names {choice.function.name!r}, which is not among the tools.",
            "tool_choice",
        )
    return chosen, True


def _response_schema(response_format: ResponseFormatIn | None) -> dict[str, Any] | None:
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_schema" and response_format.json_schema is not None:
        return response_format.json_schema.schema_ or {"type": "object"}
    return {"type": "object"}


def _message(m: MessageIn, i: int) -> Message:
    role = _ROLES.get(m.role)
    if role is None:
        raise InvalidRequest(
            f"messages[{i}].role: unknown role {m.role!r}; expected one of {', '.join(_ROLES)}.",
            f"messages[{i}].role",
        )
    content = _text(m.content, i)
    if role == "assistant":
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=_arguments(c.function.arguments))
            for c in m.tool_calls or []
        ]
        if m.function_call is not None:
            f = m.function_call
            calls.append(ToolCall(id=f"legacy_{i}", name=f.name, arguments=_arguments(f.arguments)))
        return Message(role="assistant", content=content, tool_calls=calls)
    if role == "tool":
        return Message(role="tool", content=content, tool_call_id=m.tool_call_id, name=m.name)
    return Message(role=role, content=content)


def _text(content: str | list[ContentPart] | None, i: int) -> str:
    """The message's text; a lone surrogate ("\\ud800", valid JSON but not text) becomes
    U+FFFD, so that relaying it to another server cannot fail."""
    if content is None or isinstance(content, str):
        return valid_text(content or "")
    texts = []
    for part in content:
        if part.type not in ("text", "input_text") or part.text is None:
            raise InvalidRequest(
                f"messages[{i}].content: only text parts are supported, not {part.type!r}.",
                f"messages[{i}].content",
            )
        texts.append(part.text)
    return valid_text("\n".join(texts))


def _arguments(arguments: str | dict[str, Any] | None) -> Any:
    """Arguments as a value; a string that is not JSON is kept as written."""
    if arguments is None or isinstance(arguments, dict):
        return arguments or {}
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return arguments
