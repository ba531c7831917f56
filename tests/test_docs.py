"""The guide's Python examples run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).parent.parent / "docs" / "guide.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_guide_example_runs(code: str) -> None:
    exec(compile(code, str(GUIDE), "exec"), {})
