"""The Python examples of the guide, the architecture notes and the safety notes run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent / "docs"
BLOCKS = [
    (doc, code)
    for doc in (
        DOCS / "guide.md",
        DOCS / "architecture.md",
        DOCS / "safety.md",
        DOCS / "optimize.md",
    )
    for code in re.findall(r"```python\n(.*?)```", doc.read_text(), re.DOTALL)
]


@pytest.mark.parametrize(
    ("doc", "code"), BLOCKS, ids=[f"{d.stem}-block{i}" for i, (d, _) in enumerate(BLOCKS)]
)
def test_doc_example_runs(doc: Path, code: str) -> None:
    if "make_tool(" in code or "python_sandbox(" in code or "CodePlanner(" in code:
        from bigloop.atoms.builtin.python_sandbox import sandbox_problem

        if (problem := sandbox_problem()) is not None:
            pytest.skip(
                f"the example runs code in the sandbox, which this machine lacks: {problem}"
            )
    exec(compile(code, str(doc), "exec"), {})
