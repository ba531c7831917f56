"""`bigloop eval bfcl`: the Berkeley Function Calling Leaderboard, raw model vs the loop.

- raw: the model is called once with the functions through its own chat template (or its
  server's native tool calling) and its output parsed leniently, as without bigloop.
- loop: the case goes through bigloop's calling pipeline: grammar-constrained calls,
  type adapters, schema validation, and repair by feedback, a bounded number of times.

Each case's result is appended to a JSON Lines file as it completes; a rerun skips the
cases already there, so an interrupted eval resumes without scoring anything twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.models.base import ChatModel, Message, ModelSettings, ToolCall, ToolSpec, Usage
from bigloop.atoms.models.local import LocalModel
from bigloop.atoms.models.parse import parse_reply
from bigloop.atoms.models.spec import ModelSpec
from bigloop.eval.bfcl_data import MULTI_TURN, Case, load_cases
from bigloop.eval.bfcl_score import score
from bigloop.schedule.call import call_key, prepare_call, schema_problems
from bigloop.schedule.select import relevant_tools

Mode = Literal["raw", "loop", "graph", "retrieve"]
"""raw: the model alone; loop: bigloop's Loop (ReAct planner); graph: the Loop with the
task-graph planner (multi-turn categories); retrieve: the Loop, offered only the top
`RETRIEVE_K` functions retrieved from a registry of every BFCL function (~2,900) instead of
the case's own list."""
RETRIEVE_K = 3
SETTINGS = ModelSettings(temperature=0.0, max_tokens=256)


@dataclass(kw_only=True)
class CaseResult:
    id: str
    category: str
    mode: str
    valid: bool
    error_type: str | None
    calls: list[list[Any]]
    valid_calls: bool
    repairs: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_seconds: float = 0.0
    generation_seconds: float = 0.0
    error: str | None = None
    raw: list[str] = field(default_factory=list)
    asked: int = 0
    """Turns where the loop asked the user instead of calling (multi-turn, --clarify)."""

    @classmethod
    def measured(
        cls, case: Any, mode: str, usage: Usage, start: float, *, error: str | None, **fields: Any
    ) -> CaseResult:
        """A result with the case's identity, the usage's tokens and seconds since `start`;
        a model error overrides the checker's error type."""
        if error is not None:
            fields["error_type"] = "model_error"
        return cls(
            id=case.id,
            category=case.category,
            mode=mode,
            error=error,
            seconds=time.perf_counter() - start,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            prompt_seconds=usage.prompt_seconds,
            generation_seconds=usage.generation_seconds,
            **fields,
        )


async def run_case(case: Case, model: ChatModel, mode: Mode, max_repairs: int = 2) -> CaseResult:
    """Run and score one case; a failing model is a failed case, never a crash."""
    usage = Usage()
    start = time.perf_counter()
    raws: list[str] = []
    repairs = 0
    error = None
    try:
        if mode == "raw":
            calls = await _raw_calls(case, model, usage, raws)
        elif mode == "retrieve":
            offered = await asyncio.to_thread(_retrieved, case)
            calls, repairs = await _loop_calls(case, model, usage, raws, max_repairs, offered)
        else:
            calls, repairs = await _loop_calls(case, model, usage, raws, max_repairs)
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


async def _raw_calls(
    case: Case, model: ChatModel, usage: Usage, raws: list[str]
) -> list[tuple[str, Any]]:
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


async def _loop_calls(
    case: Case,
    model: ChatModel,
    usage: Usage,
    raws: list[str],
    max_repairs: int,
    offered: list[ToolSpec] | None = None,
) -> tuple[list[tuple[str, Any]], int]:
    """Ask, adapt, validate; on a problem tell the model exactly what was wrong and ask again.

    Args:
        offered: the functions to offer (default: the case's own, ranked by relevance).
    """
    messages = _messages(case)
    context = "\n".join(m.content for m in messages)
    if offered is None:
        offered = relevant_tools(case.messages[-1]["content"], case.tools)
    tools = {t.name: t for t in offered}
    calls: list[tuple[str, Any]] = []
    for attempt in range(max_repairs + 1):
        response = await model.chat(messages, offered, SETTINGS)
        usage.add(response.usage)
        raws.append(response.raw)
        if response.error:
            problems = [response.error]
        else:
            calls, problems = _prepare(response.tool_calls, tools, context)
        if not problems:
            return calls, attempt
        messages.append(Message(role="assistant", content=response.raw or response.text))
        messages.append(
            Message(
                role="user",
                content="Your call had problems: "
                + "; ".join(problems)
                + ". Reply again with corrected calls.",
            )
        )
    return calls, max_repairs


def _prepare(
    calls: list[ToolCall], tools: dict[str, ToolSpec], context: str
) -> tuple[list[tuple[str, Any]], list[str]]:
    """The loop's call checks (`prepare_call`), then strict schema validation. Identical
    calls in one reply are made once, as the Loop does."""
    prepared: list[tuple[str, Any]] = []
    problems: list[str] = []
    seen: set[str] = set()
    for call in calls:
        if (key := call_key(call)) in seen:
            continue
        seen.add(key)
        if call.name not in tools:
            problems.append(f"{call.name!r} is not an available function ({', '.join(tools)})")
            prepared.append((call.name, call.arguments))
            continue
        adapted, issues = prepare_call(call, tools[call.name], context)
        issues += schema_problems(adapted.arguments, tools[call.name].parameters)
        problems += [f"{call.name}: {issue}" for issue in issues]
        prepared.append((call.name, adapted.arguments))
    return prepared, problems


