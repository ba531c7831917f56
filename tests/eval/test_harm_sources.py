"""The do-no-harm sources a tuned model is checked on: data its training never used."""

from __future__ import annotations

from pathlib import Path

from bigloop_eval.harm import harm_sources

from bigloop import ScriptedModel
from bigloop.trace.store import TraceStore


def test_a_bfcl_adapter_is_checked_on_every_other_category_and_the_suite(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    described = {"bench": "bfcl", "category": "simple_python,multiple"}
    sources, opened = harm_sources(described, ScriptedModel([]), store, tmp_path, 3)
    try:
        names = [s.name for s in sources]
        assert "bfcl:simple_python" not in names and "bfcl:multiple" not in names
        assert {"bfcl:irrelevance", "bfcl:live_irrelevance", "suite:test"} <= set(names)
        assert all(len(s.examples) == 3 for s in sources)
        suite = next(s for s in sources if s.name == "suite:test")
        assert len({e.id.split("-")[0] for e in suite.examples}) > 1  # spread over families
    finally:
        for bench in opened:
            bench.close()
        store.close()


def test_a_suite_adapter_is_checked_on_every_bfcl_category(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    sources, opened = harm_sources({"bench": "tasks"}, ScriptedModel([]), store, tmp_path, 2)
    assert opened == [] and "suite:test" not in [s.name for s in sources]
    assert "bfcl:simple_python" in [s.name for s in sources]
    store.close()
