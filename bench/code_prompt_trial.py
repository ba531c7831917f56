"""The code planner's prompt, two variants side by side on BFCL in code mode (issue 44).

On BFCL the code planner lost to the loop because the model computed the answer itself
instead of calling the function (`wrong_count`: no call). Read from the programs: shown a tool as
`def f(a):` with a docstring, the coder model writes the function's body; shown an
arithmetic example, it copies its numbers. The trial compares that first form
("before") with "calls" — the tools as call signatures, "already defined: call them", an
example that calls a function, and a program defining a tool's name sent back unrun —
on a split of each category:

    dev  = cases 20..39 (tuned on)     test = cases 0..19 (reported before, never tuned on)

    .venv/bin/python bench/code_prompt_trial.py --split dev
    .venv/bin/python bench/code_prompt_trial.py --split test

Each variant's prompt, tool rendering and check are set on `bigloop.planners.code` for its
runs, through the real `Loop` and BFCL's checker (`bigloop_eval.bfcl.run_category`).
Writes bench/results/bfcl_code/prompt_trial_<split>.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._report import revision, write_report  # noqa: E402
from bigloop_eval.bfcl import load_any, run_category, summarize  # noqa: E402

from bigloop.atoms.builtin.bridge import Bridge, python_name  # noqa: E402
from bigloop.atoms.models.spec import ModelSpec  # noqa: E402
from bigloop.planners import code  # noqa: E402

OUT = ROOT / "bench" / "results" / "bfcl_code"
SPLITS = {"dev": slice(20, 40), "test": slice(0, 20)}

BEFORE_SYSTEM = """You answer the user's request. You can run Python 3: reply with one \
```python code block of a few plain lines (no new functions) that calls the functions \
below and prints the value the request asks for; you will see what it printed. Compute \
with Python (arithmetic, datetime for dates), never in your head; use the request's own \
values. When the printed output answers the request, reply with the answer alone, in \
words, without code.

Functions (call them with keyword arguments; a refused call raises ToolError):

{functions}
{context}
{example}"""

BEFORE_EXAMPLE = """Example. Request: "A $120 jacket is 25% off. What do I pay?" Reply:
```python
print(120 * (1 - 0.25))
```
Then, after "Your program printed: 90.0", the reply: $90."""


def before_stubs(bridge: Bridge) -> str:
    """The tools as `def` lines with docstrings (the first measured form)."""
    out = []
    for tool in bridge.tools:
        props = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        params = ", ".join(p if p in required else f"{p}=None" for p in props)
        lines = [f"def {python_name(tool.name)}({params}):", f'    """{tool.description.strip()}']
        for name, schema in props.items():
            if isinstance(schema, dict):
                kind = schema.get("type", "")
                lines.append(f"    {name} ({kind}): {schema.get('description', '')}".rstrip())
        lines.append('    """')
        out.append("\n".join(lines))
    return "\n\n".join(out)


NOW = (code.SYSTEM, code.EXAMPLE, code.program_stubs, code._redefined)
VARIANTS: dict[str, tuple[Any, ...]] = {
    # def stubs, an arithmetic example, programs that define a tool's name run
    "before": (BEFORE_SYSTEM, BEFORE_EXAMPLE, before_stubs, lambda program, bridge: []),
    # call signatures, "already defined: call them", an example that calls a function,
    # programs that define a tool's name sent back
    "calls": NOW,
}


def use(variant: str) -> None:
    code.SYSTEM, code.EXAMPLE, code.program_stubs, code._redefined = VARIANTS[variant]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--variants", default="before,calls")
    parser.add_argument("--categories", default="simple_python,multiple,parallel")
    args = parser.parse_args()
    model = ModelSpec().build()
    rows: dict[str, dict[str, dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants.split(","):
            use(variant)
            for category in args.categories.split(","):
                cases = load_any(category)[SPLITS[args.split]]
                path = Path(tmp) / variant / f"{category}.jsonl"
                results = asyncio.run(run_category(cases, model, "code", path))
                rows.setdefault(category, {})[variant] = summarize(results)
                print(
                    f"{variant} {category}: {rows[category][variant]['accuracy']}", file=sys.stderr
                )
    variants = args.variants.split(",")
    lines = [
        f"# Code planner prompt trial on BFCL, {args.split} split ({revision()})",
        "",
        f"`.venv/bin/python bench/code_prompt_trial.py {' '.join(sys.argv[1:])}`: code mode, "
        f"cases {SPLITS[args.split].start}..{SPLITS[args.split].stop - 1} of each category, "
        "embedded model, BFCL's checker.",
        "",
        "| category | " + " | ".join(variants) + " | top errors (" + variants[-1] + ") |",
        "|---" * (len(variants) + 2) + "|",
    ]
    for category, by in rows.items():
        accs = [f"{by[v]['accuracy']:.0%}" for v in variants]
        errors = by[variants[-1]].get("errors", {})
        lines.append(f"| {category} | " + " | ".join(accs) + f" | {errors} |")
    write_report(OUT / f"prompt_trial_{args.split}.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
