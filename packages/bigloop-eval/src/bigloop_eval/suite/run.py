"""Running tasks through the loop `bigloop run` builds, one JSON line per task.

`run_suite(model, tasks, config, out_path)` works with any `ChatModel` (the embedded
model, a server, a scripted model in tests): the model is built once by the caller and
shared by every task; each task gets a `Loop.from_config(config)` with that model and the
task's own tools. There is no ask callback, so a loop that asks the user ends the run
with status "input_required" — that is how asking is observed.

Each result is appended to `out_path` as it completes; a rerun skips the ids already
there (resumable). `out_path` is bound to one model and configuration: a sidecar
`<out>.config.json` records them and a run with another one is refused.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel
from bigloop.atoms.models.prompts import render_call_reply
from bigloop.atoms.tool import Tool
from bigloop.config import ADDED_LATER, LoopConfig
from bigloop.loop import Loop
from bigloop.trace.records import RunResult, Step
from bigloop.trace.store import TraceStore

from .catalog import assignment
from .checks import Outcome
from .task import Task, Workspace


@dataclass(kw_only=True)
class Result:
    """One task's run, as recorded in the results file."""

    id: str
    category: str
    split: str
    passed: bool
    why: str
    status: str
    answer: str | None = None
    question: str | None = None
    asked: bool = False
    seconds: float = 0.0
    model_turns: int = 0
    tool_calls: int = 0
    tools_called: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    trace: list[list[object]] = field(default_factory=list)
    """[kind, name, input, output (cut), error] per step, to read failures."""
    answered_by: list[str] = field(default_factory=list)
    """Per model turn, the model that wrote it (a cascade's cheap or strong model)."""
    model_seconds: float = 0.0
    floor_seconds: float = 0.0
    """The run's latency floor (`Usage.floor_seconds`; 0 when the model gives none)."""
    prompt_evaluated: int = 0
    runaway: int = 0
    generated: list[list[int]] = field(default_factory=list)
    """Per model turn, [tokens generated, tokens its kept calls or answer take]
    (the second is 0 when the model cannot count tokens)."""
    notes: list[list[str]] = field(default_factory=list)
    """[the reply before it, the note] per note the loop wrote to the model (a correction,
    an answer sent back), to read which rule acted and on what."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def build_loop(
    model: ChatModel, tools: list[Tool], config: LoopConfig, store: TraceStore | None = None
) -> Loop:
    """The loop `config` describes, with `model` and `tools` instead of the ones it names;
    traced to `store` when given. The made tools of `config.tools_dir` join `tools`."""
    if config.tools_dir:
        from bigloop.atoms.made import ToolLibrary

        tools = [*tools, *ToolLibrary(config.tools_dir).tools()]
    return Loop(model, tools, config=config.with_absolute_paths(), store=store)


def load_results(path: Path) -> dict[str, Result]:
    """The results already in `path`, by task id (an unfinished last line is ignored)."""
    if not path.exists():
        return {}
    done = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        done[row["id"]] = Result(**row)
    return done


def _pin_config(path: Path, model: ChatModel, config: LoopConfig) -> None:
    """Record the model and config `path` holds results of; refuse a different one.

    Raises:
        UserError: `path` holds results of another model or configuration.
    """
    settings = config.model_dump(
        exclude={"model", "base_url", "tools", "files", "db", "provenance"}
    )
    pinned = {"model": model.name, **settings}
    for later, default in ADDED_LATER.items():  # files pinned before these fields existed
        if pinned.get(later) == default:
            del pinned[later]
    sidecar = path.with_suffix(".config.json")
    if sidecar.exists():
        before = json.loads(sidecar.read_text(encoding="utf-8"))
        if before != pinned:
            changed = sorted(
                k for k in pinned.keys() | before.keys() if before.get(k) != pinned.get(k)
            )
            raise UserError(
                f"{path} holds results of another configuration (differs in {changed}); "
                "pass another --out, or delete it to start again."
            )
        return
    sidecar.write_text(json.dumps(pinned, indent=2) + "\n", encoding="utf-8")


async def run_tasks(
    model: ChatModel,
    tasks: list[Task],
    config: LoopConfig,
    out_path: Path,
    *,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run the tasks not yet in `out_path`, one after the other, appending each result.

    Returns:
        The results of `tasks` in their order, earlier runs' included.
    """
    out_path.parent.mkdir(parents=True, exist_ok=True)
    _pin_config(out_path, model, config)
    done = load_results(out_path)
    side = assignment()
    for task in tasks:
        if task.id in done and on_result:
            on_result(done[task.id])
    todo = [t for t in tasks if t.id not in done]
    with tempfile.TemporaryDirectory(prefix="bigloop-suite-") as tmp:
        workspace = Workspace.create(Path(tmp))
        for task in todo:
            loop = build_loop(model, workspace.tools(task.tools), config)
            start = time.perf_counter()
            run = await loop.run(task.text)
            seconds = time.perf_counter() - start
            result = _task_result(model, task, run, seconds, split=side.get(task.id, "extra"))
            with out_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(result), ensure_ascii=False) + "\n")
            done[task.id] = result
            if on_result:
                on_result(result)
    return [done[t.id] for t in tasks]


