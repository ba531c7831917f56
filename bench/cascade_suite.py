"""The cheap/strong cascade on the everyday-task suite, against the strong model alone,
through the loop `bigloop run --escalate` builds (`bench/suite.py`'s loop).

The arms take turns task by task in one process (strong, cascade, and with --cheap the
cheap model alone), so a machine that slows down or speeds up mid-run slows every arm
alike; the time ratio is against the strong model in the same run.

    .venv/bin/python bench/cascade_suite.py --strong coder-1.5b --when unsure \
        --threshold 0.6 --out unsure-0.6

One JSON-lines file per arm under bench/results/cascade_suite/NAME/ (a rerun resumes) and
a README.md there: accuracy per category, total and median seconds, time against the
strong model, the share of model turns the strong model wrote inside the cascade.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.suite import CATEGORIES, LoopConfig, Result, run_suite, split, summarize
from rich.progress import Progress

from bigloop.parts import EscalateWhen

RESULTS = Path(__file__).parent / "results" / "cascade_suite"


def arms(args: argparse.Namespace) -> dict[str, LoopConfig]:
    """The configs compared, by arm name."""
    when: EscalateWhen = args.when
    chosen = {
        "strong": LoopConfig(model=args.strong),
        "cascade": LoopConfig(
            model=args.cheap,
            escalate=args.strong,
            escalate_when=when,
            escalate_threshold=args.threshold,
        ),
    }
    if args.cheap_arm:
        chosen["cheap"] = LoopConfig(model=args.cheap)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strong", default="coder-1.5b", help="the strong model")
    parser.add_argument("--cheap", default="embedded", help="the cheap model")
    parser.add_argument("--when", choices=["ungrounded", "unsure"], default="unsure")
    parser.add_argument("--threshold", type=float, default=0.6, help="for --when unsure")
    parser.add_argument("--cheap-arm", action="store_true", help="the cheap model alone too")
    parser.add_argument("--split", choices=["dev", "test"], default="test")
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--out", required=True, help="results folder name")
    args = parser.parse_args()
    tasks = split(args.split)[: args.limit]
    folder = RESULTS / args.out
    folder.mkdir(parents=True, exist_ok=True)
    configs = arms(args)
    models = {name: config.build_model() for name, config in configs.items()}
    results: dict[str, list[Result]] = {name: [] for name in configs}
    with Progress() as progress:
        bars = {name: progress.add_task(name, total=len(tasks)) for name in configs}
        for task in tasks:
            for name, config in configs.items():
                out = folder / f"{name}.jsonl"
                results[name] += run_suite(models[name], [task], config, out)
                progress.advance(bars[name])
    command = "python bench/cascade_suite.py " + " ".join(sys.argv[1:])
    table = markdown(command, args, results, strong_name=models["strong"].name)
    (folder / "README.md").write_text(table)
    print(table)


def markdown(
    command: str, args: argparse.Namespace, results: dict[str, list[Result]], *, strong_name: str
) -> str:
    """Accuracy per category and time per arm, the strong model's time as 1.00x."""
    names = list(results)
    strong_s = sum(r.seconds for r in results["strong"]) or 1.0
    rule = (
        f"invalid calls, or its own confidence under {args.threshold:g}"
        if args.when == "unsure"
        else "invalid calls, values nobody said, or an answer before any tool ran"
    )
    lines = [
        f"# Cascade on the suite ({args.split} split): {args.cheap} → {args.strong}",
        "",
        f"Command: `{command}`. {len(results['strong'])} tasks, arms alternating task by "
        f"task in one process. The cascade escalates a turn of {args.cheap} to "
        f"{args.strong} on {rule} (`--escalate-when {args.when}`).",
        "",
        "| arm | passed | accuracy | total s | p50 s | time vs strong | strong's turns |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        rows = results[name]
        summary = summarize(rows)
        total = sum(r.seconds for r in rows)
        turns = [m for r in rows for m in r.answered_by]
        strong_turns = turns.count(strong_name) if name == "cascade" else None
        share = f"{strong_turns}/{len(turns)}" if strong_turns is not None else "-"
        lines.append(
            f"| {name} | {summary.passed}/{summary.tasks} | {summary.accuracy:.1%} | "
            f"{total:.0f} | {summary.p50_seconds:.1f} | {total / strong_s:.2f}x | {share} |"
        )
    lines += ["", "| category | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for category in CATEGORIES:
        cells = []
        for name in names:
            passed, n = summarize(results[name]).by_category.get(category, (0, 0))
            cells.append(f"{passed}/{n}")
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
