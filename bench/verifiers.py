"""How well each verifier tells the embedded loop's right replies from its wrong ones
(issue 25): precision and recall at flagging a wrong reply, on real replies labelled by
BFCL's checker.

The replies are the committed ones the loop on the embedded 0.5B made on BFCL
(`bench/results/bfcl/qwen2.5-coder-0.5b-instruct__embedded_/loop/*.jsonl`, the first 100
of each category, with the checker's verdict); nothing is re-generated. Each verifier
sees what the model saw — the request and the functions offered — and the reply (its
calls, or its answer when it made none). A verifier "flags" a reply when its score is
below the threshold; a flag is right when the checker says the reply is wrong.

`--confidence` adds the `confidence` verifier (the model's own confidence, read from its
replies: `ConfidenceVerifier`). It needs the replies' token probabilities, which the
committed replies lack, so the same cases are run again through the loop on the embedded
model; each case's score is the lowest confidence of its turns and its label the
checker's verdict on this run (not the committed one).

The threshold of each verifier is chosen on the dev half (even places in each category's
file) and reported on the test half (odd), never tuned there.

    python bench/verifiers.py --per-category 12 --judge coder-1.5b --judge embedded
    python bench/verifiers.py --per-category 20 --confidence --out \
        bench/results/verifiers/confidence-20

writes bench/results/verifiers/verifiers.md and .jsonl (resumable: judged replies are
kept and not judged again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_single import run_case

from bigloop import LocalModel
from bigloop.atoms.models.base import Message, ModelResponse, ModelSettings, ToolCall, ToolSpec
from bigloop.atoms.models.spec import ModelSpec
from bigloop.atoms.verifiers import CheckVerifier, JudgeVerifier, Verifier
from bigloop.routing.cascade import calls_are_valid, grounded_reply

ROOT = Path(__file__).resolve().parents[1]
REPLIES = ROOT / "bench/results/bfcl/qwen2.5-coder-0.5b-instruct__embedded_/loop"
CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance", "live_simple")
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
CONFIDENCE = "confidence(embedded)"


class Noting(LocalModel):
    """The embedded model, keeping the confidence of each reply it writes."""

    def __init__(self) -> None:
        super().__init__(name="embedded")
        self.seen: list[float] = []

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        reply = await super().chat(messages, tools, settings)
        if reply.confidence is not None:
            self.seen.append(reply.confidence)
        return reply


def judged(store: Path, verifier: str) -> dict[str, Any]:
    """The rows `verifier` wrote to `store` in earlier runs, by case id."""
    if not store.exists():
        return {}
    rows = (json.loads(line) for line in store.open())
    return {row["id"]: row for row in rows if row["verifier"] == verifier}


async def confidence_all(items: list[Labelled], store: Path) -> dict[str, Any]:
    """Each item's case run again through the loop on the embedded model: the lowest
    confidence of its turns as the score, the checker's verdict on the run as the label
    (from `store` when run before)."""
    done = judged(store, CONFIDENCE)
    model = Noting()
    cases = {c.id: c for category in CATEGORIES for c in load_cases(category)}
    with store.open("a") as out:
        for k, item in enumerate(items, 1):
            if item.id in done:
                continue
            model.seen = []
            start = time.monotonic()
            result = await run_case(cases[item.id], model, "loop")
            score = min(model.seen) if model.seen else None
            row = {
                "verifier": CONFIDENCE,
                "id": item.id,
                "right": bool(result.valid),
                "score": score,
                "reason": f"{len(model.seen)} turns",
                "seconds": 0.0,
                "run_seconds": round(time.monotonic() - start, 3),
            }
            done[item.id] = row
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"  {CONFIDENCE} {k}/{len(items)}", file=sys.stderr, flush=True)
    return done


@dataclass
class Labelled:
    id: str
    category: str
    messages: list[Message]
    tools: list[ToolSpec]
    reply: ModelResponse
    right: bool
    index: int  # its place in the category's file

    @property
    def split(self) -> str:
        return "dev" if self.index % 2 == 0 else "test"


def labelled(per_category: int) -> list[Labelled]:
    """The first `per_category` committed replies of each category, half dev, half test."""
    out = []
    for category in CATEGORIES:
        cases = {c.id: c for c in load_cases(category)}
        rows = [json.loads(line) for line in (REPLIES / f"{category}.jsonl").open()]
        for index, row in enumerate(rows[:per_category]):
            case = cases[row["id"]]
            calls = [
                ToolCall(id=str(i), name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(row["calls"])
            ]
            text = "" if calls else _answer(row)
            messages = [Message(role=m["role"], content=m["content"]) for m in case.messages]  # type: ignore[arg-type]
            reply = ModelResponse(text=text, tool_calls=calls)
            out.append(
                Labelled(row["id"], category, messages, case.tools, reply, row["valid"], index)
            )
    return out


def _answer(row: dict[str, Any]) -> str:
    """The loop's answer when it made no call (the last raw reply's answer, if any)."""
    for raw in reversed(row.get("raw") or []):
        try:
            return str(json.loads(raw).get("answer", raw))
        except (ValueError, AttributeError):
            return str(raw)
    return "(no reply)"


def verifiers(judges: list[str]) -> list[Verifier]:
    made: list[Verifier] = [
        CheckVerifier(calls_are_valid),
        CheckVerifier(grounded_reply),
    ]
    made += [JudgeVerifier(ModelSpec(name=name).build()) for name in judges]
    return made


async def judge_all(items: list[Labelled], verifier: Verifier, store: Path) -> dict[str, Any]:
    """Every item's judgement by `verifier`, from `store` when judged before."""
    done = judged(store, verifier.name)
    with store.open("a") as out:
        for k, item in enumerate(items, 1):
            if item.id in done:
                continue
            start = time.monotonic()
            verdict = await verifier.judge(item.messages, item.tools, item.reply)
            row = {
                "verifier": verifier.name,
                "id": item.id,
                "right": item.right,
                "score": verdict.score,
                "reason": verdict.reason,
                "seconds": round(time.monotonic() - start, 3),
            }
            done[item.id] = row
            out.write(json.dumps(row) + "\n")
            out.flush()
            if isinstance(verifier, JudgeVerifier):
                print(f"  {verifier.name} {k}/{len(items)}", file=sys.stderr, flush=True)
    return done


