"""The tuned model vs the base model, through the same real Loop, on BFCL test cases.

Each case of each category runs twice in one session: the base config (the embedded
model as shipped) and the tuned config (`bigloop optimize --step finetune`'s output: the
same loop, plus its LoRA adapter), alternating base and tuned case by case so both see
the same machine. Test cases are the first N of each category (never trained on); the
categories BFCL's finetune data never touches (live_multiple, live_irrelevance,
live_parallel, ...) are marked "never trained". A config whose planner is "code" runs
BFCL's code mode (one program, its calls scored) for both arms.

    .venv/bin/python bench/finetune.py --config tuned.json -c simple_python -c irrelevance -n 25

Writes bench/results/finetune/NAME.md and .json (NAME: --out, default the config's file
stem) and keeps the per-case rows in NAME.jsonl, so a rerun resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_results import CaseResult
from bigloop_eval.bfcl_run import run_one
from bigloop_eval.bfcl_teach import NEVER_TRAINED
from rich.progress import Progress

from bigloop.config import LoopConfig

RESULTS = Path(__file__).parent / "results" / "finetune"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="the tuned LoopConfig")
    parser.add_argument("-c", "--category", action="append", required=True)
    parser.add_argument("-n", "--limit", type=int, default=25, help="first N cases each")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    tuned = LoopConfig.load(args.config)
    base = tuned.model_copy(update={"adapter": None, "adapter_sha256": None, "provenance": None})
    name = args.out or args.config.stem
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows_path = RESULTS / f"{name}.jsonl"
    done = _done(rows_path)
    models = {"base": base.build_model(), "tuned": tuned.build_model()}
    configs = {"base": base, "tuned": tuned}
    mode = "code" if tuned.planner == "code" else "loop"  # a code-planner config: code mode
    with Progress() as progress, rows_path.open("a") as rows:
        for category in args.category:
            cases = load_cases(category, args.limit)
            task = progress.add_task(category, total=2 * len(cases))
            for case in cases:
                for arm in ("base", "tuned"):
                    if (arm, case.id) not in done:
                        result = asyncio.run(run_one(case, models[arm], mode, config=configs[arm]))
                        done[(arm, case.id)] = asdict(result)
                        rows.write(json.dumps({"arm": arm, **asdict(result)}) + "\n")
                        rows.flush()
                    progress.advance(task)
    table = _table(done, args.category, args.limit)
    meta = {
        "command": "python bench/finetune.py " + " ".join(sys.argv[1:]),
        "config": str(args.config),
        "adapter_sha256": tuned.adapter_sha256,
        "rows": table,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(meta, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(_markdown(meta))
    print(_markdown(meta))


def _done(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            done[(row.pop("arm"), row["id"])] = row
    return done


def _table(
    done: dict[tuple[str, str], dict[str, Any]], categories: list[str], limit: int
) -> list[dict[str, Any]]:
    table = []
    for category in categories:
        ids = [c.id for c in load_cases(category, limit)]
        row: dict[str, Any] = {"category": category, "cases": len(ids)}
        row["trained"] = category not in NEVER_TRAINED
        for arm in ("base", "tuned"):
            results = [CaseResult(**done[(arm, i)]) for i in ids if (arm, i) in done]
            row[arm] = sum(r.valid for r in results)
            row[f"{arm}_s"] = round(sum(r.seconds for r in results) / max(len(results), 1), 2)
        table.append(row)
    return table


def _markdown(meta: dict[str, Any]) -> str:
    lines = [
        "# Tuned vs base: the same loop on BFCL test cases",
        "",
        f"`{meta['command']}`",
        "",
        f"adapter sha256 `{meta['adapter_sha256']}`",
        "",
        "| category | trained on its other cases | n | base | tuned | Δ | base s/case "
        "| tuned s/case |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in meta["rows"]:
        lines.append(
            f"| {r['category']} | {'yes' if r['trained'] else 'never trained'} | {r['cases']} | "
            f"{r['base']} | {r['tuned']} | {r['tuned'] - r['base']:+d} | {r['base_s']} | "
            f"{r['tuned_s']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
