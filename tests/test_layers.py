"""The package's layering, read from the source with `ast`.

import-linter (`make lint`) checks that no layer imports a layer above it. These tests
check the rest: no module reaches into another's private names, and no import cycle,
counting imports inside functions and leaving out those under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "bigloop"
# Private by its name, but the package's base that every layer imports: treated as public.
PUBLIC_ANYWAY = {"bigloop._errors"}


@dataclass(frozen=True, kw_only=True)
class Import:
    importer: str
    path: Path
    line: int
    target: str  # the dotted module path as written (resolved when relative)
    module: str  # the longest part of `target` that is a module of the package
    name: str | None  # the name taken from `module` when it is not a submodule
    type_checking: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _existing(target: str) -> str:
    while target not in modules() and "." in target:
        target = target.rpartition(".")[0]
    return target


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, path: Path) -> None:
        self.module, self.path = module, path
        self.package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        self.type_checking = False
        self.found: list[Import] = []

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        outer, self.type_checking = self.type_checking, True
        for child in node.body:
            self.visit(child)
        self.type_checking = outer
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name, None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if alias.name == "*":
                self._add(node, base, None)
            elif submodule in modules():
                self._add(node, submodule, None)
            else:
                self._add(node, base, alias.name)

    def _add(self, node: ast.stmt, target: str, name: str | None) -> None:
        if target != PACKAGE and not target.startswith(PACKAGE + "."):
            return
        self.found.append(
            Import(
                importer=self.module,
                path=self.path,
                line=node.lineno,
                target=target,
                module=_existing(target),
                name=name,
                type_checking=self.type_checking,
            )
        )


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a module of the package, by any module of the package."""
    found: list[Import] = []
    for module, path in modules().items():
        collector = _Collector(module, path)
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        found += collector.found
    return tuple(found)


def private_reach(imp: Import) -> str | None:
    """Why `imp` reaches into another module's private parts (None: it does not)."""
    if imp.name is not None and _is_private(imp.name):
        return (
            f"{imp.where}: imports the private name `{imp.name}` from {imp.module}. "
            f"Fix: if other modules need it, make it public in {imp.module} (drop the "
            f"underscore, give it a docstring); else move it to a module both may import."
        )
    parts = imp.target.split(".")
    for i, part in enumerate(parts):
        private_module = ".".join(parts[: i + 1])
        if not _is_private(part) or private_module in PUBLIC_ANYWAY:
            continue
        owner = ".".join(parts[:i])
        # A private module belongs to its package; `bigloop._x` to `bigloop/__init__.py`
        # alone, since every module is inside `bigloop`.
        inside = imp.importer == owner or (
            owner != PACKAGE and imp.importer.startswith(owner + ".")
        )
        if not inside:
            return (
                f"{imp.where}: imports the private module {private_module} from outside "
                f"{owner}. Fix: import it through {owner}'s public names, or make the "
                f"module public (drop the underscore) if it is meant to be shared."
            )
    return None


def test_no_module_imports_another_modules_private_names() -> None:
    assert "bigloop.atoms.tool" in modules(), f"no package found under {SRC}"
    problems = [p for imp in imports() if (p := private_reach(imp))]
    assert not problems, "Private names imported across modules:\n" + "\n".join(problems)


def _components(graph: dict[str, set[str]]) -> Iterator[set[str]]:
    """Strongly connected components of `graph` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[set[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                yield from visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                yield component

    for node in sorted(graph):
        if node not in index:
            yield from visit(node)


def _shortest_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module of `component`, as a closed chain."""
    start = min(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & component):
            if nxt == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(came_from[chain[-1]])
                return [*reversed(chain), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{sorted(component)} is not strongly connected")


def import_cycles() -> list[str]:
    """One readable cycle per group of modules that import each other, with the lines."""
    graph: dict[str, set[str]] = {}
    first_line: dict[tuple[str, str], Import] = {}
    for imp in imports():
        if imp.type_checking or imp.module == imp.importer:
            continue
        graph.setdefault(imp.importer, set()).add(imp.module)
        graph.setdefault(imp.module, set())
        first_line.setdefault((imp.importer, imp.module), imp)
    reports = []
    for component in _components(graph):
        chain = _shortest_cycle(graph, component)
        steps = [first_line[edge] for edge in pairwise(chain)]
        group = ""
        if len(component) > len(chain) - 1:
            group = f" (one of several among {', '.join(sorted(component))})"
        reports.append(
            "import cycle: "
            + " -> ".join(chain)
            + group
            + "".join(f"\n  {imp.where} imports {imp.module}" for imp in steps)
            + "\n  Fix: break the import that goes up a layer: move what both need into a "
            "lower module, pass it in (an argument or a Protocol), or import under "
            "`if TYPE_CHECKING:` when it is only needed for annotations."
        )
    return reports


def test_no_import_cycles() -> None:
    assert "bigloop.atoms.tool" in modules(), f"no package found under {SRC}"
    cycles = import_cycles()
    assert not cycles, "\n".join(cycles)
