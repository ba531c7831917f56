"""The docs name only files that exist: a path with a folder is looked up from the
repository root, src/bigloop, the benchmark package or tests; a bare file name in the
packages, bench/ or tests/ (the architecture guide's tree names files under their
folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "bigloop"
BENCHMARKS = ROOT / "packages" / "bigloop-eval" / "src"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


def _exists(cited: str, names: set[str]) -> bool:
    if "/" not in cited:
        return cited in names
    return any((base / cited).exists() for base in (ROOT, PACKAGE, BENCHMARKS, ROOT / "tests"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_file_a_doc_names_exists(doc: Path) -> None:
    names = {
        p.name
        for base in (PACKAGE, BENCHMARKS, ROOT / "bench", ROOT / "tests")
        for p in base.rglob("*.py")
    }
    cited = sorted(set(re.findall(r"[\w./-]+\.py\b", doc.read_text())))
    assert [c for c in cited if not _exists(c, names)] == []
