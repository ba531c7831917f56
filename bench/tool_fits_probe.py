"""How well the `tool_fits` judge separates fitting from unrelated functions, on BFCL
cases outside the test block (ids 100 on; never the first 100 that `bigloop eval bfcl`
reports): the embedded model's probability of "yes" (`LocalModel.yes_probability`,
`tool_fits.JUDGE_QUESTION`) for the case's own function — unrelated in the irrelevance
categories, the ground truth's in the others — and, per threshold, how many of each it
sends back.

    .venv/bin/python bench/tool_fits_probe.py     # writes bench/results/tool_fits/probe.md
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bigloop_eval.bfcl_data import load_cases

from bigloop.atoms.models.base import ToolSpec
from bigloop.atoms.models.local import LocalModel
from bigloop.policies.tool_fits import JUDGE_QUESTION, JUDGE_SYSTEM, described

OUT = Path(__file__).parent / "results" / "tool_fits"
PLAN = [
    ("irrelevance", 40, False),
    ("live_irrelevance", 30, False),
    ("simple_python", 30, True),
    ("multiple", 20, True),
    ("live_simple", 20, True),
]
THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.6)


async def main() -> None:
    model = LocalModel()
    rows = []
    for category, n, fits in PLAN:
        for case in load_cases(category)[100 : 100 + n]:
            request = " ".join(m["content"] for m in case.messages if m["role"] == "user")
            names = [next(iter(a)) for a in case.answer] if fits else []
            chosen = [f for f in case.functions if f["name"] in names] or case.functions
            if not chosen:  # a case that offers no function: nothing to judge
                continue
            spec = ToolSpec(
                name=chosen[0]["name"],
                description=chosen[0].get("description", ""),
                parameters=chosen[0].get("parameters", {}),
            )
            question = JUDGE_QUESTION.format(function=described(spec), request=request)
            chat = [
                {"role": "system", "content": JUDGE_SYSTEM},
                {"role": "user", "content": question},
            ]
            yes = await model.yes_probability(chat)
            rows.append({"category": category, "id": case.id, "fits": fits, "yes": yes})
        print(category, file=sys.stderr)
    lines = [
        "# tool_fits: the judge on BFCL cases outside the test block",
        "",
        "`.venv/bin/python bench/tool_fits_probe.py` — P(yes) for the case's own function"
        " (irrelevance categories: an unrelated one; others: the ground truth's).",
        "",
        "| threshold | right calls let through | unrelated calls sent back |",
        "|---|---|---|",
    ]
    right = [r for r in rows if r["fits"] and r["yes"] is not None]
    wrong = [r for r in rows if not r["fits"] and r["yes"] is not None]
    for t in THRESHOLDS:
        kept = sum(r["yes"] >= t for r in right)
        back = sum(r["yes"] < t for r in wrong)
        lines.append(f"| {t} | {kept}/{len(right)} | {back}/{len(wrong)} |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "probe.md").write_text("\n".join(lines) + "\n")
    (OUT / "probe.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
