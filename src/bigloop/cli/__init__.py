"""The `bigloop` command line: command definitions and wiring. What results look like is
`bigloop.report`; what a loop is made of, `bigloop.config.LoopConfig`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bigloop import report
from bigloop.cli.serve import serve_app
from bigloop.cli.tools import tools_app
from bigloop.cli_parts.config_options import config_options
from bigloop.cli_parts.options import (
    BENCHMARKS_MISSING,
    ConfigFileOpt,
    JsonOpt,
    PortOpt,
    TokenOpt,
    TraceDbOpt,
    missing_message,
    plugins,
)

if TYPE_CHECKING:
    from bigloop.config import LoopConfig
    from bigloop.loop import Loop
    from bigloop.trace.otel import OtelHook
    from bigloop.trace.records import RunResult, Step
    from bigloop.trace.store import RunSummary, TraceStore

app = typer.Typer(
    help="Build, run, trace and evaluate Big Loop systems of tools, models and agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"bigloop {version('bigloop')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="Print bigloop's version and exit.",
        ),
    ] = False,
) -> None:
    """Build, run, trace and evaluate Big Loop systems of tools, models and agents."""


trace_app = typer.Typer(help="Inspect recorded runs.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")

OtlpOpt = Annotated[
    str | None,
    typer.Option(
        "--otlp",
        help="Also send the run as OpenTelemetry spans (GenAI conventions) to this OTLP/HTTP "
        "endpoint, e.g. http://127.0.0.1:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT if set).",
    ),
]


def _add_plugins() -> None:
    """The commands other packages add (entry point group `bigloop.commands`: a function
    taking this app): bigloop-eval's `eval` and `optimize`. Without it, those two say how
    to install it."""
    for register in plugins("bigloop.commands").values():
        register(app)
    added = {group.name for group in app.registered_groups}
    for name in ("eval", "optimize"):
        if name not in added:
            app.command(
                name,
                help=f"Not installed here. {BENCHMARKS_MISSING}",
                context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
            )(_not_installed)


def _not_installed() -> None:
    from bigloop._errors import UserError

    raise UserError(missing_message())


def main() -> None:
    import sqlite3

    from rich.markup import escape

    from bigloop._errors import UserError

    try:
        app()
    except UserError as e:  # the message is text, not markup: `bigloop[ui]` stays as is
        report.make_console(stderr=True).print(
            f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True
        )
        sys.exit(2)
    except sqlite3.DatabaseError as e:  # a damaged trace file, a full disk
        report.make_console(stderr=True).print(
            f"[bold red]error:[/] the trace DB could not be read or written ({escape(str(e))}). "
            "Free some disk space, or move the file away (bigloop starts a new one) or "
            "pass another --trace-db.",
            soft_wrap=True,
        )
        sys.exit(2)


RUN_FIELDS = (
    "model",
    "base_url",
    "adapter",
    "escalate",
    "escalate_when",
    "escalate_threshold",
    "vote",
    "tools",
    "files",
    "db",
    "python",
    "tools_dir",
    "a2a",
    "mcp",
    "planner",
    "clarify",
    "off",
    "top_k",
    "max_steps",
    "max_seconds",
    "max_tokens",
)
"""The `LoopConfig` fields `bigloop run` takes as options (`config_options`)."""


@app.command()
@config_options(*RUN_FIELDS)
def run(
    task: Annotated[str, typer.Argument(help="What to do, in plain words.")],
    config_file: ConfigFileOpt = None,
    *,
    given: dict[str, Any],
    save_config: Annotated[
        Path | None,
        typer.Option(
            "--save-config",
            help="Also write the run's settings (the --config file merged with the options) "
            "to this file, for --config.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
    otlp: OtlpOpt = None,
) -> None:
    """Run TASK: the model calls tools until it can answer. Shows each step live.

    When a required value is missing, it asks you (or, without a terminal, stops with the
    question: answer with `bigloop resume RUN_ID --answer ...`). A call to a tool that
    cannot be undone is shown to you (tool and arguments) to approve; without a terminal
    the run stops with that question (approve with `bigloop resume RUN_ID --answer
    yes`). Secrets (URL credentials, API keys, secret environment variables) are
    redacted from what is shown.

    Settings come from the options given, then the --config file, then the defaults.
    """
    from bigloop.config import LoopConfig

    base = LoopConfig.load(config_file) if config_file else LoopConfig()
    config = LoopConfig.from_data(
        base.model_dump() | {k: v for k, v in given.items() if v is not None},
        source="Command line",
    )
    if save_config:
        config.save(save_config)
    _run_loop(
        config,
        _store(trace_db if trace_db is not None else _configured_store(config)),
        json_out,
        lambda loop, on_step: loop.run(task, on_step=on_step),
        otlp=otlp,
    )


@app.command()
def resume(
    run_id: Annotated[str, typer.Argument(help="The run to continue (a unique prefix works).")],
    answer: Annotated[
        str | None,
        typer.Option("--answer", "-a", help="Your answer to the question a run stopped on."),
    ] = None,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
    otlp: OtlpOpt = None,
) -> None:
    """Continue an interrupted run from its last completed step (never repeating a
    completed tool call), or a run that stopped to ask you something (--answer). The run
    continues with the settings it was started with."""
    store = _store(trace_db, create=False)
    summary = store.run(run_id)
    _run_loop(
        _stored_config(summary),
        store,
        json_out,
        lambda loop, on_step: loop.resume(summary.run_id, answer=answer, on_step=on_step),
        otlp=otlp,
    )


@trace_app.command("list")
def trace_list(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs.")] = 20,
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """The most recent runs."""
    runs = _store(trace_db, create=False).runs(limit)
    if json_out:
        print(json.dumps([asdict(r) for r in runs], indent=2))
        return
    report.make_console().print(report.runs_table(runs))


@trace_app.command("show")
def trace_show(
    run_id: Annotated[str, typer.Argument(help="The run (a unique prefix works).")],
    json_out: JsonOpt = False,
    trace_db: TraceDbOpt = None,
) -> None:
    """Every step of one run: model turns and tool calls, with tokens and seconds."""
    result = _store(trace_db, create=False).result(run_id)
    if json_out:
        print(json.dumps(report.result_json(result), indent=2, default=str))
        return
    report.print_trace(report.make_console(), result)


@trace_app.command("export")
def trace_export(
    run_id: Annotated[str, typer.Argument(help="The run (a unique prefix works).")],
    otlp: OtlpOpt = None,
    content: Annotated[
        bool,
        typer.Option(
            "--content",
            help="Also send prompts, replies, arguments and results (off: only "
            "names, ids, tokens, times and errors).",
        ),
    ] = False,
    trace_db: TraceDbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Send a recorded run as OpenTelemetry spans (GenAI conventions) to an OTLP/HTTP
    endpoint: a span for the run, one per model turn and one per tool call."""
    from bigloop._errors import UserError

    try:
        from bigloop.trace.otel import export_run
    except ImportError:
        raise UserError(_NO_OTEL) from None
    sent = export_run(_store(trace_db, create=False), run_id, otlp, capture_content=content)
    if json_out:
        print(json.dumps({"run_id": run_id, "spans": sent}))
        return
    report.make_console(stderr=True).print(f"Sent {sent} spans.")


