"""Reading tool calls out of a model's text, leniently.

Small local models write calls as bare JSON, fenced JSON, `<tool_call>` blocks, or a list
of calls; they sometimes add prose around them. This module finds every call it can and
reports, in words the model can act on, what it could not read.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from bigloop.atoms.models.base import ModelResponse, ToolCall

_FENCE = re.compile(r"```(?:json|python|tool_call)?\s*(.*?)```", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(kw_only=True)
class ParsedReply:
    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    error: str | None = None


def parse_reply(raw: str) -> ParsedReply:
    """Split a model's raw output into tool calls, or a final answer, or an error."""
    text = raw.strip()
    chunks = (
        [m.group(1) for m in _TAGGED.finditer(text)]
        or [m.group(1) for m in _FENCE.finditer(text)]
        or [text]
    )
    values: list[Any] = []
    broken = None
    for chunk in chunks:
        found, problem = _json_values(chunk)
        values.extend(found)
        broken = broken or problem
    calls: list[tuple[str, Any]] = []
    answer: str | None = None
    for value in values:
        got_calls, got_answer = _interpret(value)
        calls.extend(got_calls)
        if got_answer is not None and answer is None:
            answer = got_answer
    if calls:
        return ParsedReply(calls=calls)
    if answer is not None:
        return ParsedReply(text=answer)
    if broken and text.lstrip().startswith(("{", "[", "```", "<tool_call>")):
        return ParsedReply(
            error=f"Your reply was not valid JSON ({broken}). Reply with a single JSON object."
        )
    return ParsedReply(text=text)


def _json_values(chunk: str) -> tuple[list[Any], str | None]:
    """Every top-level JSON object or array in `chunk`, and the first decoding error."""
    try:
        return [json.loads(chunk)], None
    except json.JSONDecodeError as e:
        first_error: str | None = f"{e.msg} at character {e.pos}"
    values: list[Any] = []
    i = 0
    while i < len(chunk):
        if chunk[i] in "{[":
            try:
                value, end = _DECODER.raw_decode(chunk, i)
            except json.JSONDecodeError:
                i += 1
                continue
            values.append(value)
            i = end
        else:
            i += 1
    return values, (None if values else first_error)


def _interpret(value: Any) -> tuple[list[tuple[str, Any]], str | None]:
    if isinstance(value, list):
        calls = [c for item in value for c in _interpret(item)[0]]
        return calls, None
    if not isinstance(value, dict):
        return [], None
    for key in ("tool_calls", "calls", "function_calls"):
        if isinstance(value.get(key), list):
            return [c for item in value[key] for c in _interpret(item)[0]], None
    if isinstance(value.get("function"), dict):
        return _interpret(value["function"])
    name = value.get("name")
    if isinstance(name, str) and name:
        args = value.get("arguments", value.get("parameters", value.get("args", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        return [(name, args)], None
    answer = value.get("answer", value.get("final_answer"))
    if answer is not None:
        return [], answer if isinstance(answer, str) else json.dumps(answer)
    return [], None


def to_response(raw: str, ids: itertools.count[int]) -> ModelResponse:
    """A `ModelResponse` from a model's raw text, via `parse_reply`."""
    parsed = parse_reply(raw)
    return ModelResponse(
        text=parsed.text,
        tool_calls=[
            ToolCall(id=f"call_{next(ids)}", name=name, arguments=args)
            for name, args in parsed.calls
        ],
        raw=raw,
        error=parsed.error,
    )
