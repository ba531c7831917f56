"""The eval package's modules form layers: no import cycle (lazy imports included) and no
module imports another's private names."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import bigloop_eval

PACKAGE = "bigloop_eval"
FOLDER = Path(bigloop_eval.__file__).parent


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every `bigloop_eval` module `path` imports, anywhere in it, with the names taken."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                found += [(f"{PACKAGE}.{a.name}", []) for a in node.names]
            elif node.module.startswith(PACKAGE + "."):
                found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith(PACKAGE + ".")]
    return found


def test_eval_modules_import_each_other_without_a_cycle() -> None:
    graph = {
        f"{PACKAGE}.{p.stem}": {module for module, _ in imports(p)}
        for p in FOLDER.glob("*.py")
        if p.stem != "__init__"
    }
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError
    assert order.index(f"{PACKAGE}.bfcl_run") < order.index(f"{PACKAGE}.distributed")
    assert order.index(f"{PACKAGE}.distributed") < order.index(f"{PACKAGE}.bfcl")


def test_no_eval_module_imports_a_private_name() -> None:
    private = [
        (p.name, module, name)
        for p in FOLDER.glob("*.py")
        for module, names in imports(p)
        for name in names
        if name.startswith("_")
    ]
    assert private == []
