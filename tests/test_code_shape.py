"""The library's functions stay short enough to read: at most 60 lines each (a command
of the command line counts from its docstring on: its option declarations are long by
nature). The complexity limit is ruff's (`max-complexity` in pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "bigloop"
MAX_LINES = 60


def _length(node: ast.FunctionDef | ast.AsyncFunctionDef, cli: bool) -> int:
    if not cli:
        return (node.end_lineno or node.lineno) - node.lineno + 1
    body = node.body
    docstring = isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant
    )
    start = body[1].lineno if docstring and len(body) > 1 else body[0].lineno
    return (node.end_lineno or start) - start + 1


def test_no_function_is_longer_than_sixty_lines() -> None:
    long = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = _length(node, cli="cli" in path.relative_to(SRC).parts)
                if length > MAX_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({length})")
    assert long == []
