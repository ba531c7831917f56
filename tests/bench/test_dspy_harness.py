"""The DSPy benchmark (`bench/dspy_opt.py`) end to end against a fake OpenAI-compatible
server: DSPy's program in its own environment, the metric's scoring endpoint, BFCL's
scoring, the table and the resume; the optimizers built and their budgets planned."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from bigloop_eval.bfcl_data import Case, load_cases

ROOT = Path(__file__).parents[2]
DSPY_PYTHON = ROOT / ".venv-dspy" / "bin" / "python"
pytestmark = pytest.mark.skipif(
    not DSPY_PYTHON.exists(),
    reason="DSPy's environment .venv-dspy is absent (create it: bash scripts/bench-dspy.sh)",
)
OUTPUT_FIELD = re.compile(r"^\d+\. `(\w+)` \(([^)]*)\)", re.MULTILINE)


def truth(case: Case) -> list[dict[str, Any]]:
    """The case's first possible answer as tool calls: each argument's first value ("" is
    BFCL's mark of an optional argument left out)."""
    calls = []
    for call in case.answer or []:
        for name, options in call.items():
            args = {k: next((v for v in values if v != ""), None) for k, values in options.items()}
            args = {k: v for k, v in args.items() if v is not None}
            calls.append({"name": name, "args": args})
    return calls


class FakeModel:
    """Answers DSPy's chat completions as its adapters expect them: every output field the
    system message asks for, `[[ ## field ## ]]` sections for the ChatAdapter, one JSON
    object for the JSONAdapter. `tool_calls` gets the canned calls of the case whose
    request is in the prompt (none if no case matches); any other field, a sentence."""

    def __init__(self, canned: dict[str, list[dict[str, Any]]]) -> None:
        self.canned = canned
        self.requests = 0
        self.max_tokens: list[Any] = []  # as each request asked (llama_cpp.server's field)
        self._lock = threading.Lock()

    def reply(self, messages: list[dict[str, Any]]) -> str:
        with self._lock:
            self.requests += 1
        system = str(messages[0]["content"]) if messages else ""
        prompt = str(messages[-1]["content"]) if messages else ""
        fields = OUTPUT_FIELD.findall(system.split("Your output fields are:")[-1])
        values: dict[str, Any] = {}
        for name, kind in fields:
            if kind == "ToolCalls":
                calls = next((c for text, c in self.canned.items() if text in prompt), [])
                values[name] = {"tool_calls": calls}
            else:
                values[name] = "Call the functions the request needs, with its values."
        if "[[ ## completed ## ]]" not in system:
            return json.dumps(values)
        sections = [
            f"[[ ## {name} ## ]]\n{json.dumps(v) if isinstance(v, dict) else v}"
            for name, v in values.items()
        ]
        return "\n\n".join([*sections, "[[ ## completed ## ]]"])


@contextmanager
def fake_server(model: FakeModel) -> Iterator[str]:
    """An OpenAI-compatible server on loopback (/v1/models, /v1/chat/completions)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "/models/fake.gguf"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            model.max_tokens.append(body.get("max_tokens"))
            content = model.reply(body.get("messages", []))
            self._send(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "fake"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
            )

        def _send(self, payload: dict[str, Any]) -> None:
            reply = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{http.server_address[1]}/v1"
    finally:
        http.shutdown()
        http.server_close()


def run(*options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "bench" / "dspy_opt.py"), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def test_the_program_as_written_is_run_scored_tabled_and_resumed(tmp_path: Path) -> None:
    first, second = load_cases("simple_python", limit=2)
    # The first case gets its right calls, the second none: one pass, one failure.
    model = FakeModel({first.messages[-1]["content"]: truth(first)})
    with fake_server(model) as url:
        options = ["--category", "simple_python", "--test", "2", "--train", "0", "--dev", "0"]
        options += ["--optimizer", "none", "--out", str(tmp_path), "--fake-server", url]
        done = run(*options)
        assert done.returncode == 0, done.stderr
        assert model.requests == 2  # one Predict call per test case

        table = (tmp_path / "simple_python.md").read_text()
        assert table in done.stdout
        assert f"Command: `.venv/bin/python bench/dspy_opt.py {' '.join(options)}`" in table
        assert "| none (the program as written) | **1/2 (50%)** | 0 | 0.0 |" in table
        assert "Fake server (--fake-server)" in table

        scored = json.loads((tmp_path / "simple_python.json").read_text())
        cases = scored["rows"][0]["cases"]
        assert [(c["id"], c["valid"], c["lm_calls"]) for c in cases] == [
            (first.id, True, 1),
            (second.id, False, 1),
        ]
        assert cases[0]["calls"] == [[c["name"], c["args"]] for c in truth(first)]
        assert cases[1]["calls"] == [] and cases[1]["error_type"]

        again = run(*options)
        assert again.returncode == 0, again.stderr
        assert "[none] complete, skipped" in again.stderr
        assert model.requests == 2  # nothing ran again
        results = tmp_path / "simple_python-none" / "results.jsonl"
        assert len(results.read_text().splitlines()) == 2

        refused = run(*options[:-4], "--max-tokens", "256", *options[-4:])
        assert refused.returncode == 2
        assert "holds results of other settings (['max_tokens'])" in refused.stderr


def test_the_optimizers_are_built_within_the_budget(tmp_path: Path) -> None:
    options = ["--optimizer", "mipro", "--optimizer", "gepa", "--dry-run", "--out", str(tmp_path)]
    done = run(*options, "--train", "30", "--dev", "30", "--budget", "300")
    assert done.returncode == 0, done.stderr
    mipro, gepa = (json.loads(line) for line in done.stdout.splitlines())
    assert mipro["optimizer_class"] == "MIPROv2" and gepa["optimizer_class"] == "GEPA"
    assert mipro["plan"]["num_candidates"] >= 2 and mipro["plan"]["num_trials"] >= 1
    assert 250 <= mipro["plan"]["estimate"]["total"] <= 300
    assert mipro["compile"]["num_trials"] == mipro["plan"]["num_trials"]
    estimate = gepa["plan"]["estimate"]
    assert 250 <= estimate["metric"] + estimate["reflection"] <= 300
    assert not list(tmp_path.iterdir())  # a dry run writes no results

    starved = run("--optimizer", "gepa", "--dry-run", "--dev", "30", "--budget", "20")
    assert starved.returncode == 1
    assert "--budget 20 is too small for GEPA" in starved.stderr


def test_mipro_and_gepa_optimize_and_their_model_calls_are_counted(tmp_path: Path) -> None:
    cases = load_cases("simple_python")
    # Right calls for the first test case and for some train and dev cases (so that
    # bootstrapping finds demos and the scores differ); none for the others.
    model = FakeModel({c.messages[-1]["content"]: truth(c) for c in [cases[0], *cases[100:105]]})
    with fake_server(model) as url:
        options = ["--test", "2", "--train", "3", "--dev", "3", "--budget", "40"]
        options += ["--optimizer", "mipro", "--optimizer", "gepa", "--out", str(tmp_path)]
        done = run(*options, "--fake-server", url)
    assert done.returncode == 0, done.stderr

    rows = {
        r["optimizer"]: r for r in json.loads((tmp_path / "simple_python.json").read_text())["rows"]
    }
    assert set(rows) == {"mipro", "gepa"}
    spent = 0
    for row in rows.values():
        assert row["complete"] and row["run"] == 2 and row["passed"] == 1
        assert 0 < row["lm_calls_optimizing"] <= 40 and row["dev_score"] is not None
        spent += row["lm_calls_optimizing"] + sum(c["lm_calls"] for c in row["cases"])
    assert spent == model.requests  # every request the server answered, counted once
    # Every request bounded its tokens as llama_cpp.server reads it: the program's calls
    # 512, the proposals and reflections 1024.
    assert set(model.max_tokens) == {512, 1024}
    assert rows["mipro"]["plan"]["num_trials"] >= 1
    assert rows["gepa"]["plan"]["max_metric_calls"] <= 40
    table = (tmp_path / "simple_python.md").read_text()
    assert "| MIPROv2 | **1/2 (50%)** |" in table and "| GEPA | **1/2 (50%)** |" in table
