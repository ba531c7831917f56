"""The graph planner: plan a task graph in one model turn, run it concurrently, then join.

After LLMCompiler: one model turn writes every call the task needs as a plan
(`bigloop.planners.plan`); the executor starts each step as soon as the steps it uses have
finished, so independent lookups run at the same time, and streams every result as a
`Step`; a joiner turn then answers from the results, or — when a step failed or came back
empty — plans only what is missing, keeping every completed result (adaptive replanning).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from bigloop.atoms.models.base import (
    Message,
    ModelResponse,
    ModelSettings,
    Role,
    ToolCall,
    Usage,
)
from bigloop.atoms.models.prompts import describe_tools, to_plain_chat
from bigloop.planners.plan import InvalidPlan, Plan, PlanStep, is_empty, parse_plan, plan_schema
from bigloop.planners.plan import resolve as resolve_refs
from bigloop.planners.rules import (
    Answered,
    AnswerRules,
    CallAgain,
    Retry,
    Stop,
    act_on,
    default_rules,
)
from bigloop.policies.select import listed_items
from bigloop.runtime.call import CallResult
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Step

_DECODER = json.JSONDecoder()

Writes = Callable[[str], bool]
"""Whether a tool (by name) has side effects."""

PLAN_SYSTEM = """\
You plan the tool calls that complete a task. Tools (name, description, arguments schema):
{tools}

Reply with JSON: {{"steps": [{{"tool": "<tool name>", "arguments": {{...}}}}, ...]}}
The steps run at the same time, so write one step for each item, place or value the task \
asks about. A step can use the result of step N by writing "$N" as an argument value \
(steps are numbered from 1). Take values from the task, never from the descriptions.
Example with other tools. Task: "What are the populations of Peru and Chile together?" \
Plan: {{"steps": [{{"tool": "population", "arguments": {{"country": "Peru"}}}}, \
{{"tool": "population", "arguments": {{"country": "Chile"}}}}, \
{{"tool": "add", "arguments": {{"a": "$1", "b": "$2"}}}}]}}"""

JOIN = """\
Results of the steps:
{results}

Answer my task from these results: {task}
Reply with JSON: {{"answer": "<the final answer>"}}"""

REPLAN = """\
Results of the steps:
{results}

