"""Reading tool calls out of a model's text, leniently.

Small local models write calls as bare JSON, fenced JSON, `<tool_call>` blocks, or a list
of calls; they sometimes add prose around them. This module finds every call it can and
reports, in words the model can act on, what it could not read.

Any text is read without raising and in time linear in its length: JSON nested past the
recursion limit, integers too long to convert, and unclosed fences or tags over long runs
of whitespace (once quadratic in the regular expressions) are unreadable replies, not
crashes.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ModelResponse, ToolCall

# No `\s*` around the lazy group: with one, an unclosed fence or tag followed by a long run
# of whitespace made matching quadratic (seconds for 20k spaces). Chunks are stripped instead.
_FENCE = re.compile(r"```(?:json|python|tool_call)?(.*?)```", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_DECODER = json.JSONDecoder()
_SCAN_LIMIT = 200_000
"""Longer chunks that are not JSON as a whole are not searched for embedded JSON values."""
_MAX_ATTEMPTS = 100
"""Failed attempts at a JSON value inside a chunk before giving up on it (each costs time
linear in the chunk: the decoder's error counts lines up to where it failed)."""
_MAX_DEPTH = 32
"""Deeper lists and objects are not searched for calls."""


@dataclass(kw_only=True)
class ParsedReply:
    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    error: str | None = None


def parse_reply(raw: str) -> ParsedReply:
    """Split a model's raw output into tool calls, or a final answer, or an error."""
    text = raw.strip()
    chunks = (
        [m.group(1).strip() for m in _TAGGED.finditer(text)]
        or [m.group(1).strip() for m in _FENCE.finditer(text)]
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
    if any(_malformed_call(v) for v in values):
        return ParsedReply(
            error='A call\'s "name" must be the name of a tool, as text: '
            '{"tool_calls": [{"name": "...", "arguments": {...}}]}.'
        )
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
    except (ValueError, RecursionError) as e:
        return [], _unreadable(e)
    if len(chunk) > _SCAN_LIMIT:
        return [], first_error
    values: list[Any] = []
    failures = 0
    i = 0
    while i < len(chunk) and failures < _MAX_ATTEMPTS:
        if chunk[i] in "{[":
            try:
                value, end = _DECODER.raw_decode(chunk, i)
            except json.JSONDecodeError:
                failures += 1
                i += 1
                continue
            except (ValueError, RecursionError) as e:
                return values, (None if values else _unreadable(e))
            values.append(value)
            i = end
        else:
            i += 1
    return values, (None if values else first_error)


def _unreadable(error: ValueError | RecursionError) -> str:
    """Why JSON that the decoder gave up on cannot be read (too deep, a number too long)."""
    if isinstance(error, RecursionError):
        return "it is nested too deeply"
    return "a number in it has too many digits" if "digits" in str(error) else str(error)[:200]


def _interpret(value: Any, depth: int = 0) -> tuple[list[tuple[str, Any]], str | None]:
    if depth > _MAX_DEPTH:
        return [], None
    if isinstance(value, list):
        calls = [c for item in value for c in _interpret(item, depth + 1)[0]]
        return calls, None
    if not isinstance(value, dict):
        return [], None
    for key in ("tool_calls", "calls", "function_calls"):
        if isinstance(value.get(key), list):
            return [c for item in value[key] for c in _interpret(item, depth + 1)[0]], None
    if isinstance(value.get("function"), dict):
        return _interpret(value["function"], depth + 1)
    name = value.get("name")
    if isinstance(name, str) and name:
        args = value.get("arguments", value.get("parameters", value.get("args", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):  # not JSON: the tool's validation says so
                pass
        return [(name, args)], None
    answer = value.get("answer", value.get("final_answer"))
    if answer is not None:
        return [], answer if isinstance(answer, str) else _json_text(answer)
    return [], None


def _malformed_call(value: Any, depth: int = 0) -> bool:
    """Whether `value` holds something shaped like a call whose name is not text
    (`{"name": 123, "arguments": {}}`): a broken call, not an answer."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(value, list):
        return any(_malformed_call(v, depth + 1) for v in value)
    if not isinstance(value, dict):
        return False
    for key in ("tool_calls", "calls", "function_calls"):
        if isinstance(value.get(key), list):
            return _malformed_call(value[key], depth + 1)
    if isinstance(value.get("function"), dict):
        return _malformed_call(value["function"], depth + 1)
    name = value.get("name")
    has_arguments = any(k in value for k in ("arguments", "parameters", "args"))
    return has_arguments and not (isinstance(name, str) and name)


def _json_text(value: Any) -> str:
    """`value` as JSON text, or a note when it cannot be written (too deep, a huge int)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError) as e:
        return f"(an answer that cannot be shown: {_unreadable(e)})"


def to_response(raw: str, ids: itertools.count[int]) -> ModelResponse:
    """A `ModelResponse` from a model's raw text, via `parse_reply`.

    Raises:
        UserError: `raw` is not text (e.g. a `FunctionModel` function returned None).
    """
    if not isinstance(raw, str):
        raise UserError(
            f"A model's reply must be text or a ModelResponse, not {type(raw).__name__}; "
            "check what the model's function returns."
        )
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
