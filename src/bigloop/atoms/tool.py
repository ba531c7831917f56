"""Tools: typed Python functions turned into atoms with a JSON schema.

The schema comes from the type hints (pydantic) and the Google-style docstring. A
parameter without a hint fails at decoration time; arguments are validated before the
call; results are rendered to text and capped; every call has a timeout.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import math
import re
import reprlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, get_args, overload

import pydantic

from bigloop._errors import InvalidArguments, ToolFailure, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.schema import schema_problems

_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Yields|Raises|Examples?|Notes?|Attributes):\s*$"
)


Effect = Literal["read", "write", "irreversible"]
"""What a tool's calls do to the world (`Tool.effect`)."""
EFFECTS: tuple[Effect, ...] = get_args(Effect)


@dataclass(kw_only=True)
class Tool:
    """A deterministic callable atom with a strict input schema.

    Made by `@tool` from a typed function (validated by pydantic), or by `Tool.from_schema`
    for a callable known only by its JSON schema (validated by jsonschema): remote tools,
    simulations, tools described by OpenAPI or MCP.
    """

    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[pydantic.BaseModel] | None = None
    parameters: dict[str, Any] | None = None
    timeout_s: float = 30.0
    max_result_chars: int = 4000
    idempotent: bool = True
    inline: bool = False
    effect: Effect = "read"
    """What a call does: "read" (nothing), "write" (changes something that can be changed
    back) or "irreversible" (cannot be undone: a call is made only when approved, see
    `bigloop.policies.approval`). An irreversible tool is never idempotent, and a tool
    that is not idempotent is never "read": `idempotent=False` with no effect declared
    is treated as "irreversible" (gated) until the developer says `effect="write"`."""

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise UserError(
                f"Tool {self.name!r}: effect {self.effect!r}; use {', '.join(map(repr, EFFECTS))}."
            )
        if self.effect == "irreversible":
            self.idempotent = False
        elif self.effect == "read" and not self.idempotent:
            self.effect = "irreversible"  # side effects nobody described: gated

    @cached_property
    def schema(self) -> dict[str, Any]:
        """JSON schema of the arguments (pydantic's titles left out); computed once."""
        if self.args_model is None:
            return self.parameters or {"type": "object", "properties": {}}
        schema: dict[str, Any] = _strip_titles(self.args_model.model_json_schema())
        return schema

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: dict[str, Any],
        fn: Callable[..., Any],
        **options: Any,
    ) -> Tool:
        """A tool from a JSON schema and a callable taking the arguments as keywords."""
        return cls(name=name, description=description, fn=fn, parameters=parameters, **options)

    @property
    def card(self) -> AtomCard:
        return AtomCard(
            name=self.name,
            kind="tool",
            description=self.description,
            input_schema=self.schema,
            latency_s=None,
        )

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Validate raw arguments; raise `InvalidArguments` with a message for the model."""
        if not isinstance(arguments, dict):
            raise InvalidArguments(
                f"Arguments for {self.name!r} must be a JSON object, "
                f"got {type(arguments).__name__}."
            )
        if self.args_model is None:
            if problems := schema_problems(arguments, self.schema):
                raise InvalidArguments(
                    f"Invalid arguments for {self.name!r}: " + "; ".join(problems)
                )
            return dict(arguments)
        try:
            model = self.args_model.model_validate(arguments)
        except pydantic.ValidationError as e:
            raise InvalidArguments(_describe(self.name, e, self.schema)) from None
        return {k: getattr(model, k) for k in type(model).model_fields}

    async def call(self, arguments: Any) -> str:
        """Validate, run with the timeout, and return the result rendered as capped text.

        Raises:
            InvalidArguments: the arguments do not match the schema.
            ToolFailure: the tool raised or timed out.
        """
        kwargs = self.validate(arguments)
        fn = _no_exit(self.fn)
        try:
            if self.inline:
                result = fn(**kwargs)
                if inspect.isawaitable(result):
                    result = await asyncio.wait_for(_awaited_no_exit(result), self.timeout_s)
            elif inspect.iscoroutinefunction(self.fn):
                result = await asyncio.wait_for(fn(**kwargs), self.timeout_s)
            else:
                result = await asyncio.wait_for(_in_daemon_thread(fn, kwargs), self.timeout_s)
        except TimeoutError:
            raise ToolFailure(f"Tool {self.name!r} timed out after {self.timeout_s:g} s.") from None
        except Exception as e:
            raise ToolFailure(f"Tool {self.name!r} failed: {type(e).__name__}: {e}") from e
        return render_result(result, self.max_result_chars)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float = 30.0,
    max_result_chars: int = 4000,
    idempotent: bool | None = None,
    inline: bool = False,
    effect: Effect | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float = 30.0,
    max_result_chars: int = 4000,
    idempotent: bool | None = None,
    inline: bool = False,
    effect: Effect | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a `Tool`.

    Usable bare (`@tool`) or with options (`@tool(timeout_s=5)`).

    Args:
        timeout_s: seconds a call may take before it fails (and the model is told).
        max_result_chars: longer results are cut, with a note saying how much was cut.
        idempotent: False for tools with side effects; a resumed run never repeats them.
            Default: True, except for irreversible tools.
        inline: run a sync function directly in the event loop instead of a worker thread;
            faster for quick pure functions, but its timeout cannot be enforced.
        effect: "read" (the default), "write" (changes that can be changed back), or
            "irreversible" (also the default when `idempotent=False`: undescribed side
            effects are gated): a call is then made only when approved.

    Raises:
        UserError: a parameter has no type hint, the hints cannot form a schema, or
            `effect` contradicts `idempotent` (irreversible and idempotent, or read-only
            and not idempotent).
    """
    if effect == "irreversible" and idempotent:
        raise UserError(
            "An irreversible tool cannot be idempotent: drop `idempotent=True` or use "
            'effect="write".'
        )
    if effect == "read" and idempotent is False:
        raise UserError(
            'A read-only tool is idempotent: use effect="write" for a tool with side effects.'
        )
    # side effects nobody described are gated like irreversible ones
    resolved: Effect = effect or ("read" if idempotent is not False else "irreversible")

    def build(f: Callable[..., Any]) -> Tool:
        summary, arg_docs = _parse_docstring(inspect.getdoc(f) or "")
        return Tool(
            name=name or f.__name__,
            description=description if description is not None else summary,
            fn=f,
            args_model=_args_model(f, arg_docs),
            timeout_s=timeout_s,
            max_result_chars=max_result_chars,
            idempotent=idempotent if idempotent is not None else resolved != "irreversible",
            inline=inline,
            effect=resolved,
        )

    return build(fn) if fn is not None else build


