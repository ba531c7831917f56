"""Per-category suite scores of loop variants measured by replacing rows: one full run
(`bench/suite.py --split all`), and reruns of only the tasks a change can touch, with the
change off (or a later change on). Greedy decoding and the same code otherwise: a task no
change touches runs the same in every variant.

    .venv/bin/python bench/suite_stack.py "NAME=FULL.jsonl[+PATCH.jsonl...]" ...

A variant is a full results file with the rows of each PATCH, in order, in place of its
own. The last section lists the tasks whose verdict differs between the first variant
and the last.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.suite import CATEGORIES


def rows(path: str) -> dict[str, dict[str, object]]:
    return {r["id"]: r for r in map(json.loads, Path(path).read_text().splitlines())}


def stacked(paths: str) -> dict[str, dict[str, object]]:
    """The rows of "FULL.jsonl[+PATCH.jsonl...]": each patch's rows in place of the ones
    before it."""
    got: dict[str, dict[str, object]] = {}
    for path in paths.split("+"):
        got |= rows(path)
    return got


def main(argv: list[str]) -> None:
    variants: list[tuple[str, dict[str, dict[str, object]]]] = []
    for arg in argv:
        name, _, paths = arg.partition("=")
        variants.append((name, stacked(paths)))
    print(f"`python bench/suite_stack.py {' '.join(argv)}`\n")
    for split in ("dev", "test"):
        if not any(r["split"] == split for _, got in variants for r in got.values()):
            continue
        print(f"\n### {split}\n")
        print("| variant | " + " | ".join(CATEGORIES) + " | all | false asks | s/task |")
        print("|---|" + "---|" * (len(CATEGORIES) + 3))
        for name, got in variants:
            mine = [r for r in got.values() if r["split"] == split]
            if not mine:  # a variant run on the other split only
                continue
            cells = []
            for c in CATEGORIES:
                cat = [r for r in mine if r["category"] == c]
                cells.append(f"{sum(bool(r['passed']) for r in cat)}/{len(cat)}" if cat else "–")
            answerable = [r for r in mine if r["category"] != "missing_value"]
            asks = sum(bool(r["asked"]) for r in answerable)
            right = sum(bool(r["passed"]) for r in mine)
            seconds = statistics.mean(float(r["seconds"]) for r in mine)
            print(
                f"| {name} | " + " | ".join(cells) + f" | **{right}/{len(mine)}** "
                f"| {asks}/{len(answerable)} | {seconds:.1f} |"
            )
    first, last = variants[0][1], variants[-1][1]
    print("\nTasks that differ between the first and the last variant:\n")
    for i in sorted(first.keys() & last.keys()):
        a, b = first[i], last[i]
        if a["passed"] != b["passed"]:
            now = "right" if b["passed"] else "wrong"
            print(f"- {i} ({a['split']}): {a['answer']!r} → {b['answer']!r}, now {now}")


if __name__ == "__main__":
    main(sys.argv[1:])
