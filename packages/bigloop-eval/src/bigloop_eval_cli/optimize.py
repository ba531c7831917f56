"""`bigloop optimize`: improve a loop from its own traces on a bench's train/dev splits
and write the result as a versioned `LoopConfig`; `bigloop optimize diff A B`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bigloop import report
from bigloop.cli_parts.options import JsonOpt

if TYPE_CHECKING:
    from rich.console import Console

    from bigloop.atoms.models.base import ChatModel
    from bigloop.config import LoopConfig
    from bigloop.optimize.bench import Outcome
    from bigloop.optimize.evaluate import Evaluator
    from bigloop.optimize.optimizer import Optimizer

optimize_app = typer.Typer(
    help="Improve a loop from its traces: policies and schedule, demonstrations, "
    "instructions and tool docs, each kept only when the dev score rises.",
    invoke_without_command=True,
)


@optimize_app.callback()
def optimize(
    ctx: typer.Context,
    bench: Annotated[
        str | None,
        typer.Option("--bench", help="What to optimize on: 'bfcl' (with --category) or 'tasks'."),
    ] = None,
    categories: Annotated[
        list[str] | None,
        typer.Option(
            "--category",
            "-c",
            help="BFCL single-turn category, e.g. simple_python; for tasks, a suite category "
            "(e.g. arithmetic; default: all). Repeatable, as in `bigloop eval` (commas "
            "also work: -c simple_python,multiple).",
        ),
    ] = None,
    train: Annotated[int, typer.Option("--train", min=1, help="Training examples (BFCL).")] = 30,
    generate: Annotated[
        int,
        typer.Option(
            "--generate",
            min=0,
            help="tasks: add this many generated training tasks per family (arithmetic, "
            "units, dates, multistep, files, sql, no_tool; answers computed by the tools, "
            "over a workspace of their own).",
        ),
    ] = 0,
    dev: Annotated[int, typer.Option("--dev", min=1, help="Dev examples (BFCL).")] = 30,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Where to write the optimized config.")
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="The base LoopConfig (default: defaults).")
    ] = None,
    steps: Annotated[
        list[str] | None,
        typer.Option(
            "--step",
            help="Run only these steps, in this order (repeatable): policies, demos, "
            "instructions, tool_docs, and the opt-in data (adds cases like the training "
            "failures to the training examples of the steps after it; not with --ray). "
            "Also opt-in: finetune (a LoRA adapter; BFCL or tasks), prefer (preference "
            "tuning (DPO) of the config's adapter on pairs: where the config's model decides "
            "otherwise than a verified run of a training failure; tasks), tools (the reflector "
            "writes a tool for each training failure; kept ones go to OUT's stem + "
            ".tools/) and "
            "workflow (an evolutionary search over the loop's structure: planner, "
            "self-consistency votes, clarification, escalation with --strong). "
            "Default: the first four.",
        ),
    ] = None,
    iterations: Annotated[
        int, typer.Option("--iterations", min=0, help="Reflective instruction proposals.")
    ] = 4,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 0,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="The model the loop runs: 'embedded', a .gguf path, "
            "or a server's model name with --base-url (default: the --config base's, "
            "else embedded).",
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible server URL.")
    ] = None,
    reflector: Annotated[
        str | None,
        typer.Option(
            "--reflector",
            help="The model that proposes instructions and tool docs and makes tools (a "
            ".gguf path, 'embedded' or 'coder-1.5b'); default: --model.",
        ),
    ] = None,
    test: Annotated[
        int,
        typer.Option(
            "--test",
            min=0,
            help="After optimizing, score the base and the optimized config on this many "
            "test examples (never used to optimize); 0 skips it.",
        ),
    ] = 0,
    work: Annotated[
        Path | None,
        typer.Option(
            "--work",
            help="Folder of the evaluations, proposals and traces (default: OUT.work). "
            "Rerunning the same command resumes from it.",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Fan each candidate's evaluations out over the Ray cluster at this "
            "address (host:port); each of --workers loads its own model.",
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Ray workers.")] = 2,
    strong: Annotated[
        str | None,
        typer.Option(
            "--strong",
            help="Also try escalating turns to this stronger local model (e.g. coder-1.5b) "
            "in the policy search (`escalate`); its seconds count on the Pareto front.",
        ),
    ] = None,
    rounds: Annotated[
        int, typer.Option("--rounds", min=1, help="finetune: probe → train rounds.")
    ] = 1,
    epochs: Annotated[
        int, typer.Option("--epochs", min=1, help="finetune: passes over the training turns.")
    ] = 1,
    lora_rank: Annotated[int, typer.Option("--lora-rank", min=1, help="finetune: LoRA rank.")] = 16,
    device: Annotated[
        str, typer.Option("--device", help="finetune: cpu, cuda or auto (a GPU when present).")
    ] = "auto",
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="workflow: structures tried beyond the base.")
    ] = 6,
    harm: Annotated[
        int,
        typer.Option(
            "--harm",
            min=0,
            help="finetune, prefer: examples per never-trained source (other BFCL "
            "categories, the suite) a tuned model must lose nothing on to be kept; 0 "
            "keeps it on dev alone.",
        ),
    ] = 20,
    json_out: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Optimize a loop on BFCL or the task suite. Example:

    bigloop optimize --bench bfcl -c simple_python --train 30 --dev 30 -o loop.json

    Fine-tune the local model on verified turns of several categories (a LoRA adapter,
    written beside OUT and named in it):

    bigloop optimize --bench bfcl -c simple_python,multiple --train 30 --dev 10
    --step finetune -o tuned.json

    Or on the task suite, with generated training tasks:

    bigloop optimize --bench tasks --generate 12 --step finetune -o tuned.json

    Then preference-tune that adapter on its own failures of other generated tasks:

    bigloop optimize --config tuned.json --bench tasks --generate 12 --seed 1
    --step prefer -o preferred.json

    then `bigloop run --config loop.json "..."` or `bigloop eval bfcl --config loop.json`.
    """
    if ctx.invoked_subcommand is not None:
        return
    category = ",".join(categories) if categories else None
    from bigloop_eval.benches import SuiteBench, build_bench

    from bigloop.atoms.models.spec import ModelSpec
    from bigloop.optimize.evaluate import Evaluator
    from bigloop.optimize.optimizer import Optimizer
    from bigloop.trace.store import TraceStore

    chosen_steps = _checked(bench, category, out, steps, generate)
    assert out is not None
    base = _base_config(config_file, model, base_url)
    work = work or out.with_name(out.name + ".work")
    work.mkdir(parents=True, exist_ok=True)
    spec = ModelSpec(name=base.model, base_url=base.base_url, adapter=base.checked_adapter())
    loop_model = spec.build()
    reflect_model = _reflect_model(reflector, base.model, loop_model)
    store = TraceStore(work / "traces.db")
    described = _described(bench, category, train, dev, test, strong, loop_model)
    described |= {"generated": generate, "seed": seed} if generate else {}
    chosen: Any = build_bench(described, loop_model, store)
    runner = _ray_runner(ray_address, spec, described, workers)
    console = report.make_console(stderr=True)
    on_outcome, log = _progress_log(console, json_out)
    evaluator = Evaluator(chosen, work / "evals.jsonl", on_outcome=on_outcome, runner=runner)
    tuning, opened = None, []
    if {"finetune", "prefer"} & set(chosen_steps):
        tuning = _tuning(base, work, rounds, epochs, lora_rank, device, seed)
        opened = _with_harm(tuning, described, loop_model, store, work, harm)
    optimizer = Optimizer(
        chosen,
        evaluator,
        reflect_model,
        steps=chosen_steps,
        seed=seed,
        iterations=iterations,
        memo=work / "proposals.jsonl",
        tuning=tuning,
        tools_folder=out.with_name(out.stem + ".tools"),
        workflow_budget=budget,
        log=log,
    )
    try:
        with console.status("optimizing…", spinner="dots") if not json_out else _null():
            summary = asyncio.run(
                _optimize_then_test(optimizer, evaluator, chosen, base, out, work, test)
            )
    finally:
        for suite in [chosen, *opened]:
            if isinstance(suite, SuiteBench):
                suite.close()
        store.close()
    if json_out:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_summary(summary, out)


