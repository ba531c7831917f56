"""The `bigloop` command line."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from bigloop.atoms.models.base import ChatModel
    from bigloop.atoms.tool import Tool
    from bigloop.loop import Loop
    from bigloop.trace.records import RunResult, Step
    from bigloop.trace.store import TraceStore

app = typer.Typer(
    help="Build, run, trace and evaluate Big Loop systems of tools, models and agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
trace_app = typer.Typer(help="Inspect recorded runs.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="'embedded' (default), a .gguf path, or a server's "
        "model name together with --base-url.",
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TraceDbOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace-db",
        help="Trace file (default: traces.db in the user data folder, or $BIGLOOP_HOME).",
    ),
]


def main() -> None:
    from bigloop._errors import UserError

    try:
        app()
    except UserError as e:
        _console(stderr=True).print(f"[bold red]error:[/] {e}", soft_wrap=True)
        sys.exit(2)


@app.command()
def run(
    task: Annotated[str, typer.Argument(help="What to do, in plain words.")],
    model: ModelOpt = "embedded",
    base_url: BaseUrlOpt = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="Comma-separated built-in tools (default: calculator, "
            "dates, units). Names: " + "calculator, days_between, add_days, weekday, "
            "today, convert_units.",
        ),
    ] = None,
    files: Annotated[
        Path | None, typer.Option("--files", help="Let the loop read files under this folder.")
    ] = None,
    db: Annotated[
        Path | None, typer.Option("--db", help="Let the loop query this SQLite file (read-only).")
    ] = None,
    planner: Annotated[
        str,
        typer.Option(
            "--planner",
            "-p",
            help="react: a model turn per step; graph: plan every call at once and run "
            "independent calls concurrently; search: tree search over candidate calls; "
            "auto: graph when the task lists several items, else react.",
        ),
    ] = "auto",
    clarify: Annotated[
        str,
        typer.Option(
            "--clarify",
            help="When to ask you instead of guessing an argument: off, missing (a required "
            "argument is absent), ungrounded (also: its value appears nowhere in the task).",
        ),
    ] = "ungrounded",
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Model turns allowed.")] = 8,
    max_seconds: Annotated[
        float | None, typer.Option("--max-seconds", help="Wall-time budget of the run.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Token budget of the run.")
    ] = None,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """Run TASK: the model calls tools until it can answer. Shows each step live.

    When a required value is missing, it asks you (or, without a terminal, stops with the
    question: answer with `bigloop resume RUN_ID --answer ...`).
    """
    config = {
        "model": model,
        "base_url": base_url,
        "tool_names": tools,
        "files": str(files) if files else None,
        "db": str(db) if db else None,
        "max_steps": max_steps,
        "max_seconds": max_seconds,
        "max_tokens": max_tokens,
        "planner": planner,
        "clarify": clarify,
    }
    store = _store(trace_db)
    loop = _build_loop(config, store)
    result = _execute(loop, json_out, lambda on_step: loop.run(task, on_step=on_step))
    _report(result, json_out)


@app.command()
def resume(
    run_id: Annotated[str, typer.Argument(help="The run to continue (a unique prefix works).")],
    answer: Annotated[
        str | None,
        typer.Option("--answer", "-a", help="Your answer to the question a run stopped on."),
    ] = None,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """Continue an interrupted run from its last completed step (never repeating a
    completed tool call), or a run that stopped to ask you something (--answer)."""
    store = _store(trace_db)
    summary = store.run(run_id)
    loop = _build_loop(summary.config, store)
    result = _execute(
        loop,
        json_out,
        lambda on_step: loop.resume(summary.run_id, answer=answer, on_step=on_step),
    )
    _report(result, json_out)


@trace_app.command("list")
def trace_list(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs.")] = 20,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """The most recent runs."""
    runs = _store(trace_db).runs(limit)
    if json_out:
        print(json.dumps([asdict(r) for r in runs], indent=2))
        return
    from rich.table import Table

    table = Table("run id", "status", "steps", "tools", "tokens", "seconds", "task")
    for r in runs:
        seconds = f"{r.ended_at - r.started_at:.1f}" if r.ended_at else "-"
        table.add_row(
            r.run_id,
            r.status,
            str(r.steps),
            str(r.tool_calls),
            str(r.prompt_tokens + r.completion_tokens),
            seconds,
            r.task[:60],
        )
    _console().print(table)


@trace_app.command("show")
def trace_show(
    run_id: Annotated[str, typer.Argument(help="The run (a unique prefix works).")],
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """Every step of one run: model turns and tool calls, with tokens and seconds."""
    result = _store(trace_db).result(run_id)
    if json_out:
        print(json.dumps(_result_json(result), indent=2, default=str))
        return
    console = _console()
    console.print(f"[bold]run {result.run_id}[/] · {result.status} · {result.task}")
    for step in result.steps:
        console.print(_step_line(step))
    _print_summary(console, result)


def _store(path: Path | None) -> TraceStore:
    from bigloop.trace.store import TraceStore

    return TraceStore(path)


def _model(config: dict[str, Any]) -> ChatModel:
    from bigloop.atoms.models.spec import ModelSpec

    return ModelSpec(
        name=config.get("model") or "embedded", base_url=config.get("base_url")
    ).build()


def _tools(config: dict[str, Any]) -> list[Tool]:
    from bigloop._errors import UserError
    from bigloop.atoms import builtin

    chosen = builtin.default_tools()
    if names := config.get("tool_names"):
        by_name = {t.name: t for t in chosen}
        unknown = [n for n in names.split(",") if n.strip() not in by_name]
        if unknown:
            raise UserError(f"Unknown tool(s) {unknown}; choose from {sorted(by_name)}.")
        chosen = [by_name[n.strip()] for n in names.split(",")]
    if config.get("files"):
        chosen += builtin.file_tools(config["files"])
    if config.get("db"):
        chosen += builtin.sqlite_tools(config["db"])
    return chosen


def _build_loop(config: dict[str, Any], store: TraceStore) -> Loop:
    from bigloop._errors import UserError
    from bigloop.loop import Budget, Loop
    from bigloop.schedule.clarify import Clarify

    when = config.get("clarify") or "off"
    if when not in ("off", "missing", "ungrounded"):
        raise UserError(f"--clarify {when!r}: use off, missing or ungrounded.")
    policy = None if when == "off" else Clarify(ungrounded=when == "ungrounded")
    return Loop(
        _model(config),
        _tools(config),
        budget=Budget(
            max_steps=config["max_steps"],
            max_seconds=config.get("max_seconds"),
            max_tokens=config.get("max_tokens"),
        ),
        store=store,
        config=config,
        planner=config.get("planner") or "react",
        clarify=policy,
        ask=_terminal_ask() if policy else None,
    )


_STATUS: list[Any] = []  # the live spinner, paused while a question is asked


def _terminal_ask() -> Any:
    """Asks on the terminal; None when there is no terminal (the run then stops with the
    question instead of hanging)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def ask(question: str) -> str:
        from rich.prompt import Prompt

        for status in _STATUS:
            status.stop()
        try:
            return Prompt.ask(f"[bold yellow]?[/] {question}", console=_console(stderr=True))
        finally:
            for status in _STATUS:
                status.start()

    return ask


