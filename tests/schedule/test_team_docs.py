"""The Python examples of docs/teams.md run (offline, on scripted models)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).parent.parent.parent / "docs" / "teams.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_guide_has_an_example_per_part() -> None:
    assert len(BLOCKS) == 5


@pytest.mark.parametrize("code", BLOCKS, ids=[f"teams-block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs(code: str) -> None:
    exec(compile(code, str(DOC), "exec"), {})