def _base_config(config_file: Path | None, model: str | None, base_url: str | None) -> LoopConfig:
    """The config to improve: the --config file's (else the defaults), on --model and
    --base-url where given."""
    from bigloop.config import LoopConfig

    base = LoopConfig.load(config_file) if config_file else LoopConfig()
    if model is not None or base_url is not None:
        base = base.model_copy(update={"model": model or base.model, "base_url": base_url})
    return base


def _tuning(
    base: LoopConfig, work: Path, rounds: int, epochs: int, rank: int, device: str, seed: int
) -> Any:
    """The finetune step's settings: the GGUF of the base config's local model, and the
    work folder's `finetune/` for its data, checkpoints and adapters."""
    from bigloop._errors import UserError
    from bigloop.atoms.models.weights import local_gguf
    from bigloop.optimize.finetune.train import LoraSettings
    from bigloop.optimize.optimizer import Tuning

    if base.base_url:
        raise UserError("--step finetune trains a local model's adapter, not a server's.")
    if device not in ("cpu", "cuda", "auto"):
        raise UserError(f"--device {device!r}: use cpu, cuda or auto.")
    gguf = local_gguf(base.model)
    settings = LoraSettings(rank=rank, alpha=2 * rank, epochs=epochs, device=device, seed=seed)
    return Tuning(base_gguf=gguf, folder=work / "finetune", settings=settings, rounds=rounds)


