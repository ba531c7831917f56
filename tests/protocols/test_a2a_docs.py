"""The Python examples of docs/a2a.md run (each on its own, offline: scripted models,
agents served on loopback)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "a2a.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"a2a-block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs(code: str) -> None:
    exec(compile(code, str(DOC), "exec"), {})
