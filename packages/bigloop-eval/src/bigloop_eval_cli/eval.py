"""`bigloop eval`: score models and loops on real benchmarks (BFCL through the real
`Loop`), registered into the `bigloop` command by this package's entry point."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from bigloop import report
from bigloop.cli_parts.config_options import config_options
from bigloop.cli_parts.options import JsonOpt

if TYPE_CHECKING:
    from bigloop_eval.bfcl_results import CaseResult
    from rich.progress import Progress, TaskID

    from bigloop.config import LoopConfig

eval_app = typer.Typer(help="Score models and loops on real benchmarks.", no_args_is_help=True)


@eval_app.command("bfcl")
@config_options("model", "base_url")
def eval_bfcl(
    category: Annotated[
        list[str],
        typer.Option(
            "--category",
            "-c",
            help="BFCL category (repeatable; commas also work), e.g. simple_python, "
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
            "of all ~2,900 BFCL functions instead of the case's own), code (bigloop, the code "
            "planner: one program calls the functions; its calls, in order, are scored; "
            "single-turn categories). Repeatable.",
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
    *,
    given: dict[str, Any],
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="Concurrent cases (useful for remote models).")
    ] = 1,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Results folder (default: results/bfcl in bigloop's data folder)."
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run cases on the Ray cluster at this address (host:port); "
            "each of --workers loads its own model.",
        ),
    ] = None,
    config_path: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="A LoopConfig file (e.g. from `bigloop optimize`): the loop modes use its "
            "instructions, demonstrations, tool docs and switched-off policies, and every "
            "mode its adapter; results are kept apart as mode 'loop+<file name>'. "
            "Single-turn categories.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Score raw model vs loop on BFCL with BFCL's own checker. Resumable: rerun to continue."""
    import asyncio

    from bigloop_eval.bfcl import Mode, load_any, results_path, run_category, summarize

    _check_modes(mode)
    from bigloop.atoms.models.spec import ModelSpec
    from bigloop.config import LoopConfig
    from bigloop.trace.store import default_home

    out = out if out is not None else default_home() / "results" / "bfcl"

    loop_config = LoopConfig.load(config_path) if config_path else None
    # a config's adapter (from `bigloop optimize --step finetune`) goes with its model
    adapter = loop_config.checked_adapter() if loop_config else None
    model = given.get("model", LoopConfig().model)
    spec = ModelSpec(name=model, base_url=given.get("base_url"), adapter=adapter)
    chosen = spec.build()
    looped = loop_config.escalating(chosen) if loop_config else chosen  # raw: never
    _check_escalate_local(loop_config, config_path, ray_address)
    scores: dict[str, dict[str, Any]] = {}
    with _bfcl_progress(json_out) as progress:
        for cat in [c.strip() for given in category for c in given.split(",") if c.strip()]:
            cases = load_any(cat, limit)
            for m in mode:
                task = progress.add_task(f"{cat} · {m}", total=len(cases), acc="-")
                label = _bfcl_label(m, clarify, loop_config, config_path)
                path = results_path(out, chosen.name, label, cat)
                results = asyncio.run(
                    run_category(
                        cases,
                        looped if m != "raw" else chosen,
                        cast("Mode", m),
                        path,
                        workers=workers,
                        on_result=_bfcl_tick(progress, task),
                        ray=(ray_address, spec) if ray_address else None,
                        clarify=clarify,
                        config=loop_config if m != "raw" else None,
                    )
                )
                scores.setdefault(cat, {})[label] = summarize(results)
    _write_bfcl_scores(scores, chosen.name, out, json_out)


def _check_modes(mode: list[str]) -> None:
    """Refuse, with a clear error, a --mode that is not raw, loop, graph, retrieve or
    code."""
    from bigloop._errors import UserError

    bad = [m for m in mode if m not in ("raw", "loop", "graph", "retrieve", "code")]
    if bad:
        raise UserError(f"--mode {bad[0]!r}: use raw, loop, graph, retrieve or code.")


def _check_escalate_local(
    loop_config: LoopConfig | None, config_path: Path | None, ray_address: str | None
) -> None:
    """Refuse --ray with a --config file that escalates: its stronger model runs in this
    process only."""
    from bigloop._errors import UserError

    if loop_config and loop_config.escalate and ray_address:
        raise UserError(
            f"--ray with {config_path}: its escalate ({loop_config.escalate}) runs in this "
            "process only; drop --ray or the file's escalate."
        )


def _bfcl_progress(json_out: bool) -> Progress:
    """A progress display on stderr, one bar per category and mode (hidden with --json)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = report.make_console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[acc]}"),
        TimeElapsedColumn(),
        console=console,
        disable=json_out,
    )


def _bfcl_tick(progress: Progress, task: TaskID) -> Callable[[CaseResult], None]:
    """A callback advancing `task` by one result, showing the accuracy so far."""
    hits = [0, 0]

    def tick(result: CaseResult) -> None:
        hits[0] += result.valid
        hits[1] += 1
        progress.update(task, advance=1, acc=f"{hits[0] / hits[1]:.0%}")

    return tick


def _bfcl_label(
    m: str, clarify: bool, loop_config: LoopConfig | None, config_path: Path | None
) -> str:
    """The name a mode's results are kept under: with +clarify, and +<file>-<fingerprint>
    for a --config file's loop (a rewritten file gets new results)."""
    from bigloop.optimize.evaluate import fingerprint

    label = f"{m}+clarify" if clarify and m != "raw" else m
    if loop_config is not None and config_path is not None and m != "raw":
        label += f"+{config_path.stem}-{fingerprint(loop_config)[:8]}"
    return label


def _write_bfcl_scores(
    scores: dict[str, dict[str, Any]], model_name: str, out: Path, json_out: bool
) -> None:
    """Write the scores to OUT/latest.md and OUT/latest.json, and print them (markdown, or
    JSON with --json)."""
    markdown = report.bfcl_markdown(scores, model_name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.md").write_text(markdown)
    (out / "latest.json").write_text(json.dumps(scores, indent=2))
    if json_out:
        print(json.dumps(scores, indent=2))
    else:
        print(markdown)
