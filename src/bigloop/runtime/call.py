"""Calling atoms: make one call and turn every failure into an observation the model can
act on (the call runner, `bigloop.runtime.runner`, checks calls and runs them
concurrently)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bigloop._errors import ModelRetry, ToolFailure, UnknownTool
from bigloop.atoms.models.base import Origin, ToolCall
from bigloop.atoms.tool import Tool
from bigloop.trace.records import Question, Refusal

Outcome = Literal[
    "ok", "unknown_tool", "invalid_arguments", "tool_error", "repeated", "asked", "denied"
]


MODEL_MISTAKES = frozenset({"unknown_tool", "invalid_arguments"})
"""Call outcomes that were the model's to fix (the loop sends them back as feedback)."""


@dataclass(kw_only=True)
class CallResult:
    """One call's outcome and the result the model reads.

    Attributes:
        origin: who wrote `output`: the tool ("tool"), the loop ("loop": a refusal, a
            note that the call was not made) or the user ("user": their answer to the
            question the call raised).
        refusal: the check's refusal, when a check stopped the call.
        question: the question put to the user, when the call raised one.
    """

    call: ToolCall
    outcome: Outcome
    output: str
    seconds: float
    started_at: float
    origin: Origin = "tool"
    refusal: Refusal | None = None
    question: Question | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def model_mistake(self) -> bool:
        """The call was the model's error (repairable), not the tool's."""
        return self.outcome in MODEL_MISTAKES


def call_key(call: ToolCall) -> str:
    return f"{call.name}:{json.dumps(call.arguments, sort_keys=True, default=str)}"


async def call_tool(call: ToolCall, tools: Mapping[str, Tool]) -> CallResult:
    """Run one call; never raises for a model or tool error."""
    started_at = time.time()
    start = time.perf_counter()
    outcome: Outcome = "ok"
    origin: Origin = "tool"
    try:
        if call.name not in tools:
            names = ", ".join(tools) or "none"
            raise UnknownTool(f"There is no tool named {call.name!r}. Available tools: {names}.")
        output = await tools[call.name].call(call.arguments)
    except UnknownTool as e:
        outcome, output, origin = "unknown_tool", f"Error: {e}", "loop"
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
        origin=origin,
    )
