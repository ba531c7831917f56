"""The relevance gate's numbers rule, decision by decision: on every BFCL category and the
task suite, how many requests the gate shut (no tools offered) before the rule, and how
many of those it now opens (a request with two numbers or more, while a tool computes
arithmetic). No model runs: the gate is a pure function of the request and the tools.

    .venv/bin/python bench/gate_numbers.py > bench/results/gate_numbers.md
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.bfcl_data import SINGLE_TURN, load_cases
from bigloop_eval.suite import split

from bigloop import Tool, ToolSpec
from bigloop.policies import RelevanceGate

CATEGORIES = [
    c
    for c in SINGLE_TURN
    if c.startswith(("simple_python", "multiple", "parallel", "irrelevance", "live_"))
    and c != "live_relevance"
]


def main() -> None:
    print(f"`python {' '.join(sys.argv)}`\n")
    print("| requests | n | shut before | opened by the numbers rule | opened |")
    print("|---|---|---|---|---|")
    for category in CATEGORIES:
        rows = [
            (" ".join(m["content"] for m in c.messages if m["role"] == "user"), c.tools)
            for c in load_cases(category)
        ]
        row(f"BFCL {category}", rows)
    row("task suite (built-in tools)", suite_rows())


def suite_rows() -> list[tuple[str, list[ToolSpec]]]:
    """Every suite task with the real tools of a workspace (dev and test)."""
    import tempfile

    from bigloop_eval.suite.task import Workspace

    with tempfile.TemporaryDirectory() as root:
        workspace = Workspace.create(Path(root))
        return [
            (task.text, [_spec(t) for t in workspace.tools(task.tools)]) for task in split("all")
        ]


def _spec(tool: Tool) -> ToolSpec:
    return ToolSpec(name=tool.name, description=tool.description, parameters=tool.schema)


def row(name: str, rows: list[tuple[str, list[ToolSpec]]]) -> None:
    before, after = RelevanceGate(min_numbers=sys.maxsize), RelevanceGate()
    shut = [text for text, specs in rows if not before.select(text, specs)]
    opened = [
        text for text, specs in rows if not before.select(text, specs) and after.select(text, specs)
    ]
    examples = "; ".join(f"“{t[:50]}”" for t in opened[:3])
    print(f"| {name} | {len(rows)} | {len(shut)} | {len(opened)} | {examples} |")


if __name__ == "__main__":
    main()