def flags(rows: list[dict[str, Any]], threshold: float) -> dict[str, float]:
    """Precision and recall at flagging wrong replies (score < threshold, or no score)."""
    flagged = [r for r in rows if r["score"] is None or r["score"] < threshold]
    wrong = [r for r in rows if not r["right"]]
    caught = [r for r in flagged if not r["right"]]
    return {
        "precision": len(caught) / len(flagged) if flagged else 0.0,
        "recall": len(caught) / len(wrong) if wrong else 0.0,
        "flagged": len(flagged),
        "wrong": len(wrong),
        "n": len(rows),
        "accuracy": sum((r in flagged) != r["right"] for r in rows) / len(rows),
    }


def best_threshold(rows: list[dict[str, Any]]) -> float:
    """The threshold with the best accuracy on `rows` (dev), ties to the lower one."""
    return max(THRESHOLDS, key=lambda t: (flags(rows, t)["accuracy"], -t))


def report(
    items: list[Labelled], results: dict[str, dict[str, Any]], args: argparse.Namespace
) -> str:
    split = {i.id: i.split for i in items}
    lines = [
        "# Verifiers: telling the embedded loop's right BFCL replies from its wrong ones",
        "",
        f"`python bench/verifiers.py --per-category {args.per_category}"
        + "".join(f" --judge {j}" for j in args.judge)
        + (" --confidence" if args.confidence else "")
        + f"` — {len(items)} committed replies of the loop on the 0.5B "
        f"({', '.join(CATEGORIES)}; the first {args.per_category} of each), labelled by "
        "BFCL's checker. A flag is a score below the threshold; precision and recall are "
        "of flagging wrong replies. Threshold chosen on dev (even places in each "
        "category), reported on test (odd).",
        "",
        "| verifier | threshold (dev) | test precision | test recall | test accuracy "
        "| flagged / wrong / n | s per reply |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, done in results.items():
        dev = [r for r in done.values() if split[r["id"]] == "dev"]
        test = [r for r in done.values() if split[r["id"]] == "test"]
        t = best_threshold(dev)
        f = flags(test, t)
        seconds = sum(r["seconds"] for r in done.values()) / max(len(done), 1)
        lines.append(
            f"| {name} | {t:g} | {f['precision']:.2f} | {f['recall']:.2f} | "
            f"{f['accuracy']:.2f} | {f['flagged']} / {f['wrong']} / {f['n']} | {seconds:.2f} |"
        )
    right = sum(i.right for i in items if i.split == "test")
    n_test = sum(i.split == "test" for i in items)
    lines += [
        "",
        f"Test half: {n_test} replies, {right} right. Flagging nothing scores accuracy "
        f"{right / max(n_test, 1):.2f}; that is the baseline a verifier must beat.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-category", type=int, default=12)
    parser.add_argument("--judge", action="append", default=[], help="a model short name")
    parser.add_argument(
        "--confidence", action="store_true", help="add the embedded model's own confidence"
    )
    parser.add_argument("--out", default=str(ROOT / "bench/results/verifiers/verifiers"))
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    items = labelled(args.per_category)
    results = {}
    store = out.parent / (out.name + ".jsonl")  # not with_suffix: "judge-coder-1.5b" has a dot
    for verifier in verifiers(args.judge):
        print(f"{verifier.name}: {len(items)} replies", file=sys.stderr, flush=True)
        results[verifier.name] = asyncio.run(judge_all(items, verifier, store))
    if args.confidence:
        print(f"{CONFIDENCE}: {len(items)} cases run again", file=sys.stderr, flush=True)
        results[CONFIDENCE] = asyncio.run(confidence_all(items, store))
    text = report(items, results, args)
    (out.parent / (out.name + ".md")).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