def _execute(loop: Loop, quiet: bool, start: Any) -> RunResult:
    import asyncio

    console = _console(stderr=True)

    def on_step(step: Step) -> None:
        if not quiet:
            console.print(_step_line(step))

    if quiet:
        return asyncio.run(start(on_step))  # type: ignore[no-any-return]
    with console.status(f"[dim]{loop.model.name} is thinking…", spinner="dots") as status:
        _STATUS.append(status)
        try:
            return asyncio.run(start(on_step))  # type: ignore[no-any-return]
        finally:
            _STATUS.remove(status)


def _report(result: RunResult, json_out: bool) -> None:
    if json_out:
        print(json.dumps(_result_json(result), indent=2, default=str))
    else:
        console = _console()
        if result.answer is not None:
            console.print(f"\n[bold green]Answer:[/] {result.answer}")
        elif result.status == "input_required":
            console.print(
                f"\n[bold yellow]Question:[/] {result.question}\n"
                f"Answer it with: bigloop resume {result.run_id} --answer '...'"
            )
        else:
            console.print(f"\n[bold red]No answer[/] ({result.status}): {result.error}")
        _print_summary(console, result)
    if result.status == "input_required":
        raise typer.Exit(3)
    if result.status != "ok":
        raise typer.Exit(1)


def _print_summary(console: Console, result: RunResult) -> None:
    u = result.usage
    console.print(
        f"[dim]run {result.run_id} · {len(result.steps)} steps · "
        f"{u.prompt_tokens}+{u.completion_tokens} tokens · {u.seconds:.1f} s in the model · "
        f"`bigloop trace show {result.run_id}`[/]"
    )