def _task_result(
    model: ChatModel, task: Task, run: RunResult, seconds: float, *, split: str
) -> Result:
    """`task`'s run, checked, as the row the results file records."""
    outcome = Outcome.of(run)
    passed, why = task.check(outcome)
    return Result(
        id=task.id,
        category=task.category,
        split=split,
        passed=passed,
        why=why,
        status=run.status,
        answer=run.answer,
        question=run.question,
        asked=outcome.asked,
        seconds=round(seconds, 3),
        model_turns=sum(s.kind == "model" for s in run.steps),
        answered_by=[
            str(s.input.get("answered_by") or s.name)
            for s in run.steps
            if s.kind == "model" and isinstance(s.input, dict)
        ],
        tool_calls=len(outcome.tools_called),
        tools_called=list(outcome.tools_called),
        prompt_tokens=run.usage.prompt_tokens,
        completion_tokens=run.usage.completion_tokens,
        model_seconds=round(run.usage.seconds, 3),
        floor_seconds=round(run.usage.floor_seconds, 3),
        prompt_evaluated=run.usage.prompt_evaluated,
        runaway=run.usage.runaway,
        generated=[
            [s.completion_tokens, needed_tokens(model, s)] for s in run.steps if s.kind == "model"
        ],
        error=run.error,
        trace=_trace_rows(run.steps),
        notes=_notes(run),
    )


def _notes(run: RunResult) -> list[list[str]]:
    """[the reply before it, the note] per message the loop wrote to the model."""
    before, out = "", []
    for m in run.messages:
        if m.origin == "loop" and m.role == "user":
            out.append([before[:300], m.content[:300]])
        elif m.role == "assistant":
            calls = (f"{c.name}({json.dumps(c.arguments)})" for c in m.tool_calls)
            before = m.content or ", ".join(calls)
    return out


def _trace_rows(steps: list[Step]) -> list[list[object]]:
    """[kind, name, input (none for a model turn), output cut to 300 characters, error]
    per step: enough to read a failure from the results file."""
    return [
        [s.kind, s.name, s.input if s.kind != "model" else None, str(s.output)[:300], s.error]
        for s in steps
    ]


def needed_tokens(model: ChatModel, step: Step) -> int:
    """The tokens a model turn's kept calls (or its answer) take as the model writes them;
    0 when the model cannot count tokens."""
    count = getattr(model, "count_tokens", None)
    if count is None or step.message is None:
        return 0
    return int(count(render_call_reply(step.message)))


def run_suite(
    model: ChatModel,
    tasks: list[Task],
    config: LoopConfig,
    out_path: Path,
    *,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """`run_tasks` for code that is not async."""
    return asyncio.run(run_tasks(model, tasks, config, out_path, on_result=on_result))
