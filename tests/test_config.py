from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from bigloop import Budget, Loop, OpenAIModel, ScriptedModel, UserError
from bigloop import config as config_module
from bigloop.atoms.builtin.python_sandbox import sandbox_problem
from bigloop.config import LoopConfig


def test_defaults_are_the_cli_defaults() -> None:
    config = LoopConfig()
    assert config.model_dump() == {
        "model": "embedded",
        "base_url": None,
        "adapter": None,
        "adapter_sha256": None,
        "escalate": None,
        "escalate_when": "ungrounded",
        "escalate_threshold": 0.6,
        "vote": 1,
        "tool_fits": False,
        "tools": None,
        "files": None,
        "db": None,
        "python": False,
        "tools_dir": None,
        "a2a": [],
        "a2a_timeout_s": 300.0,
        "mcp": [],
        "mcp_timeout_s": 60.0,
        "planner": "auto",
        "clarify": "missing",
        "off": [],
        "top_k": None,
        "system": None,
        "demos": [],
        "tool_docs": {},
        "provenance": None,
        "temperature": 0.0,
        "max_tokens_per_turn": 512,
        "max_steps": 8,
        "max_repairs": 3,
        "max_seconds": None,
        "max_tokens": None,
        "max_cost": None,
        "max_step_seconds": None,
        "max_calls_per_turn": 16,
        "trace_db": None,
    }
    assert config.max_calls_per_turn == Budget().max_calls_per_turn


def test_the_documented_example_is_valid() -> None:
    doc = config_module.__doc__ or ""
    example = re.search(r"```json\n(.*?)```", doc, re.DOTALL)
    assert example is not None
    config = LoopConfig.from_data(json.loads(example.group(1)), source="the docstring")
    assert config.planner == "graph" and config.tools == ["calculator", "days_between"]


def test_round_trip_through_a_json_file(tmp_path: Path) -> None:
    config = LoopConfig(
        model="qwen2.5",
        base_url="http://127.0.0.1:8000/v1",
        tools=["calculator", "weekday"],
        planner="graph",
        clarify="missing",
        off=["rank_tools"],
        top_k=3,
        system="Be brief.",
        max_steps=5,
        max_seconds=30.5,
        max_cost=0.25,
    )
    path = tmp_path / "loop.json"
    config.save(path)
    assert json.loads(path.read_text())["tools"] == ["calculator", "weekday"]
    assert LoopConfig.load(path) == config
    assert LoopConfig.model_validate(config.model_dump()) == config
    assert LoopConfig.model_validate_json(config.model_dump_json()) == config


def test_a_file_may_set_only_some_fields(tmp_path: Path) -> None:
    path = tmp_path / "loop.json"
    path.write_text('{"max_steps": 12, "planner": "react"}')
    assert LoopConfig.load(path) == LoopConfig(max_steps=12, planner="react")


def test_a_typo_names_the_field_and_the_likely_spelling(tmp_path: Path) -> None:
    path = tmp_path / "loop.json"
    path.write_text('{"max_step": 3}')
    with pytest.raises(UserError) as e:
        LoopConfig.load(path)
    assert str(e.value) == (
        f"Config file {path}: invalid loop config: max_step: Extra inputs are not permitted "
        "(did you mean 'max_steps'?)"
    )


def test_bad_values_name_their_field() -> None:
    with pytest.raises(UserError, match=r"planner: Unknown planner 'magic'; use react, graph"):
        LoopConfig.from_data({"planner": "magic"}, source="x")
    with pytest.raises(UserError, match=r"clarify: .*use off, missing or ungrounded"):
        LoopConfig.from_data({"clarify": "sometimes"}, source="x")
    with pytest.raises(UserError, match=r"max_steps: Input should be greater than or equal to 1"):
        LoopConfig.from_data({"max_steps": 0}, source="x")