_NO_OTEL = (
    "OpenTelemetry export needs bigloop's 'otel' extra: "
    "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
)


def _otel_hook(otlp: str | None, config: LoopConfig, store: TraceStore) -> OtelHook | None:
    """The hook sending a run's steps as spans, when --otlp or $OTEL_EXPORTER_OTLP_ENDPOINT
    names an endpoint (the variable alone is ignored without the 'otel' extra); it redacts
    what the store redacts."""
    from bigloop._errors import UserError

    try:
        from bigloop.trace.otel import OtelHook, provider_of, traces_endpoint
    except ImportError:
        if otlp:
            raise UserError(_NO_OTEL) from None
        return None
    endpoint = traces_endpoint(otlp)
    if endpoint is None:
        return None
    return OtelHook(endpoint, provider=provider_of(config.model_dump()), redactor=store.redactor)


def _configured_store(config: LoopConfig) -> Path | None:
    """The trace store a config names (`LoopConfig.trace_db`), as `_store` takes it."""
    return Path(config.trace_db) if config.trace_db else None


def _store(path: Path | None, *, create: bool = True) -> TraceStore:
    """The trace DB at `path` (default: the user's); readers pass `create=False`, so a
    mistyped path is an error instead of a new empty file and folder."""
    from bigloop.trace.store import TraceStore

    return TraceStore(path, create=create)


