"""Tools: typed Python functions turned into atoms with a JSON schema.

The schema comes from the type hints (pydantic) and the Google-style docstring. A
parameter without a hint fails at decoration time; arguments are validated before the
call; results are rendered to text and capped; every call has a timeout.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

import pydantic

from bigloop._errors import InvalidArguments, ToolFailure, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.schema import schema_problems

_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Yields|Raises|Examples?|Notes?|Attributes):\s*$"
)


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
        try:
            if self.inline:
                result = self.fn(**kwargs)
                if inspect.isawaitable(result):
                    result = await asyncio.wait_for(result, self.timeout_s)
            elif inspect.iscoroutinefunction(self.fn):
                result = await asyncio.wait_for(self.fn(**kwargs), self.timeout_s)
            else:
                result = await asyncio.wait_for(
                    asyncio.to_thread(self.fn, **kwargs), self.timeout_s
                )
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
    idempotent: bool = True,
    inline: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float = 30.0,
    max_result_chars: int = 4000,
    idempotent: bool = True,
    inline: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a `Tool`.

    Usable bare (`@tool`) or with options (`@tool(timeout_s=5)`).

    Args:
        timeout_s: seconds a call may take before it fails (and the model is told).
        max_result_chars: longer results are cut, with a note saying how much was cut.
        idempotent: False for tools with side effects; a resumed run never repeats them.
        inline: run a sync function directly in the event loop instead of a worker thread;
            faster for quick pure functions, but its timeout cannot be enforced.

    Raises:
        UserError: a parameter has no type hint, or the hints cannot form a schema.
    """

    def build(f: Callable[..., Any]) -> Tool:
        summary, arg_docs = _parse_docstring(inspect.getdoc(f) or "")
        return Tool(
            name=name or f.__name__,
            description=description if description is not None else summary,
            fn=f,
            args_model=_args_model(f, arg_docs),
            timeout_s=timeout_s,
            max_result_chars=max_result_chars,
            idempotent=idempotent,
            inline=inline,
        )

    return build(fn) if fn is not None else build


def render_result(result: Any, limit: int) -> str:
    """Text the model sees for a tool result, capped at `limit` characters."""
    if isinstance(result, str):
        text = result
    elif isinstance(result, pydantic.BaseModel):
        text = result.model_dump_json()
    else:
        try:
            text = json.dumps(result, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(result)
    if len(text) > limit:
        text = f"{text[:limit]}… [truncated {len(text) - limit} characters]"
    return text


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
