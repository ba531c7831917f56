"""The peers benchmark (`bench/peers.py`) end to end on scripted models: every framework
against both server kinds and bigloop in-process, scored, tabled and resumed; and a task
that overruns its time limit fails alone."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from bigloop_eval.suite import Workspace, load_results, split

from bench import peers
from bigloop import FunctionModel, Message, ToolSpec
from bigloop.protocols.openai_server import create_app
from tests import loopback

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.skipif(
    not peers.BENCH_PYTHON.exists(),
    reason="the peers' environment .venv-bench is absent (create it: bash scripts/bench-peers.sh)",
)
PEER_ROWS = [
    f"{framework}-{server}"
    for server in ("llama_cpp", "bigloop")
    for framework in ("langgraph", "pydantic-ai", "smolagents")
]


def run(*options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "bench" / "peers.py"), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def test_scripted_run_writes_every_row_and_the_table(tmp_path: Path) -> None:
    options = ["--scripted", "--split", "dev", "--limit", "4", "--out", str(tmp_path)]
    done = run(*options)
    assert done.returncode == 0, done.stderr

    first_four = [t.id for t in split("dev")[:4]]
    for row in PEER_ROWS:
        results = list(load_results(tmp_path / f"{row}.jsonl").values())
        # The scripted model makes each task's first ground-truth call, then answers with
        # the ground truth: every framework called the tool through the orchestrator.
        assert [(r.id, r.passed, r.status) for r in results] == [
            (i, True, "ok") for i in first_four
        ], row
        assert {(r.model_turns, r.tool_calls) for r in results} == {(2, 1)}, row
        assert all(r.tools_called == ["calculator"] and r.tokens > 0 for r in results), row
        assert all(r.split == "dev" and r.error is None for r in results), row
    inprocess = load_results(tmp_path / "bigloop-inprocess.jsonl")
    assert list(inprocess) == first_four

    table = (tmp_path / "latest.md").read_text()
    assert table in done.stdout
    command = f"Command: `.venv/bin/python bench/peers.py {' '.join(options)}`"
    assert command in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == 7 and rows[-1].startswith("| bigloop `Loop` | in-process | 4 |")
    assert sum("| `llama_cpp.server` | 4 | 100% | **4/4 (100%)** |" in r for r in rows) == 3
    assert sum("| `bigloop serve openai` | 4 | 100% | **4/4 (100%)** |" in r for r in rows) == 3
    assert "Scripted model (--scripted)" in table
    assert {p.name for p in (tmp_path / "logs").iterdir()} >= {
        "server-llama_cpp.log",
        "server-bigloop.log",
        *(f"{row}.log" for row in PEER_ROWS),
    }

    again = run(*options)
    assert again.returncode == 0, again.stderr
    assert "[langgraph-" not in again.stderr  # nothing ran again
    assert len((tmp_path / "langgraph-bigloop.jsonl").read_text().splitlines()) == 4


def test_other_settings_are_refused_in_the_same_folder(tmp_path: Path) -> None:
    options = ["--scripted", "--split", "dev", "--limit", "1", "--out", str(tmp_path)]
    assert run(*options, "--frameworks", "smolagents", "--servers", "bigloop").returncode == 0
    refused = run(*options, "--frameworks", "smolagents", "--max-turns", "4")
    assert refused.returncode == 2
    assert "holds results of other settings (['max_turns'])" in refused.stderr


@contextmanager
def serving(model: FunctionModel) -> Iterator[str]:
    """`model` behind bigloop's OpenAI-compatible app on loopback, in a thread."""
    with loopback.serving(lambda _: create_app(model)) as url:
        yield f"{url}v1"


def test_a_task_over_the_time_limit_fails_alone(tmp_path: Path) -> None:
    slow, quick = split("dev")[:2]

    async def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if slow.text in messages[-1].content:
            await asyncio.sleep(5)
        return json.dumps({"answer": "42"})

    args = peers.parse_args(["--task-timeout", "2", "--frameworks", "pydantic-ai"])
    workspace = Workspace.create(tmp_path / "workspace")
    tasks = [slow, quick]
    with (
        peers.ToolServer(tasks, workspace) as tools,
        serving(FunctionModel(reply, name="slow")) as base_url,
    ):
        bench = peers.Bench(
            args=args,
            out=tmp_path,
            work=tmp_path,
            exported=peers.export(tasks, workspace),
            tools=tools,
        )
        (tmp_path / "logs").mkdir()
        peers.run_agent(bench, "pydantic-ai", "bigloop", tasks, (base_url, "slow"))

    results = load_results(tmp_path / "pydantic-ai-bigloop.jsonl")
    assert [(r.id, r.status, r.passed) for r in results.values()] == [
        (slow.id, "timeout", False),
        (quick.id, "ok", False),
    ]
    assert results[slow.id].error == "over 2 s" and results[slow.id].seconds == 2
    assert results[quick.id].answer == "42" and results[quick.id].model_turns == 1
