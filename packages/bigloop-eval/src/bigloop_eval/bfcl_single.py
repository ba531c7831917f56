"""BFCL's single-turn categories: one request, scored on the calls made for it.

- raw: the model is called once with the functions through its own chat template (or its
  server's native tool calling) and its output parsed leniently, as without bigloop.
- loop: the case runs through bigloop's `Loop` (ReAct planner), the case's functions as
  tools that only acknowledge the call: nothing is executed, BFCL scores the calls. The
  run stops after the first model turn whose calls were all made; turns with mistakes
  (unknown function, invalid arguments, unreadable output) get the Loop's feedback and
  are retried, `max_repairs` times at most. A turn without calls answers the request
  (how irrelevance cases pass).
- retrieve: loop mode, offered only the functions a registry of every BFCL function
  finds for the request.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from typing import Any

from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.models.base import ChatModel, Message, ToolCall, ToolSpec, Usage
from bigloop.atoms.models.local import LocalModel
from bigloop.atoms.models.parse import parse_reply
from bigloop.atoms.schema import schema_problems
from bigloop.atoms.tool import Tool
from bigloop.config import LoopConfig
from bigloop.loop import Loop
from bigloop.parts import Policies
from bigloop.planners.code import PROGRAM, CodePlanner
from bigloop.runtime.call import MODEL_MISTAKES, call_key
from bigloop.runtime.context import Budget, Planner
from bigloop.trace.records import RunResult
from bigloop.trace.store import TraceStore
from bigloop_eval.bfcl_data import Case, function_cards
from bigloop_eval.bfcl_results import RETRIEVE_K, SETTINGS, CaseResult, Mode
from bigloop_eval.bfcl_score import score

Calls = list[tuple[str, Any]]


async def run_case(
    case: Case,
    model: ChatModel,
    mode: Mode,
    max_repairs: int = 2,
    config: LoopConfig | None = None,
) -> CaseResult:
    """Run and score one case; a failing model is a failed case, never a crash.

    Args:
        config: loop and retrieve modes: the instructions, demonstrations, tool docs and
            switched-off policies of this `LoopConfig` (an optimized one, say). The
            model, tools and budget stay the case's and BFCL's.

    Raises:
        UserError: graph mode, which is for the multi-turn categories.
    """
    if mode == "graph":
        raise UserError("--mode graph is for the multi-turn categories; use loop here.")
    usage = Usage()
    start = time.perf_counter()
    raws: list[str] = []
    repairs = 0
    error = None
    try:
        if mode == "raw":
            calls = await _raw_calls(case, model, usage, raws)
        else:
            specs = await asyncio.to_thread(_retrieved, case) if mode == "retrieve" else case.tools
            run = await loop_run(
                case, model, specs, max_repairs, config or LoopConfig(), code=mode == "code"
            )
            usage.add(run.usage)
            calls, repairs, raws = made_calls(run), _corrections(run), _outputs(run)
            if run.status == "failed":
                calls, error = [], run.error or "the run failed"
    except ModelUnavailable as e:
        calls, error = [], str(e)
    tools = {t.name: t for t in case.tools}
    valid_calls = all(n in tools and not schema_problems(a, tools[n].parameters) for n, a in calls)
    result = score(case, calls)
    return CaseResult.measured(
        case,
        mode,
        usage,
        start,
        valid=result.valid,
        error_type=result.error_type,
        error=error,
        calls=[[n, a] for n, a in calls],
        valid_calls=valid_calls,
        repairs=repairs,
        raw=raws,
    )


async def _raw_calls(case: Case, model: ChatModel, usage: Usage, raws: list[str]) -> Calls:
    if isinstance(model, LocalModel):
        tools = [t.to_openai() for t in case.tools]
        raw, used = await asyncio.to_thread(
            model.complete_chat, case.messages, settings=SETTINGS, tools=tools
        )
        usage.add(used)
        raws.append(raw)
        return parse_reply(raw).calls
    response = await model.chat(_messages(case), case.tools, SETTINGS)
    usage.add(response.usage)
    raws.append(response.raw)
    return [(c.name, c.arguments) for c in response.tool_calls]


async def loop_run(
    case: Case,
    model: ChatModel,
    specs: list[ToolSpec],
    max_repairs: int,
    config: LoopConfig,
    store: TraceStore | None = None,
    *,
    code: bool = False,
) -> RunResult:
    """The case's last message as the Loop's task, the messages before it as history;
    traced to `store` when given. `code`: the code planner — the model writes one program
    calling the functions, and its calls (in order) are what is scored."""
    # BFCL scores the calls, not an answer: no clarifying questions, no answer checks,
    # and the run stops once a turn's calls are made. The other policies are the loop's.
    policies = Policies.build([*config.off, "check_answers"], clarify="off")
    planner: Planner = policies.react(stop_after_calls=True)
    if code:
        planner = CodePlanner(stop_after_calls=True, context=False, rules=policies.rules.answer)
    loop = Loop(
        model,
        config.documented([_acknowledging_tool(s) for s in specs]),
        system=config.instructions(),
        planner=planner,
        checks=policies.checks,
        selectors=policies.selectors,
        # Up to `max_repairs` corrections, counted in model turns (as before the Loop ran
        # BFCL): the Loop counts each invalid call, and a parallel reply has several.
        budget=Budget(max_steps=max_repairs + 1, max_repairs=99),
        settings=SETTINGS,
        store=store,
    )
    *history, task = _messages(case)
    return await loop.run(task.content, history=history)


def made_calls(run: RunResult) -> Calls:
    """The calls a run made, in order, identical ones once: what BFCL scores."""
    calls: dict[str, tuple[str, Any]] = {}
    for step in run.steps:
        if step.kind == "tool" and step.error is None and step.name != PROGRAM:
            key = call_key(ToolCall(id="", name=step.name, arguments=step.input))
            calls.setdefault(key, (step.name, step.input))
    return list(calls.values())


def _corrections(run: RunResult) -> int:
    """The run's corrections: unreadable model turns and calls that were model mistakes."""
    return sum(
        1
        for s in run.steps
        if (s.kind == "model" and s.error is not None)
        or (s.kind == "tool" and s.error in MODEL_MISTAKES)
    )