_REGISTRY: list[Any] = []


def bfcl_registry() -> Any:
    """A registry of every distinct BFCL function (single-turn files), hybrid-indexed;
    saved in the user cache after the first build (embedding takes ~20 s)."""
    from platformdirs import user_cache_path

    from bigloop.eval.bfcl_data import function_cards
    from bigloop.registry import Registry

    if _REGISTRY:
        return _REGISTRY[0]
    folder = user_cache_path("bigloop") / "bfcl-registry-2026.3.23-v2"
    if (folder / "hnsw.usearch").is_file():
        registry = Registry.load(folder)
    else:
        registry = Registry()
        registry.add_cards(function_cards())
        registry.build()
        registry.save(folder)
    _REGISTRY.append(registry)
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


def results_path(out_dir: Path, model_name: str, mode: str, category: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model_name)
    return out_dir / safe / mode / f"{category}.jsonl"


def load_results(path: Path) -> dict[str, CaseResult]:
    if not path.exists():
        return {}
    done = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            done[row["id"]] = CaseResult(**row)
    return done


def load_any(category: str, limit: int | None = None) -> list[Any]:
    """Cases of any supported category, single- or multi-turn."""
    if category in MULTI_TURN:
        from bigloop.eval.bfcl_multi import load_multi_cases

        return load_multi_cases(category, limit)
    return load_cases(category, limit)


async def run_one(case: Any, model: ChatModel, mode: Mode, clarify: bool = False) -> CaseResult:
    """Run one case of any category."""
    if case.category in MULTI_TURN:
        from bigloop.eval.bfcl_multi import run_multi_case

        return await run_multi_case(case, model, mode, clarify=clarify)
    if mode == "graph":
        raise UserError("--mode graph is for the multi-turn categories; use loop here.")
    if mode == "retrieve" and case.category in MULTI_TURN:
        raise UserError("--mode retrieve is for the single-turn categories.")
    return await run_case(case, model, mode)


async def run_category(
    cases: list[Any],
    model: ChatModel,
    mode: Mode,
    path: Path,
    *,
    workers: int = 1,
    on_result: Callable[[CaseResult], None] | None = None,
    ray: tuple[str, ModelSpec] | None = None,
    clarify: bool = False,
) -> list[CaseResult]:
    """Run the cases not yet in `path`, appending each result as it completes.

    Args:
        workers: cases run at once (in this process, or Ray workers with `ray`).
        ray: (cluster address, model spec) to run the cases on a Ray cluster instead.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(path):
        done = load_results(path)
        todo = [c for c in cases if c.id not in done]
        gate = asyncio.Semaphore(max(1, workers))

        def record(result: CaseResult) -> None:
            with path.open("a") as f:
                f.write(json.dumps(asdict(result), ensure_ascii=False) + "\n")
            done[result.id] = result
            if on_result:
                on_result(result)

        async def one(case: Any) -> None:
            async with gate:
                result = await run_one(case, model, mode, clarify)
            record(result)

        for case in cases:
            if case.id in done and on_result:
                on_result(done[case.id])
        if ray is not None:
            from bigloop.eval.distributed import run_on_ray

            address, spec = ray
            await asyncio.to_thread(
                run_on_ray,
                address,
                spec,
                todo,
                mode,
                workers,
                lambda row: record(CaseResult(**row)),
            )
        else:
            await asyncio.gather(*(one(c) for c in todo))
    return [done[c.id] for c in cases]


def _exclusive(path: Path) -> Any:
    """Hold a lock on `path` for this run: two runs appending to one file would score cases
    twice.

    Raises:
        UserError: another run holds it.
    """
    import fcntl

    handle = path.with_suffix(".lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise UserError(f"Another eval is writing {path}; wait for it or use --out.") from None
    return handle


def summarize(results: list[CaseResult]) -> dict[str, Any]:
    """Accuracy, error types, valid-call rate, latency percentiles and tokens."""
    n = len(results)
    if n == 0:
        return {"cases": 0}
    seconds = sorted(r.seconds for r in results)
    errors: dict[str, int] = {}
    for r in results:
        if not r.valid and r.error_type:
            errors[r.error_type] = errors.get(r.error_type, 0) + 1
    return {
        "cases": n,
        "accuracy": sum(r.valid for r in results) / n,
        "valid_call_rate": sum(r.valid_calls for r in results) / n,
        "repaired": sum(r.repairs > 0 for r in results),
        "p50_s": seconds[n // 2],
        "p95_s": seconds[min(n - 1, int(n * 0.95))],
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "prompt_s": sum(r.prompt_seconds for r in results),
        "generation_s": sum(r.generation_seconds for r in results),
        "total_s": sum(r.seconds for r in results),
        "asked": sum(r.asked for r in results),
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])),
    }
