"""Per-category dev scores of `bigloop optimize --step finetune` runs, base vs each
round's adapter, read from the optimizer's remembered evaluations (OUT.work/evals.jsonl)
and the config's provenance.

    .venv/bin/python bench/finetune_dev.py tuned.json [--work tuned.json.work] > report.md
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or args.config.with_name(args.config.name + ".work")
    provenance = json.loads(args.config.read_text())["provenance"]
    dev = set(provenance["dev"])
    rows = [json.loads(line) for line in (work / "evals.jsonl").read_text().splitlines()]
    by_config: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for row in rows:
        if row["example_id"] in dev:
            by_config[row["config"]][row["example_id"]] = row["score"]
    families = sorted({_family(i) for i in dev})
    print(f"`python bench/finetune_dev.py {args.config}` (dev: never trained on)\n")
    print("| config | " + " | ".join(families) + " | all |")
    print("|---|" + "---|" * (len(families) + 1))
    for k, (key, scores) in enumerate(by_config.items()):
        label = "base" if k == 0 else f"round {k} adapter"
        cells = []
        for family in families:
            mine = [s for i, s in scores.items() if _family(i) == family]
            cells.append(f"{int(sum(mine))}/{len(mine)}")
        print(
            f"| {label} ({key}) | "
            + " | ".join(cells)
            + f" | {int(sum(scores.values()))}/{len(scores)} |"
        )
    for r in provenance.get("finetune", []):
        print("\n" + round_line(r))


def round_line(r: dict[str, Any]) -> str:
    """One finetune round of a config's provenance, as a line of a report."""
    t = r["training"]
    return (
        f"round {r['round']}: train right {r['train_right']}/{r['train_n']}, "
        f"{r['turns']} turns (data sha256 {r['data_sha256'][:12]}), "
        f"{t['tokens']} tokens in {t['seconds'] / 60:.1f} min on {t['device']} "
        f"({t['dtype']}, {t['tokens_per_s']} tokens/s), loss {t['loss_first']} → "
        f"{t['loss_last']}; dev {r['dev_right']}/{r['dev_n']}; failures {r['failures']}"
    )


def _family(example_id: str) -> str:
    return example_id.split("~")[0].rsplit("_", 1)[0]


if __name__ == "__main__":
    main()