class _ToolExit(Exception):
    """A tool called sys.exit: an ordinary failure of the call, not the end of the process."""


def _no_exit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with SystemExit turned into `_ToolExit` where it is raised: a SystemExit that
    reaches an asyncio task stops the event loop, whatever catches it later."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            return await _awaited_no_exit(fn(*args, **kwargs))

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SystemExit as e:
            raise _ToolExit(f"SystemExit({e.code!r}): the tool called sys.exit") from None

    return run


async def _awaited_no_exit(awaitable: Any) -> Any:
    try:
        return await awaitable
    except SystemExit as e:
        raise _ToolExit(f"SystemExit({e.code!r}): the tool called sys.exit") from None


def render_result(result: Any, limit: int) -> str:
    """Text the model sees for a tool result, capped at `limit` characters.

    Bounded: a huge structure is encoded only as far as the cap (and counted a little
    beyond), an integer too long to print is shown by its magnitude, and text that is not
    valid UTF-8 (lone surrogates, e.g. from undecodable file names) is escaped.
    """
    if isinstance(result, str):
        text, cut = result[:limit], len(result) - limit
        note = f"[truncated {cut} characters]"
    elif isinstance(result, pydantic.BaseModel):
        return render_result(result.model_dump_json(), limit)
    else:
        text, cut, note = _encode_bounded(result, limit)
    if cut > 0:
        text = f"{text}… {note}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_COUNT_BEYOND = 100  # encode at most this many times the cap, to say how much was cut
_INT_BITS_SHOWN = 14_000  # str() refuses ints over 4,300 digits (about 14,284 bits)


def _encode_bounded(result: Any, limit: int) -> tuple[str, int, str]:
    """`result` as JSON (else its repr) up to `limit` characters; how much was cut, and
    the note saying so."""
    if isinstance(shown := _shown_int(result), str):  # capped like any text
        return shown[:limit], len(shown) - limit, f"[truncated {len(shown) - limit} characters]"
    try:
        return _json_prefix(result, limit)
    except ValueError:  # an int too long for str inside a structure (or a cycle)
        pass
    except (TypeError, RecursionError):
        text = _bounded_repr(result)
        return text[:limit], len(text) - limit, f"[truncated {len(text) - limit} characters]"
    try:
        return _json_prefix(_without_huge_ints(result), limit)
    except (TypeError, ValueError, RecursionError):
        text = _bounded_repr(result)
        return text[:limit], len(text) - limit, f"[truncated {len(text) - limit} characters]"


