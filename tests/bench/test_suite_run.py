"""The suite's runner end to end with a scripted model: one task right, one wrong, one
that asks; the rows written, the summary, resuming, and the results file's config pin."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bigloop_eval.suite import (
    LoopConfig,
    Result,
    Task,
    load_results,
    markdown,
    run_suite,
    summarize,
)
from bigloop_eval.suite.checks import Asked, number
from bigloop_eval.suite.task import DEFAULT

from bigloop import FunctionModel, Message, ToolSpec, UserError

TASKS = [
    Task(
        id="t-right",
        category="arithmetic",
        text="What is (45 + 12) / 3?",
        tools=DEFAULT,
        check=number(19),
    ),
    Task(
        id="t-wrong",
        category="arithmetic",
        text="What is 2 to the power of 10?",
        tools=DEFAULT,
        check=number(1024),
    ),
    Task(
        id="t-asks",
        category="missing_value",
        text="Convert my height to centimeters.",
        tools=DEFAULT,
        check=Asked(),
    ),
]


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
    task = next(m.content for m in messages if m.role == "user")
    answered = any(m.role == "tool" for m in messages)
    if task.startswith("What is (45"):
        if answered:
            return json.dumps({"answer": "19"})
        return call("calculator", expression="(45 + 12) / 3")
    if task.startswith("What is 2"):
        return json.dumps({"answer": "1000"})
    return call("convert_units", value=180, from_unit="ft", to_unit="cm")


def test_runner_records_each_task_and_summarizes(tmp_path: Path) -> None:
    out = tmp_path / "suite.jsonl"
    results = run_suite(FunctionModel(reply), TASKS, LoopConfig(clarify="ungrounded"), out)

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["passed"], r["status"], r["asked"]) for r in rows] == [
        ("t-right", True, "ok", False),
        ("t-wrong", False, "ok", False),
        ("t-asks", True, "input_required", True),
    ]
    right, wrong, asks = rows
    assert (right["answer"], right["tool_calls"], right["tools_called"]) == (
        "19",
        1,
        ["calculator"],
    )
    assert right["model_turns"] == 2 and right["prompt_tokens"] > 0 and right["seconds"] > 0
    assert wrong["why"] == "expected 1024 (±1e-09); numbers in answer: [1000.0]"
    # an unsupported number is sent back once ("call the tool"); the script answers again
    assert wrong["tool_calls"] == 0 and wrong["model_turns"] == 2
    assert asks["question"].startswith("To call convert_units, what is the value")
    assert asks["answer"] is None and asks["tool_calls"] == 0
    assert {r["split"] for r in rows} == {"extra"}
    assert [r.id for r in results] == ["t-right", "t-wrong", "t-asks"]

    summary = summarize(results)
    assert (summary.passed, summary.tasks) == (2, 3)
    assert summary.by_category == {"arithmetic": (1, 2), "missing_value": (1, 1)}
    assert summary.false_asks == (0, 2) and summary.missed_asks == (0, 1)
    assert summary.mean_model_turns == pytest.approx(6 / 3)  # the ask: sent back once first
    table = markdown(summary, title="scripted")
    assert "| arithmetic | 1/2 | 50% |" in table
    assert "| **all** | **2/3** | **67%** |" in table
    assert "| 0/2 (0%) | 0/1 (0%) |" in table


def test_rerun_skips_done_tasks_and_refuses_another_config(tmp_path: Path) -> None:
    out = tmp_path / "suite.jsonl"
    run_suite(FunctionModel(reply), TASKS[:2], LoopConfig(), out)

    def must_not_run(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise AssertionError("a finished task ran again")

    seen: list[str] = []
    again = run_suite(
        FunctionModel(must_not_run),
        TASKS[:2],
        LoopConfig(),
        out,
        on_result=lambda r: seen.append(r.id),
    )
    assert [r.passed for r in again] == [True, False] and seen == ["t-right", "t-wrong"]
    run_suite(FunctionModel(reply), TASKS, LoopConfig(), out)
    assert list(load_results(out)) == ["t-right", "t-wrong", "t-asks"]
    with pytest.raises(UserError, match=r"another configuration \(differs in \['planner'\]\)"):
        run_suite(FunctionModel(reply), TASKS, LoopConfig(planner="graph"), out)


def test_false_and_missed_asks(tmp_path: Path) -> None:
    def always_asks(messages: list[Message], tools: list[ToolSpec]) -> str:
        return call("convert_units", value=7, from_unit="ft", to_unit="cm")

    results = run_suite(
        FunctionModel(always_asks), TASKS, LoopConfig(clarify="ungrounded"), tmp_path / "a.jsonl"
    )
    assert summarize(results).false_asks == (2, 2)
    no_clarify = LoopConfig(clarify="off")
    results = run_suite(
        FunctionModel(lambda m, t: json.dumps({"answer": "19"})),
        TASKS,
        no_clarify,
        tmp_path / "b.jsonl",
    )
    assert summarize(results).missed_asks == (1, 1)


def _command() -> Any:
    """bench/suite.py, the command (its name clashes with the bench/suite package)."""
    path = Path(__file__).parents[2] / "bench" / "suite.py"
    spec = importlib.util.spec_from_file_location("suite_command", path)
    assert spec is not None and spec.loader is not None
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    return cli


def test_command_line_options() -> None:
    cli = _command()

    args = cli.parse_args(["--split", "dev", "--off", "clarify", "--planner", "react"])
    config = cli.configure(args)
    assert (config.planner, config.off, config.clarify) == ("react", ["clarify"], "missing")
    assert cli.default_out(config).name == "embedded-react-clarify_missing-no_clarify.jsonl"
    chosen = cli.select(cli.parse_args(["--split", "all", "--ids", "arith-001", "sql-003"]))
    assert [t.id for t in chosen] == ["arith-001", "sql-003"]
    assert len(cli.select(cli.parse_args(["--category", "units", "--limit", "3"]))) == 3
    with pytest.raises(UserError, match="Unknown task id"):
        cli.select(cli.parse_args(["--ids", "arith-999"]))


def test_command_runs_the_selected_tasks_and_writes_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = _command()
    model = FunctionModel(lambda m, t: json.dumps({"answer": "19, Paris"}))
    monkeypatch.setattr(LoopConfig, "build_model", lambda self: model)
    out = tmp_path / "run.jsonl"
    ids = ["--ids", "arith-003", "notool-002", "missing-001"]
    assert cli.main(["--split", "all", *ids, "--out", str(out)]) == 0

    assert [r.passed for r in load_results(out).values()] == [True, True, False]
    table = (tmp_path / "run.all.md").read_text()
    assert table in capsys.readouterr().out
    assert "| **all** | **2/3** | **67%** |" in table and "| 0/2 (0%) | 1/1 (100%) |" in table
    assert json.loads((tmp_path / "run.config.json").read_text())["model"] == "function"


def test_a_cascade_reports_which_model_wrote_each_turn(tmp_path: Path) -> None:
    from bigloop.routing.cascade import CascadeModel, grounded_reply

    cheap = FunctionModel(lambda m, t: json.dumps({"answer": "1000"}), name="cheap")
    strong = FunctionModel(reply, name="strong")
    cascade = CascadeModel(cheap, strong, check=grounded_reply)
    results = run_suite(cascade, TASKS[:1], LoopConfig(), tmp_path / "s.jsonl")
    # an answer before any tool ran goes to the strong model (which calls the tool);
    # once a tool has run, the cheap model's answer stands (the loop's checks apply)
    assert results[0].answered_by == ["strong", "cheap"]
    assert results[0].tools_called == ["calculator"]
    summary = summarize(results)
    assert summary.turns_by_model == {"strong": 1, "cheap": 1}
    assert "Model turns by the model that wrote them: strong 1, cheap 1." in markdown(
        summary, title="cascade"
    )
    alone = [replace(results[0], answered_by=["cheap"])]
    assert summarize(alone).turns_by_model is None  # one model: no line


def test_results_pinned_before_a_config_field_existed_still_resume(tmp_path: Path) -> None:
    model = FunctionModel(reply, name="m")
    out = tmp_path / "s.jsonl"
    run_suite(model, TASKS[:1], LoopConfig(), out)
    sidecar = out.with_suffix(".config.json")
    assert "escalate_when" not in json.loads(sidecar.read_text())  # at its default
    assert len(run_suite(model, TASKS[:1], LoopConfig(), out)) == 1  # resumes
    with pytest.raises(UserError, match="differs in \\['escalate_when'\\]"):
        run_suite(model, TASKS[:1], LoopConfig(escalate_when="unsure"), out)


def test_the_cascade_bench_compares_its_arms_against_the_strong_models_time() -> None:
    import argparse

    from bench import cascade_suite

    args = argparse.Namespace(
        strong="big.gguf", cheap="embedded", when="unsure", threshold=0.4, cheap_arm=True,
        split="test",
    )  # fmt: skip
    configs = cascade_suite.arms(args)
    assert list(configs) == ["strong", "cascade", "cheap"]
    assert configs["cascade"].escalate == "big.gguf"
    assert configs["cascade"].escalate_when == "unsure"
    assert configs["cascade"].escalate_threshold == 0.4

    def row(passed: bool, seconds: float, *by: str) -> Result:
        return Result(
            id="a", category="arithmetic", split="test", why="", status="done",
            passed=passed, seconds=seconds, answered_by=list(by),
        )  # fmt: skip

    results = {
        "strong": [row(True, 10.0, "big")],
        "cascade": [row(True, 4.0, "small", "big")],
        "cheap": [row(False, 2.0, "small")],
    }
    table = cascade_suite.markdown("cmd", args, results, strong_name="big")
    assert "| cascade | 1/1 | 100.0% | 4 | 4.0 | 0.40x | 1/2 |" in table
    assert "| arithmetic | 1/1 | 1/1 | 0/1 |" in table