def _ray_runner(address: str | None, spec: Any, described: dict[str, Any], workers: int) -> Any:
    """The evaluator's runner on the Ray cluster at `address` (None: runs here)."""
    if not address:
        return None
    from bigloop_eval.distributed import RayBenchRunner

    return RayBenchRunner(address, spec, described, workers)


def _with_harm(
    tuning: Any, described: dict[str, Any], model: ChatModel, store: Any, work: Path, n: int
) -> list[Any]:
    """Give `tuning` its do-no-harm sources (`n` examples each; 0: none); the suite
    benches opened for them (to close)."""
    from bigloop_eval.harm import harm_sources

    if not n:
        return []
    tuning.harm, opened = harm_sources(described, model, store, work, n)
    return list(opened)


def _reflect_model(reflector: str | None, loop_name: str, loop_model: ChatModel) -> ChatModel:
    """The model that proposes instructions and tool docs: --reflector's, or the loop's own
    model when none is given or it names the same one."""
    from bigloop.atoms.models.spec import ModelSpec

    if reflector and _resolved(reflector) != _resolved(loop_name):
        return ModelSpec(name=reflector, base_url=None).build()
    return loop_model


def _described(
    bench: str | None,
    category: str | None,
    train: int,
    dev: int,
    test: int,
    strong: str | None,
    loop_model: ChatModel,
) -> dict[str, Any]:
    """The bench's description for `build_bench`, with --strong (a path made absolute)
    checked now, not halfway through the search."""
    from bigloop.config import LoopConfig

    described: dict[str, Any] = (
        {"bench": "bfcl", "category": category, "train": train, "dev": dev, "test": max(test, 1)}
        if bench == "bfcl"
        else {"bench": "tasks"}
    )
    if bench == "tasks" and category:
        described["categories"] = [c.strip() for c in category.split(",") if c.strip()]
    if strong:
        described["strong"] = LoopConfig(escalate=strong).with_absolute_paths().escalate
        LoopConfig(escalate=described["strong"]).escalating(loop_model)
    return described


def _progress_log(
    console: Console, json_out: bool
) -> tuple[Callable[[Outcome], None], Callable[[str], None]]:
    """The evaluator's `on_outcome` (counting runs and right ones) and the optimizer's
    `log` (each line on `console` after the runs so far; silent with --json)."""
    from rich.markup import escape

    counts = [0, 0]

    def on_outcome(outcome: Outcome) -> None:
        counts[0] += 1
        counts[1] += outcome.score >= 1

    def log(line: str) -> None:
        if not json_out:
            console.print(f"[dim]{counts[0]} runs ·[/] {escape(line)}", soft_wrap=True)

    return on_outcome, log


