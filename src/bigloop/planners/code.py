"""The code planner: each model turn answers or writes one short Python program that
calls the tools as functions (CodeAct).

The loop's tools are plain functions inside the program (`program_stubs`: a signature and
a docstring each, from the tools' schemas). The program runs in the `run_python`
sandbox; a tool call inside it crosses the boundary on the bridge
(`bigloop.atoms.builtin.bridge`) and takes the same path as a JSON call — validation, the
call checks (approvals included), timeouts, the trace: each call is its own step. What
the program prints, or the end of its error, is the observation; the next turn fixes the
program or answers. A refused call is a `ToolError` inside the program (reason and
message), and the step the trace records.

The turn's form is constrained by a grammar (`{"program": ...}` or `{"answer": ...}`); a
program is compiled before it runs, and a syntax error is sent back without running it.
A call that needs the user's answer (a missing value, an approval) ends the program and
the run stops with the question, as in the other planners.

Not yet: a resumed run re-runs the program of its last turn from the start (its calls of
tools that are not idempotent are not repeated: the loop reports them instead, as it does
for any call a crash interrupted).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bigloop._errors import InputRequired, RunFailure
from bigloop.atoms.builtin.bridge import Bridge, BridgeReply, program_stubs
from bigloop.atoms.builtin.python_sandbox import (
    SandboxLimits,
    SandboxStopped,
    SandboxUnavailable,
    run_sandboxed,
    sandbox_problem,
)
from bigloop.atoms.models.base import Message, ToolCall
from bigloop.planners.rules import Answered, AnswerRules, CallAgain, Stop, default_rules
from bigloop.runtime.call import CallResult
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Question, Step

SYSTEM = """You answer the user's request. You may write one short Python 3 program that \
calls the functions below and prints what the answer needs; you will see what it printed. \
Use the request's own values; compute with Python (arithmetic, dates with datetime); \
print the result. When you know the answer, give it.

Reply with JSON only: {{"program": "<python code>"}} to run a program, or \
{{"answer": "<the answer>"}}.

Functions (call them with keyword arguments; a refused call raises ToolError):