def _step_line(step: Step) -> str:
    from rich.markup import escape

    if step.kind == "model" and isinstance(step.input, dict) and "role" in step.input:
        return (
            f"[cyan]{step.index:>3} {step.input['role']}[/] {escape(str(step.output)[:300])} "
            f"[dim]{step.seconds:.2f} s, {step.prompt_tokens}+{step.completion_tokens} tok[/]"
        )
    if step.kind == "model":
        calls = step.message.tool_calls if step.message else []
        what = ", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in calls) or (
            "answer" if step.error is None else f"[red]{step.error}[/]: {step.output}"
        )
        return (
            f"[cyan]{step.index:>3} model[/] {escape(what)} "
            f"[dim]{step.seconds:.2f} s, {step.prompt_tokens}+{step.completion_tokens} tok[/]"
        )
    if step.kind == "ask":
        return f"[yellow]{step.index:>3} ask[/]   {escape(str(step.output)[:200])}"
    mark = "[green]→[/]" if step.error is None else f"[red]✗ {step.error}[/]"
    output = escape(str(step.output)[:200])
    ms = step.seconds * 1000
    return f"[magenta]{step.index:>3} tool[/]  {step.name} {mark} {output} [dim]{ms:.1f} ms[/]"


def _result_json(result: RunResult) -> dict[str, Any]:
    data = asdict(result)
    data["usage"]["total_tokens"] = result.usage.total_tokens
    data.pop("messages", None)
    for step in data["steps"]:
        step.pop("message", None)
    return data


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


tools_app = typer.Typer(help="The tool registry: list, search, build.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")

RegistryOpt = Annotated[
    Path | None,
    typer.Option("--registry", "-r", help="A saved registry folder (default: the built-in tools)."),
]


def _registry(path: Path | None) -> Any:
    from bigloop.atoms import builtin
    from bigloop.registry import Registry

    if path is not None:
        return Registry.load(path)
    registry = Registry()
    registry.add_tools(builtin.default_tools())
    return registry


