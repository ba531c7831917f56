"""The loop's policies re-ablated on a config: one suite run with every policy on, then one
with each policy off, on the same tasks, through the same loop (`bench/suite.py`'s).

Which policies still pay on a tuned model? Run it on the tuned config and on the base one
(the same config without its adapter, `--base`) and compare the rows. The tasks default to
the config's own acceptance split (`provenance.dev` of a `bigloop optimize` result: tuned
on, never trained on) and else the suite's dev split; never the test split.

    .venv/bin/python bench/ablate.py bench/results/finetune/suite2/suite-tuned.json --out tuned
    .venv/bin/python bench/ablate.py bench/results/finetune/suite2/suite-tuned.json --base \
        --out base

One JSON-lines file per arm under bench/results/ablate/NAME/ (a rerun resumes), and a
table: accuracy with the policy on and off, what the policy pays (on - off), the tasks it
turns, seconds a task.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.suite import LoopConfig, Result, run_suite, split
from rich.progress import Progress, TaskID

from bigloop.parts import PARTS

RESULTS = Path(__file__).parent / "results" / "ablate"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path, help="a LoopConfig file")
    parser.add_argument("--base", action="store_true", help="the config without its adapter")
    parser.add_argument("--out", required=True, help="results folder name")
    parser.add_argument("--policy", action="append", default=None, help="only these")
    args = parser.parse_args()
    config = LoopConfig.load(args.config)
    if args.base:
        config = config.model_copy(update={"adapter": None, "adapter_sha256": None})
    provenance = json.loads(args.config.read_text()).get("provenance") or {}
    dev = set(provenance.get("dev") or [])
    tasks = [t for t in split("dev") if not dev or t.id in dev]
    policies = args.policy or [p.name for p in PARTS]
    folder = RESULTS / args.out
    folder.mkdir(parents=True, exist_ok=True)
    model = config.build_model()
    arms: dict[str, list[Result]] = {}
    with Progress() as progress:
        for arm in ["all on", *policies]:
            off = sorted({*config.off, arm}) if arm != "all on" else list(config.off)
            task = progress.add_task(arm, total=len(tasks))

            def advance(_: Result, task: TaskID = task) -> None:
                progress.advance(task)

            arms[arm] = run_suite(
                model,
                tasks,
                config.model_copy(update={"off": off}),
                folder / f"{arm.replace(' ', '_')}.jsonl",
                on_result=advance,
            )
    command = "python bench/ablate.py " + " ".join(sys.argv[1:])
    table = _markdown(command, config, arms)
    (folder / "README.md").write_text(table)
    print(table)


def _markdown(command: str, config: LoopConfig, arms: dict[str, list[Result]]) -> str:
    on = {r.id: r for r in arms["all on"]}
    n = len(on)
    lines = [
        f"# Policies ablated: {config.model}"
        + (f" + adapter `{Path(config.adapter).name}`" if config.adapter else " (no adapter)"),
        "",
        f"`{command}`",
        "",
        f"{n} tasks (the config's acceptance split). all on: **{_right(on.values())}/{n}**, "
        f"{_seconds(on.values())} s a task.",
        "",
        "| policy off | right | pays (on - off) | turned right by the policy "
        "| turned wrong by the policy | s/task |",
        "|---|---|---|---|---|---|",
    ]
    for arm, results in arms.items():
        if arm == "all on":
            continue
        off = {r.id: r for r in results}
        gained = sorted(i for i in on if on[i].passed and not off[i].passed)
        lost = sorted(i for i in on if off[i].passed and not on[i].passed)
        lines.append(
            f"| {arm} | {_right(off.values())} | {_right(on.values()) - _right(off.values()):+d} "
            f"| {', '.join(gained) or '-'} | {', '.join(lost) or '-'} | {_seconds(off.values())} |"
        )
    return "\n".join(lines) + "\n"


def _right(results: Iterable[Result]) -> int:
    return sum(r.passed for r in results)


def _seconds(results: Iterable[Result]) -> str:
    return f"{statistics.mean(r.seconds for r in results):.1f}"


if __name__ == "__main__":
    main()