{functions}"""

OBSERVED = """Your program printed:
{output}
If this answers the request "{task}", reply {{"answer": ...}}; otherwise fix the program."""

FAILED = """Your program stopped: {error}
Fix the program, or answer if you can."""

TURN = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"program": {"type": "string"}},
            "required": ["program"],
        },
        {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        },
    ]
}
"""The form of a turn: a program to run, or the answer."""


@dataclass(kw_only=True)
class CodePlanner:
    """Answer, or run a program that calls the tools, until answered (see the module).

    Attributes:
        limits: what one program may use (wall time, CPU, memory, output).
        max_calls: tool calls one program may make.
        rules: judge each answer before the run ends with it (`planners.rules`; default:
            all of them).
    """

    limits: SandboxLimits | None = None
    max_calls: int = 20
    rules: AnswerRules = field(default_factory=default_rules)
    name: str = "code"

    def __post_init__(self) -> None:
        if (problem := sandbox_problem()) is not None:  # now, saying what to install
            raise SandboxUnavailable(f"planner='code' runs programs in the sandbox: {problem}")

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        limits = self.limits or SandboxLimits(wall_s=30, max_output_chars=4000)
        settings = replace(ctx.settings, response_schema=TURN, max_tokens=768)
        made: list[tuple[ToolCall, CallResult | InputRequired]] = []
        bridge = Bridge(tools=ctx.specs, call=_caller(ctx, made), max_calls=self.max_calls)
        system = SYSTEM.format(functions=program_stubs(bridge) or "(none)")
        rules = self.rules.fresh()
        while True:
            ctx.check_budget()
            response = await ctx.model_turn(_with_system(system, ctx.messages), settings)
            reply = response.as_message()
            ctx.messages.append(reply)
            yield ctx.model_step(response, reply)
            turn = _read(response.text)
            if isinstance(turn, str):  # unreadable: say why, count it
                ctx.repair(turn)
                continue
            kind, text = turn
            if kind == "answer":
                verdict = rules.judge(Answered.of_run(ctx, text))
                match verdict:
                    case None:
                        ctx.finish(text)
                        return
                    case Stop(message=message):
                        raise RunFailure(message)
                    case CallAgain(calls=calls):
                        ctx.messages.append(Message(role="assistant", tool_calls=calls))
                        async for step in ctx.calls(calls):
                            yield step
                    case _:
                        ctx.repair(verdict.note or f"Your answer went back: {verdict.problem}.")
                continue
            if (problem := _syntax_error(text)) is not None:
                ctx.repair(FAILED.format(error=problem))
                continue
            bridge.calls.clear()
            made.clear()
            try:
                output = await run_sandboxed(text, limits, bridge=bridge)
                observation = OBSERVED.format(output=output.strip() or "(nothing)", task=ctx.task)
            except SandboxStopped as stopped:
                observation = FAILED.format(error=str(stopped)[-1500:])
            for call, result in made:
                if isinstance(result, InputRequired):
                    waiting = f"Not called: waiting for the user's answer to: {result.question}"
                    asked = result.record if isinstance(result.record, Question) else None
                    yield ctx.tool_step(
                        call, waiting, None, kind="ask", error="unanswered", question=asked
                    )
                    ctx.messages.append(
                        Message(role="assistant", content=result.question, origin="loop")
                    )
                    raise result
                yield replace(ctx.tool_step(call, result.output, result), message=None)
            ctx.messages.append(Message(role="user", content=observation, origin="loop"))


def _caller(
    ctx: RunContext, made: list[tuple[ToolCall, CallResult | InputRequired]]
) -> Callable[[str, dict[str, Any]], Awaitable[BridgeReply]]:
    """The bridge's `call`: one tool call through the loop's own path, kept in `made`."""

    async def call(name: str, arguments: dict[str, Any]) -> BridgeReply:
        tool_call = ToolCall(
            id=f"code-{len(ctx.steps)}-{len(made)}", name=name, arguments=arguments
        )
        try:
            result = await ctx.call(tool_call)
        except InputRequired as asked:
            made.append((tool_call, asked))
            return BridgeReply(
                ok=False, output=f"the user is asked: {asked.question}", reason="asked"
            )
        made.append((tool_call, result))
        if result.ok:
            return BridgeReply(ok=True, output=result.output)
        reason = "refused" if result.refusal is not None else "failed"
        return BridgeReply(ok=False, output=result.output, reason=reason)

    return call


def _with_system(system: str, messages: list[Message]) -> list[Message]:
    """The conversation under the planner's system prompt, the loop's own (the user's
    system text, demonstrations) after it."""
    if messages and messages[0].role == "system":
        merged = f"{system}\n\n{messages[0].content}"
        return [Message(role="system", content=merged, origin="loop"), *messages[1:]]
    return [Message(role="system", content=system, origin="loop"), *messages]


def _read(text: str) -> tuple[str, str] | str:
    """("program" | "answer", its text), or why the reply cannot be read."""
    try:
        data = json.loads(text)
    except ValueError:
        return 'Reply with JSON only: {"program": "..."} or {"answer": "..."}.'
    if isinstance(data, dict):
        for kind in ("answer", "program"):
            if isinstance(data.get(kind), str) and data[kind].strip():
                return kind, data[kind]
    return 'Reply with {"program": "<python code>"} or {"answer": "<the answer>"}.'


def _syntax_error(program: str) -> str | None:
    try:
        compile(program, "<program>", "exec")
    except SyntaxError as e:
        return f"SyntaxError: {e.msg} (line {e.lineno}): {(e.text or '').strip()}"
    except ValueError as e:  # a null byte
        return str(e)
    return None
