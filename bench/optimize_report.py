"""A markdown report of `bigloop optimize` results: per optimized config, dev before and
after, every accepted change, the policy search's Pareto front, the cost, and the test
scores (`OUT.work/test.json`, written by `bigloop optimize --test N`).

    .venv/bin/python bench/optimize_report.py bench/results/optimize/*.json \\
        > bench/results/optimize/latest.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def report(path: Path) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    prov = data.get("provenance") or {}
    lines = [f"## {prov.get('bench', path.stem)} (`{path}`)", ""]
    cost = prov.get("cost", {})
    lines.append(
        f"- train {len(prov.get('train', []))}, dev {len(prov.get('dev', []))} examples; "
        f"seed {prov.get('seed')}; steps {', '.join(prov.get('steps', []))}"
    )
    lines.append(
        f"- dev {prov.get('dev_before', 0):.1%} → {prov.get('dev_after', 0):.1%}; cost "
        f"{cost.get('model_calls')} model calls ({cost.get('reflections')} reflections), "
        f"{cost.get('minutes')} min on 2 cores"
    )
    test_file = path.with_name(path.name + ".work") / "test.json"
    if test_file.exists():
        t = json.loads(test_file.read_text(encoding="utf-8"))
        n = t["n"]
        lines.append(
            f"- **test ({n}, never used to optimize): default {t['base']}/{n} "
            f"({t['base'] / n:.0%}) → optimized {t['optimized']}/{n} ({t['optimized'] / n:.0%})**; "
            f"p50 s per example {t['base_s_per_example']:.1f} → {t['optimized_s_per_example']:.1f}"
        )
    lines += ["", "| step | accepted change | dev before | dev after |", "|---|---|---|---|"]
    for c in prov.get("changes", []):
        what = c["what"].replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| {c['step']} | {what} | {c['dev_before']:.1%} | {c['dev_after']:.1%} |")
    if not prov.get("changes"):
        lines.append("| – | none | | |")
    front = prov.get("policy_front", [])
    if front:
        lines += ["", "Policy search, Pareto front (accuracy vs seconds per example, dev):", ""]
        lines += [f"- {f['label']}: {f['dev']:.1%}, {f['s_per_example']:.1f} s" for f in front]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", type=Path, help="Optimized LoopConfig files.")
    args = parser.parse_args()
    print("# bigloop optimize results\n")
    for path in args.configs:
        print(report(path))


if __name__ == "__main__":
    main()