async def _optimize_then_test(
    optimizer: Optimizer,
    evaluator: Evaluator,
    chosen: Any,
    base: LoopConfig,
    out: Path,
    work: Path,
    test: int,
) -> dict[str, Any]:
    """The summary of the optimized config (saved to `out`): its provenance, less the bulky
    parts, and with --test the scores of base and optimized on the test examples."""
    result = await optimizer.run(base)
    result.save(out)
    summary: dict[str, Any] = {"out": str(out), **(result.provenance or {})}
    for bulky in ("train", "dev", "base", "parent"):
        summary.pop(bulky, None)
    if test:
        summary["test"] = await _test_scores(evaluator, chosen, base, result, test)
        (work / "test.json").write_text(json.dumps(summary["test"], indent=2) + "\n")
    return summary


async def _test_scores(
    evaluator: Evaluator, chosen: Any, base: LoopConfig, result: LoopConfig, test: int
) -> dict[str, Any]:
    """Base and optimized scores (right answers, seconds per example) on the first `test`
    test examples."""
    examples = chosen.examples("test")[:test]
    before = await evaluator.score(base, examples)
    after = await evaluator.score(result, examples)
    return {
        "n": len(examples),
        "base": before.right,
        "optimized": after.right,
        "base_s_per_example": before.seconds,
        "optimized_s_per_example": after.seconds,
    }


def _checked(
    bench: str | None,
    category: str | None,
    out: Path | None,
    steps: list[str] | None,
    generate: int = 0,
) -> list[str]:
    """The steps to run, after checking the options; a clear error for a bad one."""
    from bigloop._errors import UserError
    from bigloop.optimize.optimizer import ALL_STEPS, STEPS

    if bench not in ("bfcl", "tasks"):
        raise UserError("Pass --bench bfcl (with --category) or --bench tasks.")
    if bench == "bfcl" and not category:
        raise UserError("--bench bfcl needs --category, e.g. -c simple_python.")
    if out is None:
        raise UserError("Pass --out FILE: where to write the optimized LoopConfig.")
    if generate and bench != "tasks":
        raise UserError("--generate makes suite tasks: use it with --bench tasks.")
    chosen = steps or list(STEPS)
    if unknown := [s for s in chosen if s not in ALL_STEPS]:
        raise UserError(f"Unknown step(s) {unknown}; choose from {', '.join(ALL_STEPS)}.")
    return chosen


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    out_console = report.make_console()
    out_console.print(
        f"dev {summary['dev_before']:.0%} → {summary['dev_after']:.0%}; "
        f"{summary['cost']['model_calls']} model calls, {summary['cost']['minutes']} min. "
        f"Wrote {out}.",
        soft_wrap=True,
        markup=False,
    )
    for change in summary["changes"]:
        out_console.print(
            f"  kept [{change['step']}] {change['what'][:120]} "
            f"(dev {change['dev_before']:.0%} → {change['dev_after']:.0%})",
            soft_wrap=True,
            markup=False,
        )
    if "test" in summary:
        t = summary["test"]
        out_console.print(
            f"test ({t['n']}): base {t['base']}, optimized {t['optimized']}", markup=False
        )


@optimize_app.command("diff")
def diff(
    a: Annotated[Path, typer.Argument(help="A LoopConfig file (e.g. the base).")],
    b: Annotated[Path, typer.Argument(help="Another (e.g. the optimized one).")],
    json_out: JsonOpt = False,
) -> None:
    """What B changes from A: fields, demonstrations, tool docs, and B's recorded gains."""
    from bigloop.config import LoopConfig
    from bigloop.optimize.diff import config_diff

    lines = config_diff(LoopConfig.load(a), LoopConfig.load(b))
    if json_out:
        print(json.dumps({"a": str(a), "b": str(b), "changes": lines}))
        return
    console = report.make_console()
    for line in lines or ["(no difference)"]:
        console.print(line, soft_wrap=True, markup=False)


def _resolved(name: str) -> str:
    """A model name, with a .gguf path made absolute (the same file, however written)."""
    return str(Path(name).expanduser().resolve()) if name.endswith(".gguf") else name


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