def _json_prefix(result: Any, limit: int) -> tuple[str, int, str]:
    encoder = json.JSONEncoder(default=str, ensure_ascii=False)
    chunks: list[str] = []
    size = 0
    for chunk in encoder.iterencode(result):
        if size < limit:
            chunks.append(chunk)
        size += len(chunk)
        if size > limit * _COUNT_BEYOND:
            cut = size - limit
            return "".join(chunks)[:limit], cut, f"[truncated more than {cut} characters]"
    cut = size - limit
    return "".join(chunks)[:limit], cut, f"[truncated {cut} characters]"


def _without_huge_ints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_huge_ints(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_huge_ints(v) for v in value]
    return _shown_int(value)


def _shown_int(value: Any) -> Any:
    """An int too long for `str` as text giving its magnitude; any other value as is."""
    if type(value) is not int or value.bit_length() < _INT_BITS_SHOWN:
        return value
    digits = math.log10(abs(value))
    exponent = int(digits)
    sign = "-" if value < 0 else ""
    return (
        f"{sign}{10 ** (digits - exponent):.5f}e+{exponent} "
        f"(an integer of {exponent + 1} digits, too long to show in full)"
    )


def _bounded_repr(value: Any) -> str:
    shorter = reprlib.Repr()
    shorter.maxstring = shorter.maxother = shorter.maxlong = 2000
    try:
        return shorter.repr(value)
    except ValueError:  # an int too long for str
        return f"<{type(value).__name__} too large to show>"


async def _in_daemon_thread(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """`fn(**kwargs)` in a daemon thread, awaited.

    Unlike `asyncio.to_thread`, the thread belongs to no executor: a call that never
    returns is abandoned at its timeout, and neither `asyncio.run` nor the interpreter
    waits for it at shutdown.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():  # timed out or cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            outcome = (True, context.run(fn, **kwargs))
        except BaseException as e:  # noqa: BLE001 - the thread's top level: handed to the caller
            outcome = (False, e)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the event loop closed while the tool was running
            pass

    threading.Thread(
        target=work, name=f"bigloop-tool-{getattr(fn, '__name__', 'fn')}", daemon=True
    ).start()
    return await future


def _args_model(f: Callable[..., Any], arg_docs: dict[str, str]) -> type[pydantic.BaseModel]:
    signature = inspect.signature(f)
    try:
        hints = inspect.get_annotations(f, eval_str=True)
    except NameError as e:
        raise UserError(f"Tool {f.__name__!r}: cannot resolve a type hint ({e}).") from None
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(
                f"Tool {f.__name__!r}: *args/**kwargs cannot form a schema; "
                f"declare each parameter with a type hint."
            )
        if param.name not in hints:
            raise UserError(
                f"Tool {f.__name__!r}: parameter {param.name!r} has no type hint. "
                f"Add one, e.g. `{param.name}: str`, so bigloop can build its schema."
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            hints[param.name],
            pydantic.Field(default, description=arg_docs.get(param.name)),
        )
    try:
        return pydantic.create_model(
            f"{f.__name__}_args",
            __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
    except (pydantic.PydanticSchemaGenerationError, TypeError) as e:
        raise UserError(f"Tool {f.__name__!r}: its type hints cannot form a schema: {e}") from None


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before the first section) and Google-style `Args:` entries."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if _SECTION.match(line):
            section = stripped[:-1].lower()
            entry_indent = current = None
            continue
        if section is None:
            summary.append(stripped)
            continue
        if section not in {"args", "arguments", "parameters"} or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        m = _ARG_LINE.match(stripped)
        if m and (entry_indent is None or indent <= entry_indent):
            entry_indent, current = indent, m.group(1).lstrip("*")
            args[current] = m.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(" ".join(summary).split()), args


def _describe(name: str, error: pydantic.ValidationError, schema: dict[str, Any]) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        if item["type"] == "extra_forbidden":
            problems.append(f"{where}: not a parameter of this tool")
        else:
            problems.append(f"{where}: {item['msg']}")
    params = ", ".join(schema.get("properties", {})) or "none"
    required = ", ".join(schema.get("required", [])) or "none"
    return (
        f"Invalid arguments for {name!r}: "
        + "; ".join(problems)
        + f". Parameters: {params} (required: {required})."
    )


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: _strip_titles(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema
