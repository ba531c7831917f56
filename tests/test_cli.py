from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bigloop.atoms.builtin.python_sandbox import sandbox_problem
from bigloop.config import LoopConfig
from bigloop.trace.store import TraceStore

UNREACHABLE = "http://127.0.0.1:9/v1"


def bigloop(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bigloop", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"BIGLOOP_HOME": str(home), "PATH": ""},
    )


def test_help_lists_commands(tmp_path: Path) -> None:
    out = bigloop("--help", home=tmp_path)
    assert out.returncode == 0
    for command in ("run", "resume", "trace"):
        assert command in out.stdout


def test_developer_mistakes_fail_fast_with_the_fix(tmp_path: Path) -> None:
    missing = bigloop("run", "hi", "--model", str(tmp_path / "nope.gguf"), home=tmp_path)
    assert missing.returncode == 2
    assert "does not exist. Pass the path of a .gguf file" in missing.stderr
    bad_tool = bigloop("run", "hi", "--tools", "calculator,teleport", home=tmp_path)
    assert bad_tool.returncode == 2 and "Unknown tool(s) ['teleport']" in bad_tool.stderr
    bad_flag = bigloop("run", "hi", "--max-steps", "zero", home=tmp_path)
    assert bad_flag.returncode == 2 and "max-steps" in bad_flag.stderr
    bad_planner = bigloop("run", "hi", "--planner", "magic", home=tmp_path)
    assert bad_planner.returncode == 2 and "Unknown planner 'magic'" in bad_planner.stderr
    bad_clarify = bigloop("run", "hi", "--clarify", "sometimes", home=tmp_path)
    assert bad_clarify.returncode == 2 and "use off, missing or ungrounded" in bad_clarify.stderr
    empty = bigloop("run", "  ", "--model", "m", "--base-url", UNREACHABLE, home=tmp_path)
    assert empty.returncode == 2 and "The task is empty" in empty.stderr
    negative = bigloop("run", "hi", "--max-seconds", "-1", home=tmp_path)
    assert negative.returncode == 2 and "max_seconds: Input should be greater than 0" in (
        negative.stderr
    )
    unknown_run = bigloop("trace", "show", "abc", home=tmp_path)
    assert unknown_run.returncode == 2 and "No run matches id 'abc'" in unknown_run.stderr


def test_unreachable_server_is_reported(tmp_path: Path) -> None:
    out = bigloop(
        "run", "hi", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--json", home=tmp_path
    )
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["status"] == "failed"
    assert "Cannot reach the model server at http://127.0.0.1:9/v1" in result["error"]


@pytest.mark.real
def test_run_then_trace_on_the_embedded_model(tmp_path: Path) -> None:
    out = bigloop("run", "What is (45 + 12) / 3?", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Answer:" in out.stdout and "19" in out.stdout
    assert "calculator" in out.stderr, "live progress names the tool"
    runs = json.loads(bigloop("trace", "list", "--json", home=tmp_path).stdout)
    assert [r["status"] for r in runs] == ["ok"]
    shown = json.loads(bigloop("trace", "show", runs[0]["run_id"], "--json", home=tmp_path).stdout)
    assert [s["kind"] for s in shown["steps"]][:2] == ["model", "tool"]
    assert shown["steps"][1]["output"] == "19"
    table = bigloop("trace", "show", runs[0]["run_id"][:5], home=tmp_path)
    assert "calculator" in table.stdout


def test_config_file_with_overriding_options_is_saved_stored_and_resumed(tmp_path: Path) -> None:
    config_file = tmp_path / "loop.json"
    LoopConfig(model="m", base_url=UNREACHABLE, tools=["calculator"], max_steps=5).save(config_file)
    saved = tmp_path / "saved.json"
    out = bigloop(
        "run", "hi", "--config", str(config_file), "--max-steps", "2", "--planner", "react",
        "--off", "rank_tools", "--off", "listed_items", "--top-k", "1",
        "--save-config", str(saved), "--json", home=tmp_path,
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    first = json.loads(out.stdout)
    assert first["status"] == "failed"
    expected = LoopConfig(
        model="m",
        base_url=UNREACHABLE,
        tools=["calculator"],
        max_steps=2,
        planner="react",
        off=["rank_tools", "listed_items"],
        top_k=1,
    )
    assert LoopConfig.load(saved) == expected
    store = TraceStore(tmp_path / "traces.db")
    try:
        assert store.run(first["run_id"]).config == expected.model_dump()
    finally:
        store.close()
    resumed = bigloop("resume", first["run_id"][:6], "--json", home=tmp_path)
    assert resumed.returncode == 1, resumed.stderr
    again = json.loads(resumed.stdout)
    assert again["run_id"] == first["run_id"]
    assert f"Cannot reach the model server at {UNREACHABLE}" in again["error"]


def test_config_mistakes_fail_fast_with_the_fix(tmp_path: Path) -> None:
    missing = bigloop("run", "hi", "--config", str(tmp_path / "nope.json"), home=tmp_path)
    assert missing.returncode == 2 and "nope.json does not exist" in missing.stderr
    typo = tmp_path / "typo.json"
    typo.write_text('{"max_step": 3}')
    bad = bigloop("run", "hi", "--config", str(typo), home=tmp_path)
    assert bad.returncode == 2
    assert "max_step: Extra inputs are not permitted (did you mean 'max_steps'?)" in bad.stderr
    bad_off = bigloop("run", "hi", "--off", "nope", home=tmp_path)
    assert bad_off.returncode == 2 and "['nope']" in bad_off.stderr


def test_a_run_from_an_older_version_is_not_resumed(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "traces.db")
    try:
        store.start_run("0ld0ld0ld0ld", "hi", "embedded", {"tool_names": None, "max_steps": 8})
    finally:
        store.close()
    out = bigloop("resume", "0ld0ld", home=tmp_path)
    assert out.returncode == 2
    assert "Run 0ld0ld0ld0ld was recorded by another version of bigloop" in out.stderr
    assert "cannot be resumed by this one" in out.stderr and "tool_names" in out.stderr


def test_tools_list_and_search(tmp_path: Path) -> None:
    listed = bigloop("tools", "list", "--json", home=tmp_path)
    assert listed.returncode == 0
    names = [c["name"] for c in json.loads(listed.stdout)]
    assert "calculator" in names and "days_between" in names
    found = bigloop("tools", "search", "days between two dates", "--mode", "bm25", "--json",
                    home=tmp_path)  # fmt: skip
    assert found.returncode == 0
    assert json.loads(found.stdout)[0]["name"] in ("days_between", "add_days")
    bad = bigloop("tools", "search", "x", "--mode", "psychic", home=tmp_path)
    assert bad.returncode == 2 and "use hybrid, bm25 or dense" in bad.stderr


def test_error_messages_are_printed_as_text_not_markup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bigloop import UserError, cli

    def fail() -> None:
        raise UserError("Install it: pip install 'bigloop[ui]' (see [bold]docs[/bold]).")

    monkeypatch.setattr(cli, "app", fail)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "error: Install it: pip install 'bigloop[ui]' (see [bold]docs[/bold]).\n"
    )


@pytest.mark.skipif(
    sandbox_problem() is not None, reason="run_python is refused where its sandbox is missing"
)
def test_the_python_flag_is_stored_with_the_run(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    args = ("run", "hi", "--model", "m", "--base-url", UNREACHABLE, "--json")
    out = bigloop(*args, "--python", "--save-config", str(saved), home=tmp_path)
    assert out.returncode == 1, out.stderr
    assert LoopConfig.load(saved).python is True
    store = TraceStore(tmp_path / "traces.db")
    try:
        assert store.run(json.loads(out.stdout)["run_id"]).config["python"] is True
    finally:
        store.close()


def test_policies_lists_every_name_off_takes(tmp_path: Path) -> None:
    from bigloop.parts import NAMES

    listed = bigloop("policies", "--json", home=tmp_path)
    assert listed.returncode == 0
    assert [row["name"] for row in json.loads(listed.stdout)] == list(NAMES)


WITHOUT_BENCHMARKS = """
import importlib.metadata, sys
importlib.metadata.entry_points = lambda **kw: []  # as if bigloop-eval were not installed
from bigloop.cli import main
sys.argv = ["bigloop", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize(
    "args",
    [
        ("eval", "bfcl", "-c", "simple_python"),
        ("optimize", "suite"),
        ("tools", "build", "x", "--bfcl"),
    ],
)
def test_the_benchmark_commands_say_how_to_install_their_package(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    plain = bigloop(args[0], "--help", home=tmp_path)  # installed here (make setup)
    assert plain.returncode == 0 and "bigloop-eval" not in plain.stdout
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_BENCHMARKS, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "BIGLOOP_HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert "pip install bigloop-eval" in done.stderr and "Traceback" not in done.stderr


BROKEN_BENCHMARKS = """
import importlib.metadata as md, sys
broken = md.EntryPoint(name="benchmarks", value="no_such_module:register", group="bigloop.commands")
md.entry_points = lambda group=None, **kw: [broken] if group == "bigloop.commands" else []
from bigloop.cli import main
sys.argv = ["bigloop", "eval", "bfcl", "-c", "simple_python"]
main()
"""


def test_a_benchmark_package_that_fails_to_load_says_what_failed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BROKEN_BENCHMARKS],
        capture_output=True,
        text=True,
        env={**os.environ, "BIGLOOP_HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert "installed but could not be loaded" in done.stderr
    assert "no_such_module" in done.stderr and "Traceback" not in done.stderr


def test_a_damaged_trace_db_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    from bigloop import TraceStore

    db = tmp_path / "t.db"
    store = TraceStore(db)
    for i in range(200):
        store.start_run(f"run{i:08d}", "x" * 400, "m", {})
    store.close()
    data = bytearray(db.read_bytes())
    for at in range(4096 * 2, len(data), 4096):
        data[at : at + 64] = b"\xff" * 64  # every page header after the first two
    db.write_bytes(bytes(data))
    listed = bigloop("trace", "list", "--trace-db", str(db), home=tmp_path)
    assert listed.returncode == 2, listed.stderr
    assert "Traceback" not in listed.stderr and "trace DB" in listed.stderr


def test_escalation_options_are_saved_like_their_config_fields(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    args = ("run", "hi", "--model", "m", "--base-url", UNREACHABLE, "--json")
    when = ("--escalate-when", "unsure", "--escalate-threshold", "0.3")
    out = bigloop(*args, *when, "--save-config", str(saved), home=tmp_path)
    assert out.returncode == 1, out.stderr
    config = LoopConfig.load(saved)
    assert (config.escalate_when, config.escalate_threshold) == ("unsure", 0.3)
    bad = bigloop(*args, "--escalate-when", "sometimes", home=tmp_path)
    assert bad.returncode == 2 and "Unknown escalate_when 'sometimes'" in bad.stderr


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    out = subprocess.run(
        [sys.executable, "-m", "bigloop", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == f"bigloop {version('bigloop')}"


def test_doctor_names_a_missing_llama_cpp_and_missing_weights_with_the_fix() -> None:
    from bigloop.atoms.models.doctor import problems

    found = {
        "llama_cpp": {"version": None},
        "models": [{"name": "embedded", "state": "absent"}],
        "python_sandbox": {},
    }
    said = problems(found)
    assert any("llama.cpp is not installed" in p and "bigloop[local]" in p for p in said)


def test_the_commands_that_print_results_also_print_json(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"max_steps": 8}')
    b.write_text('{"max_steps": 12}')
    diff = bigloop("optimize", "diff", str(a), str(b), "--json", home=tmp_path)
    assert diff.returncode == 0, diff.stderr
    changes = json.loads(diff.stdout)["changes"]
    assert any("max_steps" in line for line in changes)
    (tmp_path / "lib").mkdir()
    recheck = bigloop("tools", "recheck", str(tmp_path / "lib"), "--json", home=tmp_path)
    assert recheck.returncode == 0 and json.loads(recheck.stdout) == {"retired": []}