def _outputs(run: RunResult) -> list[str]:
    return [
        s.output if isinstance(s.output, str) else json.dumps(s.output, ensure_ascii=False)
        for s in run.steps
        if s.kind == "model"
    ]


def _acknowledging_tool(spec: ToolSpec) -> Tool:
    """A BFCL function as a tool: validated against its schema, never executed."""

    def acknowledge(**arguments: Any) -> str:
        return f"{spec.name} was called."

    return Tool.from_schema(spec.name, spec.description, spec.parameters, acknowledge, inline=True)


@functools.cache
def bfcl_registry() -> Any:
    """A registry of every distinct BFCL function (single-turn files), hybrid-indexed;
    saved in the user cache after the first build (embedding takes ~20 s)."""
    from platformdirs import user_cache_path

    from bigloop.registry import Registry

    folder = user_cache_path("bigloop") / "bfcl-registry-2026.3.23-v2"
    if (folder / "hnsw.usearch").is_file():
        registry = Registry.load(folder)
    else:
        registry = Registry()
        registry.add_cards(function_cards())
        registry.build()
        registry.save(folder)
    return registry


def _retrieved(case: Case) -> list[ToolSpec]:
    """The top functions the registry finds for the case's request, as the model sees them
    (names without the registry's #id suffix)."""
    query = " ".join(m["content"] for m in case.messages if m["role"] == "user")
    hits = bfcl_registry().search(query, k=RETRIEVE_K)
    specs: dict[str, ToolSpec] = {}
    for h in hits:
        name = h.card.name.split("#")[0]
        specs.setdefault(
            name,
            ToolSpec(name=name, description=h.card.description, parameters=h.card.input_schema),
        )
    return list(specs.values())


def _messages(case: Case) -> list[Message]:
    return [Message(role=m["role"], content=m["content"]) for m in case.messages]  # type: ignore[arg-type]