def test_missing_or_malformed_files_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"does not exist\. Pass the path of a JSON file"):
        LoopConfig.load(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": ')
    with pytest.raises(UserError, match=r"is not valid JSON: Expecting value at line 1"):
        LoopConfig.load(broken)
    listed = tmp_path / "list.json"
    listed.write_text("[]")
    with pytest.raises(UserError, match=r"must hold a JSON object of LoopConfig fields"):
        LoopConfig.load(listed)
    with pytest.raises(UserError, match=r"Cannot write config file"):
        LoopConfig().save(tmp_path / "no" / "such" / "folder.json")


def test_build_tools_by_name_or_default() -> None:
    assert [t.name for t in LoopConfig().build_tools()] == [
        "calculator",
        "days_between",
        "add_days",
        "weekday",
        "today",
        "convert_units",
    ]
    chosen = LoopConfig(tools=["weekday", "calculator"]).build_tools()
    assert [t.name for t in chosen] == ["weekday", "calculator"]


def test_unknown_tool_names_list_the_valid_ones() -> None:
    with pytest.raises(UserError) as e:
        LoopConfig(tools=["calculator", "teleport"]).build_tools()
    assert str(e.value) == (
        "Unknown tool(s) ['teleport']; choose from ['add_days', 'calculator', "
        "'convert_units', 'days_between', 'today', 'weekday']."
    )


def test_build_tools_with_files_and_db(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER)")
    conn.close()
    config = LoopConfig(tools=["calculator"], files=str(tmp_path / "notes"), db=str(db))
    names = [t.name for t in config.build_tools()]
    assert names[0] == "calculator"
    assert {"list_files", "read_file", "search_files", "sql_schema", "sql_query"} <= set(names)


def test_build_model() -> None:
    model = LoopConfig(model="qwen2.5", base_url="http://127.0.0.1:9/v1").build_model()
    assert isinstance(model, OpenAIModel) and model.name == "qwen2.5"
    with pytest.raises(UserError, match=r"use 'embedded', a \.gguf file"):
        LoopConfig(model="qwen2.5").build_model()


@pytest.mark.skipif(
    sandbox_problem() is not None, reason="run_python is refused where its sandbox is missing"
)
def test_python_offers_the_sandboxed_tool_and_the_default_does_not() -> None:
    assert "run_python" not in [t.name for t in LoopConfig().build_tools()]
    tools = LoopConfig(tools=["calculator"], python=True).build_tools()
    assert [t.name for t in tools] == ["calculator", "run_python"]
    server = LoopConfig(model="m", base_url="http://127.0.0.1:9/v1")
    with_python = server.model_copy(update={"python": True})
    assert "run_python" in [s.name for s in Loop.from_config(with_python).specs]
    assert "run_python" not in [s.name for s in Loop.from_config(server).specs]

    code = "print(sum(range(10)))"
    model = ScriptedModel(
        [
            json.dumps({"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}),
            json.dumps({"answer": "45"}),
        ]
    )
    result = Loop(model, tools).run_sync("Sum 0..9 in Python.")
    assert [(s.name, s.output.strip()) for s in result.tool_steps] == [("run_python", "45")]


def test_max_calls_per_turn_reaches_the_budget() -> None:
    server = LoopConfig(model="m", base_url="http://127.0.0.1:9/v1")
    assert Loop.from_config(server).budget.max_calls_per_turn == 16
    capped = server.model_copy(update={"max_calls_per_turn": 2})
    assert Loop.from_config(capped).budget.max_calls_per_turn == 2
    with pytest.raises(UserError, match="max_calls_per_turn"):
        LoopConfig.from_data({"max_calls_per_turn": 0}, source="test")


def test_a_loop_and_a_config_have_the_same_defaults_by_construction() -> None:
    from bigloop import Loop, ScriptedModel, tool
    from bigloop.config import LoopConfig

    @tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    model = ScriptedModel([])
    plain = Loop(model, [echo])
    built = Loop.from_config(LoopConfig(), model=model, tools=[echo])
    assert plain.planner.name == built.planner.name == LoopConfig().planner
    assert [c.name for c in plain.checks] == [c.name for c in built.checks]
    assert [c.name for c in plain.selectors] == [c.name for c in built.selectors]
    assert plain.budget == built.budget and plain.settings == built.settings
    strict = Loop(model, [echo], config=LoopConfig(off=["clarify"], max_steps=3))
    assert "clarify" not in [c.name for c in strict.checks] and strict.budget.max_steps == 3


def test_a_config_names_its_trace_store_a_path_made_absolute_a_url_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bigloop.cli import _configured_store
    from bigloop.config import LoopConfig

    monkeypatch.chdir(tmp_path)
    local = LoopConfig(trace_db="runs.db").with_absolute_paths()
    assert local.trace_db == str(tmp_path / "runs.db")
    url = "postgresql://bigloop@db-host/bigloop"
    shared = LoopConfig(trace_db=url).with_absolute_paths()
    assert shared.trace_db == url
    assert _configured_store(LoopConfig()) is None
    assert str(_configured_store(shared)).startswith("postgresql:")  # TraceStore restores //
