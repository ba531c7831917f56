"""A run's cost (from the atoms' cards) is stored: with each step, at the end, across a
resume; a file from before costs were stored is upgraded in place."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from bigloop import Budget, Loop, ScriptedModel, TraceStore, tool
from bigloop.atoms.card import AtomCard
from bigloop.trace.records import Step
from bigloop.trace.store import SCHEMA_VERSION
from bigloop.ui.views import run_view
from tests.trace.test_robust_store import LEGACY

PAID = AtomCard(name="paid", kind="model", cost=0.5)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def script() -> list[str]:
    return [
        json.dumps({"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}),
        json.dumps({"answer": "5"}),
    ]


def test_a_runs_cost_is_stored_with_each_step_and_at_the_end(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    seen: list[float | None] = []

    def on_step(step: Step) -> None:
        seen.append(store.run(step.run_id).cost)  # what a kill right now would leave

    loop = Loop(ScriptedModel(script(), card=PAID), [add], store=store)
    result = loop.run_sync("2 + 3?", on_step=on_step)
    assert result.cost == 1.0
    assert seen == [0.5, 0.5, 1.0]
    assert store.run(result.run_id).cost == 1.0
    assert store.result(result.run_id).cost == 1.0
    assert run_view(store.run(result.run_id))["cost"] == 1.0


def test_a_resumed_run_adds_to_what_it_cost_before(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    first = Loop(
        ScriptedModel(script()[:1], card=PAID), [add], store=store, budget=Budget(max_steps=1)
    ).run_sync("2 + 3?")
    assert (first.status, store.run(first.run_id).cost) == ("budget_exceeded", 0.5)
    again = Loop(ScriptedModel(script()[1:], card=PAID), [add], store=store)
    resumed = asyncio.run(again.resume(first.run_id))
    assert (resumed.status, resumed.cost) == ("ok", 1.0)
    assert store.run(first.run_id).cost == 1.0


def test_a_file_of_layout_2_is_upgraded_in_place_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as db:
        db.executescript(LEGACY)
        db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")
        db.execute("ALTER TABLE runs ADD COLUMN heartbeat REAL")
        db.execute(
            "INSERT INTO runs VALUES ('old000000001', 'hi', 'm', '{}', 'ok', 'hello', NULL, "
            "1.0, 2.0, NULL, NULL)"
        )
        db.execute("PRAGMA user_version = 2")
    db.close()
    store = TraceStore(path)
    assert SCHEMA_VERSION == 4  # the layout this bigloop writes (4: decisions as data)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    old = store.run("old000000001")
    assert (old.answer, old.cost) == ("hello", None)  # cost unknown, not 0
    assert run_view(old)["cost"] is None
    result = Loop(ScriptedModel(script(), card=PAID), [add], store=store).run_sync("2 + 3?")
    assert store.run(result.run_id).cost == 1.0
    store.close()
    assert TraceStore(path).run(result.run_id).cost == 1.0  # reopened: no second upgrade
