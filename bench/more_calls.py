"""More calls on BFCL, one reply at a time: the model's first reply alone vs the same reply
extended by `MoreCalls` (forced extra calls, kept only when new and said by the user),
scored by BFCL's checker. Both columns come from the same generations in one process.

Dev split: cases from index 100 on (the rule was designed there); test: the first 100
(the split `bigloop eval bfcl -n 100` reports).

    .venv/bin/python bench/more_calls.py --split dev -n 20 -c parallel -c simple_python
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_score import score

from bigloop import LocalModel
from bigloop.atoms.models.base import Message, ModelSettings
from bigloop.policies.more_calls import MoreCalls, refusal

OUT = Path(__file__).parent / "results" / "bfcl_more_calls"


async def one(model: LocalModel, case, limit: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    messages = [Message(role=m["role"], content=m["content"]) for m in case.messages]
    settings = ModelSettings(max_tokens=400)
    start = time.perf_counter()
    first = await model.chat(messages, case.tools, settings)
    calls = list(first.tool_calls)
    user = " ".join(m["content"] for m in case.messages if m["role"] == "user").lower()
    stop = None
    while calls and len(calls) < limit:
        more = await model.next_call(messages, case.tools, calls, settings)
        if not more.tool_calls:
            stop = "no call"
            break
        if stop := refusal(more.tool_calls[0], calls, user):
            break
        calls.append(more.tool_calls[0])
    base = score(case, [(c.name, c.arguments) for c in first.tool_calls])
    extended = score(case, [(c.name, c.arguments) for c in calls])
    return {
        "id": case.id,
        "base": base.valid,
        "extended": extended.valid,
        "calls": len(calls),
        "stopped": stop,
        "seconds": round(time.perf_counter() - start, 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--category", action="append", required=True)
    parser.add_argument("--split", choices=["dev", "test"], default="dev")
    parser.add_argument("-n", "--limit", type=int, default=20)
    args = parser.parse_args()
    model = LocalModel()
    model.llama()
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ["| category | split | N | first reply | with more calls |", "|---|---|---|---|---|"]
    for category in args.category:
        start = 100 if args.split == "dev" else 0
        cases = load_cases(category, start + args.limit)[start:]
        rows = []
        for case in cases:
            row = await one(model, case, MoreCalls().max_calls)
            rows.append(row)
            print(json.dumps(row), flush=True)
        path = OUT / f"{args.split}-{category}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        n = len(rows)
        base, extended = sum(r["base"] for r in rows), sum(r["extended"] for r in rows)
        lines.append(f"| {category} | {args.split} | {n} | {base}/{n} | {extended}/{n} |")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