def _stored_config(summary: RunSummary) -> LoopConfig:
    from bigloop._errors import UserError
    from bigloop.config import LoopConfig

    try:
        return LoopConfig.from_data(summary.config, source="its stored config")
    except UserError as e:
        raise UserError(
            f"Run {summary.run_id} was recorded by another version of bigloop and cannot be "
            f"resumed by this one ({e}). Start it again with `bigloop run`."
        ) from None


def _run_loop(
    config: LoopConfig,
    store: TraceStore,
    json_out: bool,
    start: Callable[[Loop, Callable[[Step], None]], Coroutine[Any, Any, RunResult]],
    *,
    otlp: str | None = None,
) -> None:
    """Build the loop, run `start` with live progress (and OpenTelemetry spans when asked),
    show the result, set the exit code: 0 answered, 3 stopped with a question, 1 failed."""
    import asyncio

    from bigloop.loop import Loop
    from bigloop.policies.approval import ASK

    terminal = report.Terminal(json_out=json_out)
    # without a terminal, an irreversible call stops the run with its approval question
    approve = ASK if terminal.approve is None else terminal.approve
    loop = Loop.from_config(config, store=store, ask=terminal.ask, approve=approve)
    hook = _otel_hook(otlp, config, store)

    def on_step(step: Step) -> None:
        terminal.show_step(step)
        if hook is not None:
            hook(step)

    try:
        with terminal.thinking(loop.model.name):
            result = asyncio.run(start(loop, on_step))
        if hook is not None:
            hook.end_run(result)
    finally:
        if hook is not None:
            hook.close()
    terminal.show_result(result)
    if result.status == "input_required":
        raise typer.Exit(3)
    if result.status != "ok":
        raise typer.Exit(1)


app.add_typer(tools_app, name="tools")


app.add_typer(serve_app, name="serve")


@app.command()
def doctor(
    json_out: JsonOpt = False,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="Also load the embedded model and give this machine's prompt and generation "
            "rates (measured once, then cached), the figures a run's latency floor uses.",
        ),
    ] = False,
) -> None:
    """What the local models run on: the llama.cpp build's CPU variant and the instruction
    sets it uses, this CPU's, the model files and their hashes. Exits 1 when something
    would crash or fail here, with the fix."""
    from bigloop.atoms.models.doctor import facts, problems

    found = facts(measure=measure)
    trouble = problems(found)
    if json_out:
        print(json.dumps({**found, "problems": trouble}, indent=2))
    else:
        report.print_doctor(report.make_console(), found, trouble)
    if trouble:
        raise typer.Exit(1)


@app.command()
def policies(json_out: JsonOpt = False) -> None:
    """The loop's policies (call checks, tool selectors, answer checks, planner rules):
    the names `--off` takes, and what each does."""
    from bigloop.parts import PARTS

    rows = [{"name": p.name, "kind": p.kind, "does": p.does} for p in PARTS]
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    report.print_policies(report.make_console(), rows)


@app.command()
def ui(
    trace_db: TraceDbOpt = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on. The default answers this machine only; "
            "Anything but loopback needs --token.",
        ),
    ] = "127.0.0.1",
    port: PortOpt = 8765,
    token: TokenOpt = None,
) -> None:
    """A local web viewer of the recorded runs: each run's steps (prompts, replies, calls,
    results, errors, repairs, routing, questions), its plan graph and timeline; a run in
    progress updates live. Needs the 'ui' extra."""
    from bigloop._errors import UserError

    try:
        from bigloop.ui import serve
    except ImportError as e:
        missing = (e.name or "starlette").split(".")[0]
        raise UserError(
            f"`bigloop ui` needs bigloop's 'ui' extra ({missing} is not installed): "
            "pip install starlette uvicorn"
        ) from None
    from bigloop.protocols.guard import require_token

    require_token(host, token)
    shown = f"[{host}]" if ":" in host else host
    fragment = "#token=…" if token else ""  # the token itself is not printed
    report.make_console(stderr=True).print(
        f"Trace viewer at http://{shown}:{port}/{fragment} (Ctrl-C stops it)", soft_wrap=True
    )
    serve(trace_db, host=host, port=port, token=token)


_add_plugins()