Some steps failed or came back empty. Reply with JSON, one of:
{{"answer": "<the final answer to my task>"}} if the results are enough;
{{"steps": [...]}} with new steps for only what is missing ("$N" uses result [N]).
My task: {task}"""


class _StepReader:
    """The complete step objects in a growing `{"steps": [...]}` text."""

    def __init__(self) -> None:
        self.text = ""
        self.stopped = False
        self._pos: int | None = None

    def feed(self, piece: str) -> list[Any]:
        self.text += piece
        if self._pos is None:
            start = self.text.find("[")
            if start < 0:
                return []
            self._pos = start + 1
        found: list[Any] = []
        while True:
            at = self._pos
            while at < len(self.text) and self.text[at] in " \n\t\r,":
                at += 1
            if at >= len(self.text) or self.text[at] == "]":
                return found
            try:
                value, end = _DECODER.raw_decode(self.text, at)
            except json.JSONDecodeError:
                return found
            found.append(value)
            self._pos = end


@dataclass(kw_only=True)
class GraphState:
    """A graph run's progress: every plan so far and each step's result."""

    steps: dict[int, PlanStep] = field(default_factory=dict)
    outputs: dict[int, str] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)
    calls: dict[int, ToolCall] = field(default_factory=dict)
    replans: int = 0
    plan_text: str = ""
    note: str | None = None
    last_reply: str = ""
    sent_back: bool = False  # an answer rule sent the last answer back: it may replan

    @property
    def next_id(self) -> int:
        return max([*self.steps, *self.outputs], default=0) + 1

    @property
    def unfinished(self) -> list[PlanStep]:
        return [s for s in self.steps.values() if s.id not in self.outputs]

    def troubled(self, writes: Writes) -> list[int]:
        """Steps that failed, or read nothing (an empty result from a tool with side
        effects, e.g. `None` from mkdir, is its normal success)."""

        def reads(sid: int) -> bool:
            return sid not in self.steps or not writes(self.steps[sid].tool)

        return sorted(
            i for i, out in self.outputs.items() if i in self.failed or (is_empty(out) and reads(i))
        )

    def add(self, plan: Plan) -> None:
        self.steps.update({s.id: s for s in plan.steps})


class GraphPlanner:
    """Plan → run concurrently → join (answer or replan).

    Args:
        max_replans: replans allowed after failed or empty steps.
        max_plan_steps: steps one plan may have.
        stream: run each step as soon as the model has written it (when the model can
            stream structured output).
        items: finds the items a task enumerates; the first plan must have at least one
            step per item (None: no minimum).
        rules: judge the joiner's answer (`planners.rules`; default: all of them); an
            answer sent back may replan (within `max_replans`).
    """

    name = "graph"

    def __init__(
        self,
        *,
        max_replans: int = 2,
        max_plan_steps: int = 12,
        stream: bool = True,
        items: Callable[[str], list[str]] | None = listed_items,
        rules: AnswerRules | None = None,
    ) -> None:
        self.rules = default_rules() if rules is None else rules
        self.max_replans = max_replans
        self.max_plan_steps = max_plan_steps
        self.stream = stream
        self.items = items

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        g = self.restore(ctx)
        rules = self.rules.fresh()
        while True:
            if g.unfinished:
                async for step in self._execute(ctx, g):
                    yield step
            ctx.meter.check()
            planning = not g.steps and bool(ctx.runner.specs)
            trouble = bool(g.troubled(ctx.runner.writes)) or g.sent_back
            replan = trouble and g.replans < self.max_replans and bool(ctx.runner.specs)
            messages = self._prompt(ctx, g, planning=planning, replan=replan)
            items = self.items(ctx.transcript.task) if planning and self.items else []
            min_steps = min(len(items), self.max_plan_steps) or 1
            schema = plan_schema(ctx.runner.specs, allow_answer=not planning, min_steps=min_steps)
            if not (planning or replan):
                schema = {
                    "type": "object",
                    "properties": {"answer": {"type": "string"}},
                    "required": ["answer"],
                }
            settings = replace(ctx.settings, response_schema=schema)
            if planning and self.stream and ctx.can_stream:
                source = self._stream_plan(ctx, g, messages, settings)
                async for step in self._execute(ctx, g, source):
                    yield step
                continue
            response = await ctx.model_turn(messages, settings)
            role = "plan" if planning else "join"
            reply = Message(role="assistant", content=response.text, name=role)
            yield ctx.model_step(response, reply, role=role)
            try:
                parsed = parse_plan(
                    response.text, ctx.runner.catalog, first_id=g.next_id, done=g.outputs
                )
            except InvalidPlan as e:
                g.note, g.last_reply = str(e), response.text
                ctx.meter.count_repair(str(e))
                continue
            g.note, g.sent_back = None, False
            if isinstance(parsed, str):
                verdict = rules.judge(Answered.of_run(ctx, parsed))
                if verdict is None:
                    ctx.finish(parsed)
                    self._record_history(ctx, g)
                    return
                async for step in _sent_back(ctx, g, verdict, response.text):
                    yield step
                continue
            if not planning:
                g.replans += 1
            g.plan_text = g.plan_text or response.text
            g.add(parsed)

    def _prompt(
        self, ctx: RunContext, g: GraphState, *, planning: bool, replan: bool
    ) -> list[Message]:
        """The planner's conversation. The joiner continues it (plan, then a user turn with
        the results) instead of starting a new one, so a local model reuses the cached
        prompt and pays only for the results."""
        system = PLAN_SYSTEM.format(tools=describe_tools(ctx.runner.specs))
        if ctx.transcript.system:
            system = f"{ctx.transcript.system}\n\n{system}"
        messages = [Message(role="system", content=system)]
        messages += _earlier_turns(ctx)
        messages.append(Message(role="user", content=ctx.transcript.task))
        if not planning:
            if g.plan_text:
                messages.append(Message(role="assistant", content=g.plan_text))
            results = _render_results(g)
            turn = (REPLAN if replan else JOIN).format(results=results, task=ctx.transcript.task)
            messages.append(Message(role="user", content=turn))
        if g.note:
            messages.append(Message(role="assistant", content=g.last_reply))
            messages.append(Message(role="user", content=g.note, origin="loop"))
        return messages

    async def _execute(
        self,
        ctx: RunContext,
        g: GraphState,
        source: AsyncGenerator[PlanStep | Step] | None = None,
    ) -> AsyncIterator[Step]:
        """Run every step whose inputs are ready, concurrently; yield each result as it
        completes. A step that needs a failed step's result is skipped, not run.

        With `source` (a plan being streamed), steps join the graph as they are written
        and start at once; the source's last item is the planner's own model step.
        """
        running: dict[asyncio.Future[Any], PlanStep | None] = {}
        if source is not None:
            running[asyncio.ensure_future(anext(source))] = None
        try:
            while True:
                for skipped in self._start_ready(ctx, g, running):
                    yield skipped
                if not running:
                    return
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                # `done` is a set: in the order they were started, so steps that finish
                # together are recorded in plan order, whatever their futures' hashes.
                for future in [f for f in running if f in done]:
                    owner = running.pop(future)
                    if owner is not None:
                        yield self._record(ctx, g, owner, future.result())
                        continue
                    assert source is not None
                    if (item := _next_written(future, g)) is not None:
                        yield item
                    if not future.exception():
                        running[asyncio.ensure_future(anext(source))] = None
        finally:
            for future in running:
                future.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            if isinstance(source, AsyncGenerator):
                await source.aclose()

    def _start_ready(
        self, ctx: RunContext, g: GraphState, running: dict[asyncio.Future[Any], PlanStep | None]
    ) -> list[Step]:
        """Start every unfinished step whose inputs are ready (into `running`); the steps
        recorded as skipped because a step they need failed."""
        busy = {s.id for s in running.values() if s is not None}
        skipped = []
        for step in g.unfinished:
            if step.id in busy:
                continue
            if failed := sorted(step.deps & g.failed):
                refs = ", ".join(f"${n}" for n in failed)
                skipped.append(self._record(ctx, g, step, _skipped(step, refs)))
            elif (step.deps | _order_deps(ctx.runner.writes, g, step)) <= set(g.outputs):
                running[asyncio.ensure_future(self._run_step(ctx, g, step))] = step
        return skipped

    async def _stream_plan(
        self, ctx: RunContext, g: GraphState, messages: list[Message], settings: ModelSettings
    ) -> AsyncGenerator[PlanStep | Step]:
        """The first plan, step by step as the model writes it (LLMCompiler's streaming).

        Generation stops early when the model repeats a step it already wrote (small
        models loop) or reaches `max_plan_steps`; a step that cannot run (a reference to
        a step not yet written) is left out and the joiner is told.
        """
        reader = _StepReader()
        accepted: list[dict[str, Any]] = []
        seen: set[str] = set()
        skipped: list[str] = []
        usage = Usage()
        stream = ctx.model_stream(messages, settings)
        try:
            async for piece in stream:
                if isinstance(piece, Usage):
                    usage = piece
                    break
                for raw in reader.feed(piece):
                    key = json.dumps(raw, sort_keys=True)
                    if key in seen or len(accepted) >= self.max_plan_steps:
                        reader.stopped = True
                        break
                    seen.add(key)
                    sid = g.next_id
                    try:
                        plan = parse_plan(
                            json.dumps({"steps": [raw]}),
                            ctx.runner.catalog,
                            first_id=sid,
                            done=g.steps,
                        )
                    except InvalidPlan as e:
                        skipped.append(str(e))
                        continue
                    assert isinstance(plan, Plan)
                    accepted.append(raw)
                    yield plan.steps[0]
                if reader.stopped:
                    break
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        if skipped:
            g.note = "Some planned steps were left out: " + " ".join(skipped)
        text = json.dumps({"steps": accepted}, ensure_ascii=False) if accepted else reader.text
        g.plan_text = g.plan_text or text
        response = ModelResponse(text=text, raw=text, usage=usage)
        reply = Message(role="assistant", content=text, name="plan")
        yield ctx.model_step(response, reply, role="plan")
        if not accepted:
            g.last_reply = reader.text
            g.note = "The plan had no step that can run. " + " ".join(skipped)
            ctx.meter.count_repair(g.note)

    async def _run_step(self, ctx: RunContext, g: GraphState, step: PlanStep) -> CallResult:
        arguments = resolve_refs(step.arguments, g.outputs)
        call = ToolCall(id=f"${step.id}", name=step.tool, arguments=arguments)
        g.calls[step.id] = call
        return await ctx.runner.call(call)

    def _record(self, ctx: RunContext, g: GraphState, step: PlanStep, result: CallResult) -> Step:
        g.outputs[step.id] = result.output
        if not result.ok:
            g.failed.add(step.id)
        message = Message(
            role="tool", content=result.output, tool_call_id=f"${step.id}", name=step.tool
        )
        return Step(
            run_id=ctx.transcript.run_id,
            index=len(ctx.transcript.steps),
            kind="tool",
            name=step.tool,
            input=result.call.arguments,
            output=result.output,
            error=None if result.ok else result.outcome,
            seconds=result.seconds,
            message=message,
            started_at=result.started_at,
        )

    def _record_history(self, ctx: RunContext, g: GraphState) -> None:
        """Put the run into `ctx.transcript.messages` as calls, results and the answer, so a later
        run can continue the conversation (`history=`)."""
        calls = [g.calls[i] for i in sorted(g.calls)]
        if calls:
            ctx.transcript.messages.append(Message(role="assistant", tool_calls=calls))
            for call in calls:
                sid = int(call.id[1:])
                ctx.transcript.messages.append(
                    Message(
                        role="tool",
                        content=g.outputs.get(sid, ""),
                        tool_call_id=call.id,
                        name=call.name,
                    )
                )
        ctx.transcript.messages.append(Message(role="assistant", content=ctx.answer or ""))

    def restore(self, ctx: RunContext) -> GraphState:
        """A graph run's progress rebuilt from its completed steps (empty for a new run)."""
        g = GraphState()
        for s in ctx.transcript.steps:
            if s.kind == "model" and s.message is not None and s.message.name in ("plan", "join"):
                try:
                    parsed = parse_plan(
                        s.message.content, ctx.runner.catalog, first_id=g.next_id, done=g.outputs
                    )
                except InvalidPlan:
                    continue
                if isinstance(parsed, Plan):
                    g.replans += s.message.name == "join"
                    g.plan_text = g.plan_text or s.message.content
                    g.add(parsed)
            elif s.kind in ("tool", "ask") and (sid := _step_ref(s)) is not None:
                g.outputs[sid] = s.output if isinstance(s.output, str) else json.dumps(s.output)
                g.calls[sid] = ToolCall(id=f"${sid}", name=s.name, arguments=s.input)
                if s.error:
                    g.failed.add(sid)
        return g


def _order_deps(writes: Writes, g: GraphState, step: PlanStep) -> set[int]:
    """Earlier steps this one must wait for although it uses none of their results: tools
    with side effects (not idempotent) keep the planned order — a write waits for every
    earlier step, and every step waits for the earlier writes. Reads between two writes
    run concurrently."""

    earlier = [s for s in g.steps.values() if s.id < step.id]
    if writes(step.tool):
        return {s.id for s in earlier}
    return {s.id for s in earlier if writes(s.tool)}


def _step_ref(step: Step) -> int | None:
    """The plan step id ("$N") a stored tool step answered, if it came from a plan."""
    ref = step.message.tool_call_id if step.message else None
    return int(ref[1:]) if ref and ref.startswith("$") and ref[1:].isdigit() else None


def _next_written(future: asyncio.Future[Any], g: GraphState) -> Step | None:
    """What a streamed plan gave next: a plan step joins the graph (None), the planner's
    own model step is returned; the end of the stream gives None."""
    try:
        item = future.result()
    except StopAsyncIteration:
        return None
    if isinstance(item, Step):
        return item
    g.steps[item.id] = item
    return None


def _skipped(step: PlanStep, refs: str) -> CallResult:
    call = ToolCall(id=f"${step.id}", name=step.tool, arguments=step.arguments)
    return CallResult(
        call=call,
        outcome="tool_error",
        output=f"Error: not run, because {refs} failed.",
        seconds=0.0,
        started_at=time.time(),
    )


def _render_results(g: GraphState) -> str:
    lines = []
    for sid in sorted(g.outputs):
        call = g.calls.get(sid)
        args = json.dumps(call.arguments if call else g.steps[sid].arguments, ensure_ascii=False)
        output = _readable(g.outputs[sid])
        if is_empty(output):
            output = f"{output or '(nothing)'} (empty result)"
        lines.append(f"[{sid}] {g.steps[sid].tool}({args}) -> {output}")
    return "\n".join(lines)


def _readable(output: str) -> str:
    """A flat JSON object as `key: value` pairs, which small models read more reliably."""
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return output
    if isinstance(value, dict) and all(not isinstance(v, dict | list) for v in value.values()):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return output


def _earlier_turns(ctx: RunContext) -> list[Message]:
    """Earlier turns of a multi-turn conversation, as plain chat messages."""
    earlier = [
        m for m in ctx.transcript.messages[: ctx.transcript.task_index] if m.role != "system"
    ]
    if not earlier:
        return []
    chat = to_plain_chat(earlier, [])[1:]
    return [Message(role=cast(Role, c["role"]), content=c["content"]) for c in chat]


async def _sent_back(
    ctx: RunContext, g: GraphState, verdict: Retry | CallAgain | Stop, reply: str
) -> AsyncIterator[Step]:
    """An answer an answer rule sent back: its note goes to the next turn, which may
    replan; calls to make again are made (a refused guess: the user is asked)."""
    if isinstance(verdict, Retry):
        g.note, g.last_reply, g.sent_back = verdict.note, reply, verdict.tools
        ctx.meter.count_repair(f"an answer sent back: {verdict.problem}")
        return
    async for step in act_on(ctx, verdict):
        yield step
