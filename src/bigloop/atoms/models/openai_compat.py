"""Any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp's server, hosted APIs).

Tools are sent natively (`tools=`); a server or model that answers with calls written as
text instead of structured `tool_calls` is read by the same lenient parser as the local
model. `tool_mode="prompted"` sends the tools in the system prompt instead.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from typing import Any, Literal

from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.models.parse import to_response
from bigloop.atoms.models.prompts import to_plain_chat


class OpenAIModel:
    """A chat model behind an OpenAI-compatible HTTP API.

    Args:
        model: the server's model name.
        base_url: e.g. "http://127.0.0.1:8000/v1"; defaults to $OPENAI_BASE_URL.
        api_key: defaults to $OPENAI_API_KEY, or "none" for servers that ignore it.
        tool_mode: "native" sends `tools=`; "prompted" describes them in the system prompt.
        privacy: who receives the data ("local" for a server on this machine).
        structured: how structured output (`ModelSettings.response_schema`) is asked for:
            "json_schema" (OpenAI, vLLM) or "json_object" with a `schema` (llama.cpp's
            server, Ollama).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        tool_mode: Literal["native", "prompted"] = "native",
        timeout_s: float = 120.0,
        privacy: str | None = None,
        structured: Literal["json_schema", "json_object"] = "json_schema",
    ) -> None:
        self._model = model
        self._base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._client_args: dict[str, Any] = {
            "base_url": self._base_url,
            "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "none",
            "timeout": timeout_s,
            "max_retries": 1,
        }
        self._tool_mode = tool_mode
        self._privacy = privacy or _guess_privacy(self._base_url)
        self._ids = itertools.count(1)
        self._structured = structured

    @property
    def name(self) -> str:
        return self._model

    @property
    def card(self) -> AtomCard:
        return AtomCard(
            name=self._model,
            kind="model",
            description=f"OpenAI-compatible model at {self._base_url or 'api.openai.com'}",
            privacy=self._privacy,
        )

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        import openai

        settings = settings or ModelSettings()
        schema = settings.response_schema
        chat, extra = self._request(messages, tools, schema, free=settings.free_text)
        start = time.perf_counter()
        try:
            # One client per call: a client outliving its event loop leaks its sockets, and
            # a loop's `run_sync` closes the event loop after every run.
            async with openai.AsyncOpenAI(**self._client_args) as client:
                out = await client.chat.completions.create(
                    model=self._model,
                    messages=chat,
                    temperature=settings.temperature,
                    max_tokens=settings.max_tokens,
                    seed=settings.seed,
                    **extra,
                )
        except openai.AuthenticationError as e:
            raise UserError(
                f"{self._base_url}: authentication failed ({e}). "
                "Set OPENAI_API_KEY or pass api_key."
            ) from None
        except openai.APIConnectionError:
            raise ModelUnavailable(
                f"Cannot reach the model server at {self._base_url}. Is it running? "
                "Check --base-url (it usually ends in /v1)."
            ) from None
        except openai.APIStatusError as e:
            raise ModelUnavailable(
                f"{self._base_url} answered {e.status_code}: {e.message}"
            ) from None
        return self._response(out, schema, time.perf_counter() - start, settings.free_text)

    def _request(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        schema: dict[str, Any] | None,
        *,
        free: bool = False,
    ) -> tuple[list[Any], dict[str, Any]]:
        """The messages to send and the extra arguments of the request: the tools when
        they go natively, the response format when a schema is asked for; in free text
        (`free`) the messages as written and nothing else."""
        tools = [] if free else tools
        native = self._tool_mode == "native" and bool(tools) and schema is None
        if schema is not None or free:
            chat: list[Any] = [{"role": m.role, "content": m.content} for m in messages]
        else:
            chat = _to_openai(messages) if native else to_plain_chat(messages, tools)
        extra: dict[str, Any] = {"tools": [t.to_openai() for t in tools]} if native else {}
        if schema is not None:
            extra["response_format"] = (
                {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
                if self._structured == "json_schema"
                else {"type": "json_object", "schema": schema}
            )
        return chat, extra

    def _response(
        self, out: Any, schema: dict[str, Any] | None, seconds: float, free: bool = False
    ) -> ModelResponse:
        """The server's completion `out` as a `ModelResponse`: the text as is under a
        schema or in free text, else its calls (structured or written as text); with its
        usage."""
        if not out.choices:
            raise ModelUnavailable(f"{self.name}: the server answered with no choices.")
        choice = out.choices[0].message
        if schema is not None or free:
            response = ModelResponse(text=choice.content or "", raw=choice.content or "")
        else:
            response = _structured(choice.tool_calls, self._ids) or to_response(
                choice.content or "", self._ids
            )
        if out.usage:
            response.usage = Usage(
                prompt_tokens=out.usage.prompt_tokens,
                completion_tokens=out.usage.completion_tokens,
                seconds=seconds,
            )
        else:
            response.usage = Usage(seconds=seconds)
        return response


def _structured(calls: Any, ids: itertools.count[int]) -> ModelResponse | None:
    if not calls:
        return None
    parsed = []
    for c in calls:
        raw_args = c.function.arguments or "{}"
        try:
            args = json.loads(raw_args)
        except json.JSONDecodeError as e:
            return ModelResponse(
                raw=raw_args,
                error=f"The arguments of {c.function.name!r} were not valid JSON ({e.msg}).",
            )
        parsed.append(
            ToolCall(id=c.id or f"call_{next(ids)}", name=c.function.name, arguments=args)
        )
    return ModelResponse(tool_calls=parsed)


def _to_openai(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": "",  # some servers reject null
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _guess_privacy(base_url: str | None) -> str:
    if base_url and any(h in base_url for h in ("://127.", "://localhost", "://[::1]")):
        return "local"
    return base_url or "api.openai.com"
