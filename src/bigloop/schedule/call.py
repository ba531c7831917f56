"""Calling atoms: validate each requested call, run independent calls concurrently, and
turn every failure into an observation the model can act on."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bigloop._errors import ModelRetry, ToolFailure, UnknownTool
from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.atoms.tool import Tool
from bigloop.schedule.adapt import coerce

Outcome = Literal["ok", "unknown_tool", "invalid_arguments", "tool_error", "repeated", "asked"]


@dataclass(kw_only=True)
class CallResult:
    call: ToolCall
    outcome: Outcome
    output: str
    seconds: float
    started_at: float

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def model_mistake(self) -> bool:
        """The call was the model's error (repairable), not the tool's."""
        return self.outcome in ("unknown_tool", "invalid_arguments")


def call_key(call: ToolCall) -> str:
    return f"{call.name}:{json.dumps(call.arguments, sort_keys=True, default=str)}"


async def call_tool(call: ToolCall, tools: Mapping[str, Tool]) -> CallResult:
    """Run one call; never raises for a model or tool error."""
    started_at = time.time()
    start = time.perf_counter()
    outcome: Outcome = "ok"
    try:
        if call.name not in tools:
            names = ", ".join(tools) or "none"
            raise UnknownTool(f"There is no tool named {call.name!r}. Available tools: {names}.")
        output = await tools[call.name].call(call.arguments)
    except UnknownTool as e:
        outcome, output = "unknown_tool", f"Error: {e}"
    except ModelRetry as e:
        outcome, output = "invalid_arguments", f"Error: {e}"
    except ToolFailure as e:
        outcome, output = "tool_error", f"Error: {e}"
    return CallResult(
        call=call,
        outcome=outcome,
        output=output,
        seconds=time.perf_counter() - start,
        started_at=started_at,
    )


async def call_tools(calls: list[ToolCall], tools: Mapping[str, Tool]) -> list[CallResult]:
    """Run independent calls concurrently; results keep the calls' order."""
    if len(calls) == 1:
        return [await call_tool(calls[0], tools)]
    return list(await asyncio.gather(*(call_tool(c, tools) for c in calls)))


def schema_problems(arguments: Any, schema: dict[str, Any]) -> list[str]:
    """What is wrong with `arguments` for a tool known only by its JSON schema (none: [])."""
    import jsonschema

    if not isinstance(arguments, dict):
        return [f"arguments must be a JSON object, got {type(arguments).__name__}"]
    strict = {**schema, "additionalProperties": schema.get("additionalProperties", False)}
    validator = jsonschema.Draft202012Validator(strict)
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}"
        for e in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    ]


def copied_examples(call: ToolCall, spec: ToolSpec, context: str) -> list[str]:
    """String arguments taken from the tool's own documentation rather than the task.

    Small models copy a description's example ("e.g. San Francisco, CA") into the call. A
    value that appears in the tool's docs but nowhere in the conversation is flagged.
    """
    if not isinstance(call.arguments, dict):
        return []
    docs = json.dumps(spec.parameters, ensure_ascii=False) + " " + spec.description
    haystack = context.lower()
    problems = []
    for name, value in call.arguments.items():
        if isinstance(value, str) and len(value) >= 3 and value in docs:
            if value.lower() not in haystack:
                problems.append(
                    f"{name}={value!r} is the example from the tool's description, not a value "
                    "from the request; use the request's values"
                )
    return problems


def drop_ungrounded_optionals(
    arguments: Any, schema: dict[str, Any], context: str
) -> tuple[Any, list[str]]:
    """Omit optional string or number arguments whose value the conversation never mentions.

    A value the user did not give, for a parameter they need not give, was invented by the
    model ("unit": "cm" for a request in inches); the tool's own default is the better
    guess. Returns the arguments to send and the names dropped.
    """
    if not isinstance(arguments, dict):
        return arguments, []
    optional = set(schema.get("properties", {})) - set(schema.get("required", []))
    haystack = context.lower()
    kept, dropped = {}, []
    for name, value in arguments.items():
        invented = (
            name in optional
            and isinstance(value, str | int | float)
            and not isinstance(value, bool)
            and _mention(value) not in haystack
        )
        if invented:
            dropped.append(name)
        else:
            kept[name] = value
    return kept, dropped


def _mention(value: str | int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).lower()


def prepare_call(call: ToolCall, spec: ToolSpec, context: str) -> tuple[ToolCall, list[str]]:
    """The loop's checks before a call is made, for any tool known by its schema.

    Adapts value types to the schema, omits invented optional values, and reports
    arguments copied from the tool's docs. Returns the call to make and the problems to
    send back to the model (none: make the call).
    """
    arguments = coerce(call.arguments, spec.parameters)
    arguments, _ = drop_ungrounded_optionals(arguments, spec.parameters, context)
    adapted = ToolCall(id=call.id, name=call.name, arguments=arguments)
    return adapted, copied_examples(adapted, spec, context)
