"""The making of one run's calls, behind the call runner (`CallRunner.call` checks a
call, then hands it here).

- Identical calls are made once: a repeat of a call that succeeded gets its result, a
  repeat of one that failed gets that failure, a call identical to one still running
  waits for it.
- A call to a tool that is not idempotent is recorded as an intent before it starts
  (`TraceStore.add_intent`); after an interruption, a call whose intent has no completed
  step is reported to the model instead of being made again.
- Each result of a call that ran is cut to size and handed to the `on_result` hooks (the
  call runner adds the tool's cost to the run's meter there).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bigloop.atoms.models.base import Origin, ToolCall
from bigloop.atoms.tool import Tool
from bigloop.runtime.call import CallResult, Outcome, call_key, call_tool
from bigloop.trace.records import valid_text
from bigloop.trace.store import TraceStore

ERROR_CHARS = 2000
"""Error text (a tool's exception, a failed check) longer than this is cut before the
model sees it."""


@dataclass(kw_only=True)
class Calls:
    """The calls of one run: what was made, what failed, what was started.

    Attributes:
        on_result: called with the result of each call that ran.
    """

    run_id: str
    tools: Mapping[str, Tool]
    store: TraceStore | None = None
    on_result: Sequence[Callable[[CallResult], None]] = ()
    intents: set[str] = field(default_factory=set)
    done: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    _inflight: dict[str, asyncio.Future[CallResult]] = field(default_factory=dict)

    def remember(self, call: ToolCall, output: str) -> None:
        """A call that completed before (a resumed run's stored steps)."""
        self.done[call_key(call)] = output

    async def make(self, call: ToolCall) -> CallResult:
        """Make `call` once (see the module); never raises for a model or tool error."""
        key = call_key(call)
        if (earlier := await self._repeat(call, key)) is not None:
            return earlier
        tool = self.tools.get(call.name)
        if tool is not None and not tool.idempotent:
            if key in self.intents:
                return made(
                    call,
                    "tool_error",
                    f"Error: this call to {call.name} was started before the run was "
                    "interrupted, and its outcome is unknown. It was not repeated because "
                    f"{call.name} is not idempotent; check its effect before calling again.",
                    "loop",
                )
            self.intents.add(key)
            if self.store:
                self.store.add_intent(self.run_id, key)
        return await self._run(call, key)

    async def _repeat(self, call: ToolCall, key: str) -> CallResult | None:
        """The result of an identical earlier (or running) call; None for a new call."""
        if key in self.done:
            return made(call, "repeated", self.done[key])
        if key in self.failed:
            return made(
                call,
                "repeated",
                f"You already made this exact call and it failed ({self.failed[key]}). "
                "Use another tool or other arguments.",
                "loop",
            )
        if key in self._inflight:
            first = await asyncio.shield(self._inflight[key])
            return made(call, "repeated", first.output)
        return None

    async def _run(self, call: ToolCall, key: str) -> CallResult:
        future: asyncio.Future[CallResult] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await call_tool(call, self.tools)
        finally:
            del self._inflight[key]
        result.output = valid_text(result.output if result.ok else clip(result.output))
        future.set_result(result)
        if result.ok:
            self.done[key] = result.output
        elif not result.model_mistake:
            self.failed[key] = result.output
        for hook in self.on_result:
            hook(result)
        return result


def made(call: ToolCall, outcome: Outcome, output: str, origin: Origin = "tool") -> CallResult:
    """The result of a call that was not run (refused, asked, repeated, not repeated)."""
    return CallResult(
        call=call,
        outcome=outcome,
        output=output,
        seconds=0.0,
        started_at=time.time(),
        origin=origin,
    )


def clip(text: str) -> str:
    """`text` cut at `ERROR_CHARS`, saying how much was cut."""
    if len(text) <= ERROR_CHARS:
        return text
    return f"{text[:ERROR_CHARS]}… [cut {len(text) - ERROR_CHARS} characters]"
