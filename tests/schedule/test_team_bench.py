"""bench/teams.py's plumbing with a scripted model (the benchmark itself runs on the
embedded model): each setup on the first BFCL case and the first suite test task, the
rows written, the table, and a rerun that runs nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bigloop_eval.suite import split

from bench import teams
from bigloop import FunctionModel, Message, ModelSettings, ToolSpec, TraceStore


def scripted(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
    """Plays every role right: coordinator, adapter, judge, agent."""
    schema = settings.response_schema or {}
    props = schema.get("properties", {})
    task = next(m.content for m in messages if m.role == "user")
    bfcl = "triangle" in task
    if "subtasks" in props:
        worker = "triangle_properties.get" if bfcl else "calculator"
        return json.dumps({"subtasks": [{"task": task, "worker": worker}]})
    if "pick" in props:
        return json.dumps({"pick": "a"})
    if "side1" in props:
        return json.dumps({"side1": 5, "side2": 4, "side3": 3})
    if "answer" in props:
        return json.dumps({"answer": "434"})
    if messages[-1].role == "tool":
        return json.dumps({"answer": "17.5% of 2,480 is 434."})
    if bfcl:
        arguments = {"side1": 5, "side2": 4, "side3": 3}
        return json.dumps(
            {"tool_calls": [{"name": "triangle_properties.get", "arguments": arguments}]}
        )
    call = {"name": "calculator", "arguments": {"expression": "17.5 / 100 * 2480"}}
    return json.dumps({"tool_calls": [call]})


def test_every_setup_runs_and_resumes(tmp_path: Path) -> None:
    args = teams.parse_args(["--limit", "1", "--out", str(tmp_path)])
    model = FunctionModel(scripted, name="scripted")
    store = TraceStore(tmp_path / "t.db")
    table = asyncio.run(teams.run_all(args, model, store))
    assert {key: [(r.id, r.passed, r.why) for r in rows] for key, rows in table.items()} == {
        ("bfcl", "single"): [("multiple_0", True, "ok")],
        ("bfcl", "orchestrator"): [("multiple_0", True, "ok")],
        ("bfcl", "orchestrator_call"): [("multiple_0", True, "ok")],
        ("bfcl", "debate"): [("multiple_0", True, "ok")],
        ("suite", "single"): [("arith-001", True, "434 found")],
        ("suite", "orchestrator"): [("arith-001", True, "434 found")],
        ("suite", "orchestrator_call"): [("arith-001", True, "434 found")],
        ("suite", "debate"): [("arith-001", True, "434 found")],
    }
    assert table[("bfcl", "orchestrator")][0].messages == 1
    assert table[("bfcl", "orchestrator_call")][0].messages == 1
    assert table[("bfcl", "debate")][0].messages == 3  # agreement: no second round, no judge
    text = teams.markdown(table, "scripted", "python bench/teams.py --limit 1")
    assert "| bfcl | debate | 1 | 1/1 (100%) |" in text

    def refuse(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise AssertionError("a finished case ran again")

    again = asyncio.run(teams.run_all(args, FunctionModel(refuse, name="scripted"), store))
    assert {k: len(v) for k, v in again.items()} == {k: 1 for k in table}
    assert len((tmp_path / "suite-debate.jsonl").read_text().splitlines()) == 1


def test_per_category_takes_the_first_k_of_every_category_in_suite_order() -> None:
    tasks = split("test")
    chosen = teams.first_of_each(tasks, 2)
    categories = {t.category for t in tasks}
    assert len(chosen) == 2 * len(categories)
    for category in categories:
        assert [t for t in chosen if t.category == category] == [
            t for t in tasks if t.category == category
        ][:2]
    assert [tasks.index(t) for t in chosen] == sorted(tasks.index(t) for t in chosen)
    assert teams.first_of_each(tasks, None) == tasks
