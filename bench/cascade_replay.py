"""Which signal of a finished cheap run could send a suite task on to the strong model:
a replay over two recorded runs of the same tasks (the cheap model's and the strong
model's, `bench/suite.py` results), before paying for a live cascade
(`bench/cascade_suite.py`).

    .venv/bin/python bench/cascade_replay.py CHEAP.jsonl[+PATCH.jsonl...] STRONG.jsonl

A task-level cascade runs the cheap model's loop, and when the signal fires on the
finished run, the strong model's loop from the start: its accuracy is the strong run's
verdict on escalated tasks and the cheap run's elsewhere, its time the cheap run's plus,
when escalated, the strong run's. The oracle escalates exactly the tasks the cheap run
got wrong and the strong one right (the most any signal can win). Test split only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.suite_stack import stacked

Row = dict[str, object]
SIGNALS: dict[str, Callable[[Row], bool]] = {
    "asked the user": lambda r: bool(r["asked"]),
    "a loop note sent an answer back": lambda r: bool(r["notes"]),
    "a tool call failed": lambda r: any(s[0] == "tool" and s[4] for s in r["trace"]),  # type: ignore[index, union-attr]
    "no tool called": lambda r: r["tool_calls"] == 0,
    "more than 2 model turns": lambda r: int(r["model_turns"]) > 2,  # type: ignore[call-overload]
}


def main(cheap_spec: str, strong_spec: str) -> None:
    cheap, strong = stacked(cheap_spec), stacked(strong_spec)
    ids = [k for k, r in strong.items() if r["split"] == "test" and k in cheap]
    strong_s = sum(float(strong[k]["seconds"]) for k in ids)  # type: ignore[arg-type]
    signals = dict(SIGNALS)
    signals["oracle"] = lambda r: not r["passed"] and bool(strong[str(r["id"])]["passed"])
    signals["any of the five"] = lambda r: any(f(r) for f in SIGNALS.values())
    print(f"`python bench/cascade_replay.py {cheap_spec} {strong_spec}`\n")
    print("| escalate when | escalated | of them wrong (cheap) | passed | time vs strong |")
    print("|---|---|---|---|---|")
    cheap_right = sum(bool(cheap[k]["passed"]) for k in ids)
    strong_right = sum(bool(strong[k]["passed"]) for k in ids)
    cheap_s = sum(float(cheap[k]["seconds"]) for k in ids)  # type: ignore[arg-type]
    print(f"| never (cheap alone) | 0 | - | {cheap_right}/{len(ids)} | {cheap_s / strong_s:.2f}x |")
    print(f"| always (strong alone) | - | - | {strong_right}/{len(ids)} | 1.00x |")
    for name, fires in signals.items():
        up = [k for k in ids if fires(cheap[k])]
        right = sum(bool((strong if k in up else cheap)[k]["passed"]) for k in ids)
        seconds = cheap_s + sum(float(strong[k]["seconds"]) for k in up)  # type: ignore[arg-type]
        wrong = sum(not cheap[k]["passed"] for k in up)
        print(f"| {name} | {len(up)} | {wrong} | {right}/{len(ids)} | {seconds / strong_s:.2f}x |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
