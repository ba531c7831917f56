"""Command-line options generated from `LoopConfig`'s fields.

A command lists the fields it takes (`@config_options("model", "planner", ...)`) and
declares a `given: dict[str, Any]` parameter where their options go. Each option's flag,
type, bounds and help come from the field (`Field(description=...)`, `ge`/`le`), so
`bigloop run`, `serve mcp`, `serve a2a` and `eval` cannot drift from `LoopConfig` or
from each other. An option left out is not in `given`: the --config file's value, then
the field's default, apply — the same default as `Loop()` and `LoopConfig()`.

List fields are repeatable options that also take commas (`--tools calculator,today
--tools weekday`), as every repeated option of the command line does.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import typer

from bigloop.config import LoopConfig

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Flag:
    """How a field reads on the command line: its extra short name, and whether a path
    given is made absolute (a file the config will be read with from elsewhere)."""

    short: str | None = None
    absolute: bool = False


FLAGS: dict[str, Flag] = {
    "model": Flag("-m"),
    "planner": Flag("-p"),
    "adapter": Flag(absolute=True),
}
PATHS = {"adapter", "files", "db", "tools_dir"}
"""Fields given as file or folder paths: completed by the shell, checked by typer."""


def config_options(*names: str) -> Callable[[F], F]:
    """Give a command one option per `LoopConfig` field in `names`, in place of its
    keyword-only `given` parameter; the command is called with `given`, the options
    given (values ready for `LoopConfig.from_data`)."""
    unknown = [n for n in names if n not in LoopConfig.model_fields]
    if unknown:
        raise ValueError(f"not LoopConfig fields: {unknown}")

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        hints = {p.name: p.annotation for p in signature.parameters.values()}
        params: list[inspect.Parameter] = []
        for p in signature.parameters.values():
            if p.name != "given":
                params.append(p)
                continue
            params += [inspect.Parameter(n, p.kind, default=_default(n)) for n in names]
        if len(params) == len(signature.parameters):
            raise TypeError(f"{command.__name__} has no `given` parameter")
        params = [p.replace(annotation=_option(p.name)) if p.name in names else p for p in params]

        @functools.wraps(command)
        def with_config(*args: Any, **kwargs: Any) -> Any:
            values = {n: _value(n, kwargs.pop(n, None)) for n in names}
            given = {n: v for n, v in values.items() if v is not None}
            return command(*args, **kwargs, given=given)

        with_config.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=params
        )
        del hints["given"]
        with_config.__annotations__ = {**hints, **{n: _option(n) for n in names}}
        return with_config  # type: ignore[return-value]

    return decorate


def _default(name: str) -> Any:
    return False if _base_type(name) is bool else None


def _base_type(name: str) -> Any:
    """The field's type without None; a Literal's values are strings."""
    annotation = LoopConfig.model_fields[name].annotation
    kind = annotation
    if get_origin(annotation) in (Union, UnionType):  # X | None
        (kind,) = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(kind) is Literal:
        return str
    if get_origin(kind) is list:
        return list[str]
    return kind


def _option(name: str) -> Any:
    """The `Annotated[type, typer.Option(...)]` of field `name`."""
    field = LoopConfig.model_fields[name]
    flag = FLAGS.get(name, Flag())
    names = [f"--{name.replace('_', '-')}", *([flag.short] if flag.short else [])]
    kind = _base_type(name)
    low = next((r.ge for r in field.metadata if isinstance(r, annotated_types.Ge)), None)
    high = next((r.le for r in field.metadata if isinstance(r, annotated_types.Le)), None)
    assert isinstance(low, int | float | None) and isinstance(high, int | float | None)
    help_text = field.description or ""
    if kind == list[str]:
        help_text += " Repeatable; commas also work."
    if kind is bool:
        return Annotated[bool, typer.Option(*names, help=help_text)]
    typed = Path if name in PATHS else kind
    return Annotated[typed | None, typer.Option(*names, help=help_text, min=low, max=high)]


def _value(name: str, value: Any) -> Any:
    """An option's value as the config takes it; None for an option not given."""
    if value is None or value is False or value == []:
        return None
    if isinstance(value, Path):
        return str(value.expanduser().resolve() if FLAGS.get(name, Flag()).absolute else value)
    if isinstance(value, list):
        return [item.strip() for given in value for item in given.split(",") if item.strip()]
    return value
