"""Per-category scores of a suite fine-tuning run (`bigloop optimize --bench tasks
--step finetune --test 87`): the base loop and the tuned one on the suite's dev half (the
optimizer's acceptance split) and test split (never trained or tuned on), with false
asks and seconds per task, read from the optimizer's remembered evaluations.

    .venv/bin/python bench/finetune_suite.py suite-tuned.json --work suite-tuned.work > report.md
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
    work = args.work or args.config.with_name(args.config.name + ".work")
    provenance = json.loads(args.config.read_text())["provenance"]
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


if __name__ == "__main__":
    main()
