from __future__ import annotations

import json
from pathlib import Path

from bigloop import Loop, ScriptedModel, TraceStore
from bigloop.optimize.bandit import BanditPolicy


def test_bandit_learns_the_better_atom_per_kind() -> None:
    policy = BanditPolicy(seed=1)
    for _ in range(30):
        policy.update("math", "cheap", False)
        policy.update("math", "strong", True)
        policy.update("chat", "cheap", True)
    picks = [policy.choose("math", ["cheap", "strong"]) for _ in range(50)]
    assert picks.count("strong") >= 45
    assert policy.mean("chat", "cheap") > 0.9


def test_bandit_replays_the_runs_of_a_trace_store(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    Loop(ScriptedModel([json.dumps({"answer": "4"})], name="good"), [], store=store).run_sync(
        "math: 2 + 2"
    )
    Loop(ScriptedModel([], name="bad"), [], store=store).run_sync("math: 3 + 3")
    policy = BanditPolicy.from_store(store, lambda task: task.split(":")[0])
    assert policy.stats == {("math", "good"): [1, 0], ("math", "bad"): [0, 1]}
