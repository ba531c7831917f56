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

A turn is free text (`ModelSettings.free_text`): a fenced ```python block is a program,
anything else the answer — a coder model writes fenced code natively, while code inside a
JSON string came back with the string's closing brace in it. A program is compiled before
it runs, and a syntax error is sent back without running it.
A call that needs the user's answer (a missing value, an approval) ends the program and
the run stops with the question, as in the other planners.

A resumed run asks the model for its next turn; a program that makes calls the run
already made gets their recorded results instead of calling again (the loop's
identical-call rule, which a resume rebuilds from the stored steps, programs' calls
included), so nothing is called twice. A call that was started but never recorded (the
run was killed inside it) is not made again when its tool is not idempotent: the program
gets a ToolError saying so.
"""

from __future__ import annotations

import ast
import builtins
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bigloop._errors import InputRequired
from bigloop.atoms.builtin.bridge import Bridge, BridgeReply, program_stubs, python_name
from bigloop.atoms.builtin.python_sandbox import (
    SandboxLimits,
    SandboxStopped,
    SandboxUnavailable,
    run_sandboxed,
    sandbox_problem,
)
from bigloop.atoms.models.base import Message, ModelSettings, Origin, ToolCall
from bigloop.planners.rules import (
    Answered,
    AnswerRules,
    Problem,
    Retry,
    Verdict,
    act_on,
    default_rules,
    is_calculation,
)
from bigloop.runtime.call import CallResult
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Question, Step, StepError

SYSTEM = """You answer the user's request. You can run Python 3: reply with one \
```python code block of a few plain lines that calls the functions below and prints the \
value the request asks for; you will see what it printed. The functions are already \
defined in the program: call them, never define them again. When a function below does \
what the request asks, call it with the request's values; compute with Python \
(arithmetic, datetime for dates) only what no function does, never in your head. When \
the printed output answers the request, reply with the answer alone, in words, without \
code.

Functions (already defined; call them with keyword arguments; a refused call raises \
ToolError):

