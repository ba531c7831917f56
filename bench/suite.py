"""The everyday-task suite (`bench/suite/`) through the loop `bigloop run` builds.

Each task runs with its own tools and clarification on, without an ask callback (a
question ends the run: that is how asking is observed). One JSON line per task is
appended to --out as it completes; rerunning the command skips the tasks already there.
At the end a markdown table (accuracy per category, p50/p95 seconds, turns, tokens,
false and missed asks) is printed and written next to --out as <out>.<split>.md.

    python bench/suite.py --split dev                        # tune on this one
    python bench/suite.py --split test                       # report this one
    python bench/suite.py --split test --off clarify         # an ablation row
    python bench/suite.py --model qwen2.5 --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.suite import (
    CATEGORIES,
    LoopConfig,
    Result,
    Task,
    markdown,
    run_suite,
    split,
    summarize,
)

from bigloop import UserError

RESULTS = Path(__file__).parent / "results" / "suite"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Results resume: rerunning a command skips the task ids already in --out.",
    )
    parser.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="test",
        help="dev: tune on it; test (default): report it, never tune on it; all: both.",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="'embedded' (default), a .gguf path, or a server's model name with --base-url.",
    )
    parser.add_argument("--base-url", default=None, help="An OpenAI-compatible server's URL.")
    parser.add_argument(
        "--config", type=Path, default=None, help="A JSON file of LoopConfig fields."
    )
    parser.add_argument(
        "--planner",
        choices=["react", "graph", "search", "auto", "code"],
        default=None,
        help="The loop's planner (default: auto, as `bigloop run`).",
    )
    parser.add_argument(
        "--clarify",
        choices=["off", "missing", "ungrounded"],
        default=None,
        help="When the loop asks instead of guessing (default: LoopConfig's, missing).",
    )
    parser.add_argument(
        "--off",
        action="append",
        default=None,
        metavar="POLICY",
        help="Switch off one of the loop's default policies (repeatable).",
    )
    parser.add_argument(
        "--category",
        action="append",
        choices=CATEGORIES,
        default=None,
        help="Only tasks of this category (repeatable).",
    )
    parser.add_argument("--ids", nargs="+", default=None, help="Only these task ids.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N tasks.")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="Results file (JSON Lines); default bench/results/suite/<model>-<settings>.jsonl.",
    )
    return parser.parse_args(argv)


def configure(args: argparse.Namespace) -> LoopConfig:
    """The LoopConfig of the command: --config's fields, overridden by the options."""
    base = LoopConfig.load(args.config) if args.config else LoopConfig()
    options = {
        "model": args.model,
        "base_url": args.base_url,
        "planner": args.planner,
        "clarify": args.clarify,
        "off": args.off,
    }
    given = {k: v for k, v in options.items() if v is not None}
    return LoopConfig.from_data({**base.model_dump(), **given}, source="Command line")


def default_out(config: LoopConfig) -> Path:
    model = Path(config.model).stem if config.model.endswith(".gguf") else config.model
    name = f"{model}-{config.planner}-clarify_{config.clarify}"
    name += "".join(f"-no_{p}" for p in sorted(config.off))
    return RESULTS / (re.sub(r"[^\w.-]+", "_", name) + ".jsonl")


def select(args: argparse.Namespace) -> list[Task]:
    tasks = split(args.split)
    if args.category:
        tasks = [t for t in tasks if t.category in args.category]
    if args.ids:
        unknown = sorted(set(args.ids) - {t.id for t in split("all")})
        if unknown:
            raise UserError(f"Unknown task id(s) {unknown}.")
        tasks = [t for t in tasks if t.id in args.ids]
    return tasks[: args.limit] if args.limit is not None else tasks


def progress(total: int) -> tuple[Callable[[Result], None], Callable[[], None]]:
    """A rich progress bar on a terminal, else one line per task (both on stderr)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    hits = [0, 0]
    if not console.is_terminal:

        def line(result: Result) -> None:
            hits[0] += result.passed
            hits[1] += 1
            mark = "pass" if result.passed else "FAIL"
            print(f"{hits[1]}/{total} {result.id} {mark} {result.seconds:.1f} s", file=sys.stderr)

        return line, lambda: None
    bar = Progress(
        TextColumn("suite"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[acc]} · {task.fields[last]}"),
        TimeElapsedColumn(),
        console=console,
    )
    task = bar.add_task("suite", total=total, acc="-", last="")
    bar.start()

    def advance(result: Result) -> None:
        hits[0] += result.passed
        hits[1] += 1
        bar.update(task, advance=1, acc=f"{hits[0] / hits[1]:.0%}", last=result.id)

    return advance, bar.stop


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = configure(args)
        tasks = select(args)
        out = args.out or default_out(config)
        model = config.build_model()
        on_result, stop = progress(len(tasks))
        try:
            results = run_suite(model, tasks, config, out, on_result=on_result)
        finally:
            stop()
    except UserError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    title = f"Suite, {args.split} split: {model.name} ({config.planner}, clarify {config.clarify}"
    title += "".join(f", {p} off" for p in config.off) + ")"
    table = markdown(summarize(results), title=title)
    out.with_name(f"{out.stem}.{args.split}.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