@tools_app.command("list")
def tools_list(
    registry_path: RegistryOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many to show.")] = 50,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """The registry's atoms with their cards; reliability and latency as observed in the
    traces when there are any."""
    import time

    from bigloop.schedule.route import learn_cards

    start = time.perf_counter()
    registry = _registry(registry_path)
    load_s = time.perf_counter() - start
    store = _store(trace_db)
    cards = learn_cards(registry.cards[:limit], store)
    if json_out:
        print(json.dumps([asdict(c) for c in cards], indent=2))
        return
    from rich.table import Table

    table = Table("name", "kind", "privacy", "cost", "latency s", "reliability", "description")
    for c in cards:
        latency = f"{c.latency_s:.3f}" if c.latency_s is not None else "-"
        table.add_row(
            c.name, c.kind, c.privacy, f"{c.cost:g}", latency, f"{c.reliability:.2f}",
            c.description[:70],
        )  # fmt: skip
    console = _console()
    console.print(table)
    console.print(f"[dim]{len(registry)} atoms, loaded in {load_s * 1000:.0f} ms[/]")


@tools_app.command("search")
def tools_search(
    query: Annotated[str, typer.Argument(help="What the tool should do, in words.")],
    registry_path: RegistryOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", help="How many results.")] = 5,
    mode: Annotated[
        str, typer.Option("--mode", help="hybrid (BM25 + MiniLM), bm25 or dense.")
    ] = "hybrid",
    json_out: JsonOpt = False,
) -> None:
    """Search the registry for the tools that best fit QUERY."""
    from bigloop._errors import UserError

    if mode not in ("hybrid", "bm25", "dense"):
        raise UserError(f"--mode {mode!r}: use hybrid, bm25 or dense.")
    hits = _registry(registry_path).search(query, k=k, mode=mode)
    if json_out:
        rows = [{"rank": h.rank, "score": h.score, "name": h.card.name} for h in hits]
        print(json.dumps(rows, indent=2))
        return
    for h in hits:
        _console().print(f"{h.rank:>2}. [bold]{h.card.name}[/] {h.card.description[:90]}")


@tools_app.command("build")
def tools_build(
    out: Annotated[Path, typer.Argument(help="Folder to save the registry in.")],
    bfcl: Annotated[
        bool, typer.Option("--bfcl", help="Add every distinct BFCL function doc (~2,900).")
    ] = False,
    dense: Annotated[
        bool, typer.Option("--dense/--no-dense", help="Embed the cards (MiniLM) for hybrid search.")
    ] = True,
) -> None:
    """Build a registry of the built-in tools (and BFCL's functions) and save it."""
    registry = _registry(None)
    if bfcl:
        from bigloop.eval.bfcl_data import function_cards

        registry.add_cards(function_cards(multi_turn=True))
    registry.build(dense=dense, progress=True)
    registry.save(out)
    _console().print(f"Saved {len(registry)} atoms to {out}.")


eval_app = typer.Typer(help="Score models and loops on real benchmarks.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("bfcl")
def eval_bfcl(
    category: Annotated[
        list[str],
        typer.Option(
            "--category",
            "-c",
            help="BFCL category (repeatable), e.g. simple_python, "
            "multiple, parallel, live_simple, irrelevance, multi_turn_base.",
        ),
    ],
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="First N cases.")] = None,
    mode: Annotated[
        list[str],
        typer.Option(
            "--mode",
            help="raw (the model alone), loop (bigloop, ReAct planner), graph (bigloop, "
            "task-graph planner; multi-turn categories), retrieve (bigloop offered the top 3 "
            "of all ~2,900 BFCL functions instead of the case's own). Repeatable.",
        ),
    ] = ["raw", "loop"],  # noqa: B006 - typer reads the default
    clarify: Annotated[
        bool,
        typer.Option(
            "--clarify",
            help="Multi-turn: let the loop ask for missing values (a turn then makes no "
            "calls; counted as 'asked').",
        ),
    ] = False,
    model: ModelOpt = "embedded",
    base_url: BaseUrlOpt = None,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="Concurrent cases (useful for remote models).")
    ] = 1,
    out: Annotated[Path, typer.Option("--out", help="Results folder.")] = Path(
        "bench/results/bfcl"
    ),
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run cases on the Ray cluster at this address (host:port); "
            "each of --workers loads its own model.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Score raw model vs loop on BFCL with BFCL's own checker. Resumable: rerun to continue."""
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bigloop._errors import UserError
    from bigloop.eval.bfcl import Mode, load_any, results_path, run_category, summarize

    bad = [m for m in mode if m not in ("raw", "loop", "graph", "retrieve")]
    if bad:
        raise UserError(f"--mode {bad[0]!r}: use raw, loop, graph or retrieve.")
    from bigloop.atoms.models.spec import ModelSpec

    spec = ModelSpec(name=model, base_url=base_url)
    chosen = spec.build()
    report: dict[str, dict[str, Any]] = {}
    console = _console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[acc]}"),
        TimeElapsedColumn(),
        console=console,
        disable=json_out,
    ) as progress:
        for cat in category:
            cases = load_any(cat, limit)
            for m in mode:
                task = progress.add_task(f"{cat} · {m}", total=len(cases), acc="-")
                hits = [0, 0]

                def tick(result: Any, task: Any = task, hits: list[int] = hits) -> None:
                    hits[0] += result.valid
                    hits[1] += 1
                    progress.update(task, advance=1, acc=f"{hits[0] / hits[1]:.0%}")

                label = f"{m}+clarify" if clarify and m != "raw" else m
                path = results_path(out, chosen.name, label, cat)
                results = asyncio.run(
                    run_category(
                        cases,
                        chosen,
                        cast("Mode", m),
                        path,
                        workers=workers,
                        on_result=tick,
                        ray=(ray_address, spec) if ray_address else None,
                        clarify=clarify,
                    )
                )
                report.setdefault(cat, {})[label] = summarize(results)
    markdown = _bfcl_markdown(report, chosen.name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.md").write_text(markdown)
    (out / "latest.json").write_text(json.dumps(report, indent=2))
    if json_out:
        print(json.dumps(report, indent=2))
    else:
        print(markdown)


def _bfcl_markdown(report: dict[str, dict[str, Any]], model_name: str) -> str:
    lines = [
        f"BFCL (bfcl-eval 2026.3.23), model: {model_name}",
        "",
        "| category | mode | N | accuracy | valid calls | repaired | asked | p50 s | p95 s "
        "| prompt tok | completion tok | prompt s | generation s | top errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cat, modes in report.items():
        for m, s in modes.items():
            if not s.get("cases"):
                continue
            errors = ", ".join(f"{k} {v}" for k, v in list(s["errors"].items())[:3])
            lines.append(
                f"| {cat} | {m} | {s['cases']} | {s['accuracy']:.0%} | {s['valid_call_rate']:.0%} "
                f"| {s['repaired']} | {s.get('asked', 0)} | {s['p50_s']:.1f} | {s['p95_s']:.1f} "
                f"| {s['prompt_tokens']} "
                f"| {s['completion_tokens']} | {s['prompt_s']:.0f} | {s['generation_s']:.0f} "
                f"| {errors} |"
            )
    return "\n".join(lines) + "\n"
