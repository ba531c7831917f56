"""The loop with the tool library a `bigloop optimize --step tools` run made vs without it,
on the suite's test split of the same categories, through the same bench and evaluator
(the optimize run's remembered evaluations are reused: the base is not run twice).

    python bench/made_tools.py --work bench/results/made_tools/arith-multi.json.work \
        --tools bench/results/made_tools/arith-multi.tools -c arithmetic,multistep
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.benches import SuiteBench

from bigloop.atoms.made import ToolLibrary
from bigloop.atoms.models.spec import ModelSpec
from bigloop.config import LoopConfig
from bigloop.optimize.evaluate import Evaluator
from bigloop.trace.store import TraceStore


async def main(args: argparse.Namespace) -> dict[str, object]:
    store = TraceStore(args.work / "traces.db")
    bench = SuiteBench(
        ModelSpec(name="embedded", base_url=None).build(),
        store,
        categories=args.category.split(","),
    )
    evaluator = Evaluator(bench, args.work / "evals.jsonl")
    test = bench.examples("test")
    rows = {}
    for label, config in (
        ("without", LoopConfig()),
        ("with", LoopConfig(tools_dir=str(args.tools))),
    ):
        scores = await evaluator.score(config, test)
        rows[label] = {
            "right": scores.right,
            "n": len(test),
            "s_per_example": round(scores.seconds, 2),
            "right_ids": sorted(i for i, o in scores.outcomes.items() if o.score >= 1),
        }
    bench.close()
    store.close()
    tools = [
        {"name": m.name, "made_for": m.made_for, "source": m.source}
        for m in ToolLibrary(args.tools).made()
    ]
    return {"categories": args.category, "test": rows, "tools": tools}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--tools", type=Path, required=True)
    parser.add_argument("-c", "--category", default="arithmetic,multistep")
    parser.add_argument("--out", type=Path, default=None)
    a = parser.parse_args()
    result = asyncio.run(main(a))
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
