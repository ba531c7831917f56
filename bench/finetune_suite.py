"""Per-category scores of a suite fine-tuning run (`bigloop optimize --bench tasks
--step finetune --test 87`): the base loop and the tuned one on the suite's dev half (the
optimizer's acceptance split) and test split (never trained or tuned on), with false
asks and seconds per task, read from the optimizer's remembered evaluations.

    .venv/bin/python bench/finetune_suite.py suite-tuned.json --work suite-tuned.work > report.md

`--test N` first scores the base config and the tuned one on the first N test tasks, as
`bigloop optimize --test N` would have (the same bench and `Evaluator`, remembering into
the run's evals.jsonl: a rerun only finishes what is missing) — for a run made without
--test, so that training need not be repeated.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.finetune_dev import round_line
from bigloop_eval.suite import CATEGORIES, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--test", type=int, default=0, help="score N test tasks first")
    args = parser.parse_args()
    work = args.work or args.config.with_name(args.config.name + ".work")
    provenance = json.loads(args.config.read_text())["provenance"]
    if args.test:
        print(json.dumps(asyncio.run(score_test(args.config, work, args.test))), file=sys.stderr)
    rows = [json.loads(line) for line in (work / "evals.jsonl").read_text().splitlines()]
    configs = list(dict.fromkeys(r["config"] for r in rows))
    category = {t.id: t.category for t in split("all")}
    splits = {"dev": set(provenance["dev"]), "test": {t.id for t in split("test")}}
    print(f"`python bench/finetune_suite.py {args.config}`\n")
    for name, ids in splits.items():
        print(f"\n### {name} ({len(ids)} tasks)\n")
        print("| config | " + " | ".join(CATEGORIES) + " | all | false asks | s/task |")
        print("|---|" + "---|" * (len(CATEGORIES) + 3))
        for k, key in enumerate(configs):
            mine = {
                r["example_id"]: r for r in rows if r["config"] == key and r["example_id"] in ids
            }
            if not mine:
                continue
            cells = []
            for c in CATEGORIES:
                got = [r["score"] for i, r in mine.items() if category.get(i) == c]
                cells.append(f"{int(sum(got))}/{len(got)}" if got else "–")
            answerable = [r for i, r in mine.items() if category.get(i) != "missing_value"]
            asked = sum("(asked)" in r["critique"] for r in answerable)
            right = int(sum(r["score"] for r in mine.values()))
            seconds = statistics.mean(r["seconds"] for r in mine.values())
            label = "base" if k == 0 else "tuned"
            print(
                f"| {label} ({key}) | " + " | ".join(cells) + f" | **{right}/{len(mine)}** "
                f"| {asked}/{len(answerable)} | {seconds:.1f} |"
            )
    for r in provenance.get("finetune", []):
        print("\n" + round_line(r))
    counts = collections.Counter(i.rsplit("-", 2)[0] for i in provenance.get("train", []))
    print(f"\ntraining tasks: {dict(counts)}")


async def score_test(config: Path, work: Path, n: int) -> dict[str, object]:
    """The base and tuned configs on the first `n` test tasks (see the module)."""
    from bigloop_eval.benches import SuiteBench, build_bench

    from bigloop.atoms.models.spec import ModelSpec
    from bigloop.config import LoopConfig
    from bigloop.optimize.evaluate import Evaluator
    from bigloop.trace.store import TraceStore

    tuned = LoopConfig.load(config)
    provenance = tuned.provenance or {}
    base = LoopConfig.model_validate(provenance["base"])
    store = TraceStore(work / "traces.db")  # the test split needs no generated tasks
    bench = build_bench({"bench": "tasks"}, ModelSpec(name=base.model).build(), store)
    assert isinstance(bench, SuiteBench)
    try:
        evaluator = Evaluator(bench, work / "evals.jsonl")
        examples = bench.examples("test")[:n]
        before = await evaluator.score(base, examples)
        after = await evaluator.score(tuned, examples)
    finally:
        bench.close()
        store.close()
    return {"n": len(examples), "base": before.right, "tuned": after.right}


if __name__ == "__main__":
    main()
