"""The Python examples of docs/mcp.md run (offline: the MCP server they start is
`mcp-server-time`, installed with the dev extra)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.protocols.mcp_servers.support import servers_running

DOC = Path(__file__).parent.parent.parent / "docs" / "mcp.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


@pytest.fixture(autouse=True)
def _no_server_outlives_its_example() -> Iterator[None]:
    yield
    assert servers_running() == []


@pytest.mark.parametrize("code", BLOCKS, ids=[f"mcp-block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs(code: str) -> None:
    exec(compile(code, str(DOC), "exec"), {})