{functions}
{context}
{example}"""

CONTEXT = """
What the functions without arguments return now:
{returns}
"""
"""Read-only tools that take no arguments (a database's schema, a folder's listing,
today's date) are called once before the first turn, and what they return is shown: a
program that knows the tables and files it works on does not guess them."""

EXAMPLE = """Example, with a function get_temperature(city) defined. Request: "How \
warm is it in Oslo, in Fahrenheit?" Reply:
```python
celsius = get_temperature(city="Oslo")
print(celsius * 9 / 5 + 32)
```
Then, after "Your program printed: 41.0", the reply: 41 °F."""
"""One short demonstration of the turn's two forms: a program that calls a function and
computes on its result, then the answer (a request's functions differ)."""

REDEFINED = (
    "{names} already defined in the program: call {them}, do not define {them} again. "
    "Reply with the ```python program that calls {them}."
)
"""A program that defines a function named like one of the tools is sent back unrun: it
would shadow the tool, and its calls would never reach the loop."""

UNDEFINED = (
    "{names} {verb} not defined in the program: it has only the functions listed above "
    "({functions}) and Python's own. Reply with a ```python program that uses them."
)
"""A program that uses a name it never defines, imports or gets from the tools (an
invented function, a table read as a variable) is sent back unrun: it would stop with a
NameError."""

REPEATED = """That is the program that already stopped with: {error}
Write a different program, or answer if you can."""
"""A program resent unchanged after it stopped with an error is not run again: the model
is told so, and its next turn is sampled (`RESAMPLE`) — decoded greedily, the same
conversation tends to give the same program again."""

RESAMPLE = 0.7
"""The temperature of the turn after a failed program was resent unchanged (seeded by
the turn, so a run is repeatable)."""

OBSERVED = """Your program printed:
{output}
If this answers the request "{task}", reply with the answer alone; otherwise fix the \
program."""

FAILED = """Your program stopped: {error}
Fix the program, or answer if you can."""

NOTES: dict[Problem, str] = {
    Problem.FROM_MEMORY: (
        "You answered {value} without running a program, and the request does not say it. "
        "Reply with a ```python program that computes it and prints it."
    ),
    Problem.UNEVALUATED: (
        "Your answer is a calculation left unevaluated. Reply with a ```python program "
        "that computes it and prints the result."
    ),
    Problem.UNUSED_QUANTITY: (
        "Your answer does not use {value} from the request yet. Reply with a ```python "
        "program that uses it and prints the result."
    ),
}
"""The answer rules' notes in the code planner's terms (a program, not a tool call); the
rule's own note for any other problem."""

NOTHING = "(nothing)"
"""What the model is shown for a program that printed nothing (its step's output is "")."""

PRINT_IT = (
    "That program printed nothing. Reply with a ```python program that prints the value "
    "the request asks for."
)

PROGRAM = "python_program"
"""The name of a program's own step in the trace (input: its code; output: what it
printed, or how it stopped)."""

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S)
"""A fenced program (its closing fence may be cut off at the token limit)."""


@dataclass(kw_only=True)
class CodePlanner:
    """Answer, or run a program that calls the tools, until answered (see the module).

    Attributes:
        limits: what one program may use (wall time, CPU, memory, output).
        max_calls: tool calls one program may make.
        rules: judge each answer before the run ends with it (`planners.rules`; default:
            all of them).
        stop_after_calls: end the run (answer None) after the first program whose tool
            calls all succeeded — for benchmarks that score the calls a program makes
            (BFCL's `--mode code`).
        context: call the read-only tools without arguments once and show their results
            (off where the calls themselves are scored).
    """

    limits: SandboxLimits | None = None
    max_calls: int = 20
    rules: AnswerRules = field(default_factory=default_rules)
    stop_after_calls: bool = False
    context: bool = True
    name: str = "code"

    def __post_init__(self) -> None:
        if (problem := sandbox_problem()) is not None:  # now, saying what to install
            raise SandboxUnavailable(f"planner='code' runs programs in the sandbox: {problem}")

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        limits = self.limits or SandboxLimits(wall_s=30, max_output_chars=4000)
        settings = replace(ctx.settings, free_text=True, max_tokens=768)
        made: list[tuple[ToolCall, CallResult | InputRequired]] = []
        bridge = Bridge(tools=ctx.runner.specs, call=_caller(ctx, made), max_calls=self.max_calls)
        functions = program_stubs(bridge) or "(none)"
        returns: list[str] = []
        if self.context:
            async for step in _context(ctx, returns):
                yield step
        context = CONTEXT.format(returns="\n".join(returns)) if returns else ""
        system = SYSTEM.format(functions=functions, context=context, example=EXAMPLE)
        rules = self.rules.fresh()
        first = len(ctx.transcript.steps)  # the context calls are no results of this run's programs
        turn_settings = settings
        while True:
            ctx.meter.check()
            messages = _with_system(system, ctx.transcript.messages)
            response = await ctx.model_turn(messages, turn_settings)
            turn_settings = settings
            reply = response.as_message()
            ctx.transcript.messages.append(reply)
            yield ctx.model_step(response, reply)
            kind, text = _read(response.text)
            if kind == "program":
                kind, text, turn_settings = _again(ctx, text, settings)
                if kind == "sent_back":
                    continue
            if kind == "answer":
                verdict = rules.judge(Answered.of_run(ctx, text, since=first))
                if verdict is None:
                    ctx.finish(text)
                    return
                async for step in _sent_back(ctx, verdict):
                    yield step
                continue
            if (note := _unrunnable(text, bridge)) is not None:
                ctx.repair(note)
                continue
            async for step in self._run(ctx, text, bridge, made, limits):
                yield step
            if (
                self.stop_after_calls
                and made
                and all(isinstance(r, CallResult) and r.ok for _, r in made)
            ):
                return

    async def _run(
        self,
        ctx: RunContext,
        code: str,
        bridge: Bridge,
        made: list[tuple[ToolCall, CallResult | InputRequired]],
        limits: SandboxLimits,
    ) -> AsyncIterator[Step]:
        """Run one program: each tool call it made, then the program itself, as steps;
        what it printed (or how it stopped) goes to the model."""
        bridge.calls.clear()
        made.clear()
        started = time.time()
        try:
            printed = (await run_sandboxed(code, limits, bridge=bridge)).strip()
            observation = OBSERVED.format(output=printed or NOTHING, task=ctx.transcript.task)
            error: StepError | None = None
        except SandboxStopped as stopped:
            printed = str(stopped)[-1500:]
            observation, error = FAILED.format(error=printed), "tool_error"
        for call, result in made:
            if isinstance(result, InputRequired):
                waiting = f"Not called: waiting for the user's answer to: {result.question}"
                asked = result.record if isinstance(result.record, Question) else None
                yield ctx.runner.tool_step(
                    call, waiting, None, kind="ask", error="unanswered", question=asked
                )
                ctx.transcript.messages.append(
                    Message(role="assistant", content=result.question, origin="loop")
                )
                raise result
            yield replace(ctx.runner.tool_step(call, result.output, result), message=None)
        program = ToolCall(
            id=f"program-{len(ctx.transcript.steps)}", name=PROGRAM, arguments={"code": code}
        )
        step = ctx.runner.tool_step(program, printed, None, error=error)
        yield replace(step, message=None, started_at=started, seconds=time.time() - started)
        # What a program printed is what its tools returned, computed on: the tools' words
        # (grounding evidence in later turns too, as a tool's reply is in ReAct); how a
        # program stopped may quote a refusal, and stays the loop's.
        said: Origin = "tool" if error is None else "loop"
        ctx.transcript.messages.append(Message(role="user", content=observation, origin=said))


def _caller(
    ctx: RunContext, made: list[tuple[ToolCall, CallResult | InputRequired]]
) -> Callable[[str, dict[str, Any]], Awaitable[BridgeReply]]:
    """The bridge's `call`: one tool call through the loop's own path, kept in `made`."""

    async def call(name: str, arguments: dict[str, Any]) -> BridgeReply:
        tool_call = ToolCall(
            id=f"code-{len(ctx.transcript.steps)}-{len(made)}", name=name, arguments=arguments
        )
        try:
            result = await ctx.runner.call(tool_call)
        except InputRequired as asked:
            made.append((tool_call, asked))
            return BridgeReply(
                ok=False, output=f"the user is asked: {asked.question}", reason="asked"
            )
        made.append((tool_call, result))
        # A repeat of a call that returned (this run, or before a resume) is its result:
        # a program is code, and calling twice with the same values is no mistake in it.
        if result.ok or (result.outcome == "repeated" and result.origin == "tool"):
            return BridgeReply(ok=True, output=result.output)
        reason = "refused" if result.refusal is not None else "failed"
        return BridgeReply(ok=False, output=result.output, reason=reason)

    return call


def program_reply(calls: Sequence[ToolCall], computed: str | None = None) -> str:
    """`calls` as a reply this planner runs: one fenced program that prints each call's
    result, in order; with `computed` (an expression of `r1`, `r2`, ... — the calls'
    results), one that keeps the results under those names and prints the expression.
    A verified run's program, for training (`optimize.finetune`)."""
    lines = []
    for i, call in enumerate(calls, 1):
        arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        made = f"{python_name(call.name)}({arguments})"
        lines.append(f"r{i} = {made}" if computed is not None else f"print({made})")
    if computed is not None:
        lines.append(f"print({computed})")
    return "```python\n" + "\n".join(lines) + "\n```"


def _with_system(system: str, messages: list[Message]) -> list[Message]:
    """The conversation under the planner's system prompt, the loop's own (the user's
    system text, demonstrations) after it."""
    if messages and messages[0].role == "system":
        merged = f"{system}\n\n{messages[0].content}"
        return [Message(role="system", content=merged, origin="loop"), *messages[1:]]
    return [Message(role="system", content=system, origin="loop"), *messages]


def _read(text: str) -> tuple[str, str]:
    """("program", its code) when the reply holds a fenced program or is a bare
    arithmetic expression ("2 ** 20": code without its fence, printed), else ("answer",
    the reply)."""
    if (fenced := _FENCE.search(text)) is not None and fenced.group(1).strip():
        return "program", fenced.group(1)
    if _bare_expression(text.strip()):
        return "program", f"print({text.strip()})"
    return "answer", text.strip()


def _bare_expression(text: str) -> bool:
    """Whether `text` is arithmetic left unevaluated (`rules.is_calculation`: not a date
    or a plain number) that Python reads as written."""
    return is_calculation(text) and _syntax_error(f"print({text})") is None


def _unrunnable(program: str, bridge: Bridge) -> str | None:
    """Why `program` is sent back without running — a syntax error, a function of its
    own named like a tool, a name it never defines — as the note to the model; None: it
    runs."""
    if (problem := _syntax_error(program)) is not None:
        return FAILED.format(error=problem)
    if shadowed := _redefined(program, bridge):
        return _shadowing_note(shadowed)
    if missing := _undefined(program, bridge):
        functions = ", ".join(python_name(t.name) for t in bridge.tools) or "none"
        verb = "are" if len(missing) > 1 else "is"
        return UNDEFINED.format(names=", ".join(missing), verb=verb, functions=functions)
    return None


_GIVEN = {*dir(builtins), "ToolError", "__name__", "__file__"}
"""Names a program may use without defining them (Python's builtins, the bridge's
`ToolError`)."""


def _undefined(program: str, bridge: Bridge) -> list[str]:
    """The names `program` reads but never binds anywhere (assignment, def, class, import,
    loop or comprehension variable, parameter, `except ... as`, `with ... as`) and that
    are neither a tool's function nor a builtin; in order of first use. Where a name is
    bound does not matter here (no flow analysis): only names bound nowhere are found.
    After `from m import *` any name may be bound: none is reported."""
    tree = ast.parse(program)
    if any(isinstance(n, ast.alias) and n.name == "*" for n in ast.walk(tree)):
        return []
    bound = {python_name(t.name) for t in bridge.tools} | _GIVEN
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    used = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return [name for name in dict.fromkeys(used) if name not in bound]


def _redefined(program: str, bridge: Bridge) -> list[str]:
    """The tools' function names that `program` defines itself (a `def` or a class)."""
    names = {python_name(t.name) for t in bridge.tools}
    return sorted(
        {
            node.name
            for node in ast.walk(ast.parse(program))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name in names
        }
    )


def _shadowing_note(names: list[str]) -> str:
    listed = ", ".join(names)
    many = len(names) > 1
    return REDEFINED.format(
        names=f"{listed} are" if many else f"{listed} is", them="them" if many else "it"
    )


def _syntax_error(program: str) -> str | None:
    try:
        compile(program, "<program>", "exec")
    except SyntaxError as e:
        return f"SyntaxError: {e.msg} (line {e.lineno}): {(e.text or '').strip()}"
    except ValueError as e:  # a null byte
        return str(e)
    return None


async def _sent_back(ctx: RunContext, verdict: Verdict) -> AsyncIterator[Step]:
    """An answer an answer rule sent back, a `Retry` said in program terms (`NOTES`)."""
    if not isinstance(verdict, Retry):
        async for step in act_on(ctx, verdict):
            yield step
        return
    template = NOTES.get(verdict.problem)
    text = template.format(value=verdict.value) if template else verdict.note
    ctx.repair(text or f"Your answer went back: {verdict.problem}.")


def _again(ctx: RunContext, code: str, settings: ModelSettings) -> tuple[str, str, ModelSettings]:
    """A program the run has seen before: ("answer", what it printed) when it ran to its
    end and printed something; ("sent_back", "") with a note when it printed nothing, or
    when it stopped with an error (the next turn then sampled, `REPEATED`); a new
    program stays ("program", its code). With the next turn's settings."""
    if (failed := _failed_before(ctx, code)) is not None:
        ctx.repair(REPEATED.format(error=failed))
        return "sent_back", "", _resampled(settings, ctx)
    if (printed := _ran_before(ctx, code)) is None:
        return "program", code, settings
    if not printed:
        ctx.repair(PRINT_IT)
        return "sent_back", "", settings
    return "answer", printed, settings  # the same program: its output is the answer


def _failed_before(ctx: RunContext, code: str) -> str | None:
    """How the same program stopped when it last ran in this run (None: it has not run,
    or it ran to its end)."""
    for step in reversed(ctx.transcript.steps):
        if step.kind == "tool" and step.name == PROGRAM and isinstance(step.input, dict):
            if step.input.get("code", "").strip() == code.strip():
                return None if step.error is None else str(step.output)[-300:]
    return None


def _resampled(settings: ModelSettings, ctx: RunContext) -> ModelSettings:
    """`settings` sampled at `RESAMPLE`, seeded by the turn (a rerun samples the same)."""
    seed = (settings.seed or 0) + ctx.meter.model_turns
    return replace(settings, temperature=RESAMPLE, seed=seed)


def _ran_before(ctx: RunContext, code: str) -> str | None:
    """What the same program printed when it last ran in this run (None: it has not run,
    or it stopped with an error)."""
    for step in reversed(ctx.transcript.steps):
        if step.kind == "tool" and step.name == PROGRAM and isinstance(step.input, dict):
            if step.input.get("code", "").strip() == code.strip() and step.error is None:
                return str(step.output)
    return None


_CONTEXT_CHARS = 1500
"""What one context tool's result may add to the prompt."""


async def _context(ctx: RunContext, returns: list[str]) -> AsyncIterator[Step]:
    """Call each offered read-only tool that takes no arguments, once (`CONTEXT`): each
    call is a step; its result, cut at `_CONTEXT_CHARS`, is added to `returns`. A run
    resumed after them makes no call again (the loop's identical-call rule)."""
    for spec in ctx.runner.specs:
        if spec.effect != "read" or spec.parameters.get("properties"):
            continue
        call = ToolCall(id=f"context-{spec.name}", name=spec.name, arguments={})
        result = await ctx.runner.call(call)
        yield replace(ctx.runner.tool_step(call, result.output, result), message=None)
        if result.ok:
            text = str(result.output)
            cut = text[:_CONTEXT_CHARS] + (" …" if len(text) > _CONTEXT_CHARS else "")
            returns.append(f"{python_name(spec.name)}() -> {cut}")
