"""Peers side by side on the same model: the suite's tasks through LangGraph
`create_react_agent`, pydantic-ai `Agent` and smolagents `ToolCallingAgent`, each against
`llama_cpp.server` and `bigloop serve openai`, then bigloop's own loop in-process.

    .venv/bin/python bench/peers.py --split test       # the real model: hours on 2 cores
    .venv/bin/python bench/peers.py --scripted --split dev --limit 4   # plumbing, seconds

For each server kind, the server is started on a free loopback port, each framework runs
in its own process of the peers' environment (`bench/peers_agents.py` under
`.venv-bench`, `scripts/bench-peers.sh`), one after the other, and the server is stopped;
only then is the embedded model loaded here for bigloop's row: one model process at a time.

Every framework gets the same tools: each task's tools go to the peers as (name,
description, JSON schema), and their calls come back to a tool endpoint run here on
loopback, which calls bigloop's real tools of that task (files and SQL tools over the
suite's generated workspace included) and answers with the text bigloop's loop would see,
errors included. The answers are scored with the suite's checks. Peers cannot ask the
user, so they fail the missing_value tasks by construction; the table also shows the
accuracy without them.

One JSON Lines file per framework and server (`<framework>-<server>.jsonl`, rows as
`bigloop_eval.suite.Result`) and `bigloop-inprocess.jsonl` are written under --out; a rerun skips
the task ids already in them. The table goes to `<out>/latest.md`, logs to `<out>/logs/`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.suite import (
    CATEGORIES,
    LoopConfig,
    Result,
    Task,
    Toolbox,
    Workspace,
    assignment,
    load_results,
    run_suite,
    split,
    summarize,
)
from bigloop_eval.suite.checks import Outcome

from bigloop import FunctionModel, Message, OpenAIModel, Tool, ToolCall, ToolSpec, UserError
from bigloop.atoms.models.weights import DEFAULT_MODEL_FILE
from bigloop.runtime.call import call_tool

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "peers"
AGENTS = Path(__file__).parent / "peers_agents.py"
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
FRAMEWORKS = ("langgraph", "pydantic-ai", "smolagents", "smolagents-code", "bigloop")
DEFAULT_FRAMEWORKS = "langgraph,pydantic-ai,smolagents"
SERVERS = ("llama_cpp", "bigloop")
LABELS = {
    "langgraph": "LangGraph `create_react_agent`",
    "pydantic-ai": "pydantic-ai `Agent`",
    "smolagents": "smolagents `ToolCallingAgent`",
    "smolagents-code": "smolagents `CodeAgent`",
    "bigloop": "bigloop `Loop`",
    "llama_cpp": "`llama_cpp.server`",
    "bigloop-server": "`bigloop serve openai`",
    "inprocess": "in-process",
}
SIDES = assignment()
SERVER_START_S = 300.0
AGENT_START_S = 120.0


class HarnessError(Exception):
    """A server or a framework's process could not be started."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Results resume: rerunning a command skips the task ids already in --out.",
    )
    parser.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="test",
        help="The suite's split (test, the default, is the one to report).",
    )
    parser.add_argument("--limit", type=int, default=None, help="Only the first N tasks.")
    parser.add_argument("--ids", nargs="+", default=None, help="Only these task ids.")
    parser.add_argument(
        "--frameworks",
        default=DEFAULT_FRAMEWORKS,
        help=f"Comma-separated, of {', '.join(FRAMEWORKS)} (bigloop: its Loop as a client "
        f"of each server). Default: {DEFAULT_FRAMEWORKS}.",
    )
    parser.add_argument(
        "--servers", default="llama_cpp,bigloop", help="Comma-separated, of llama_cpp, bigloop."
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="Results folder (bench/results/peers)."
    )
    parser.add_argument(
        "--planner",
        choices=["auto", "react", "graph", "search", "code"],
        default="auto",
        help="bigloop's planner in the in-process row (default: auto, as `bigloop run`).",
    )
    parser.add_argument("--max-turns", type=int, default=8, help="Model turns per task (8).")
    parser.add_argument("--max-tokens", type=int, default=512, help="Tokens per turn (512).")
    parser.add_argument("--task-timeout", type=float, default=120.0, help="Seconds per task (120).")
    parser.add_argument(
        "--bench-python",
        type=Path,
        default=BENCH_PYTHON,
        help="The peers' Python (.venv-bench/bin/python, from scripts/bench-peers.sh).",
    )
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="TESTS ONLY: a scripted model (bigloop's FunctionModel answering each task with "
        "its first ground-truth call, then its ground truth) behind both server kinds and "
        "in-process, so the pipeline runs in seconds; no real model is loaded. Says "
        "nothing about quality. Default --out: a temporary folder.",
    )
    parser.add_argument("--serve-scripted", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.frameworks = _choices(args.frameworks, FRAMEWORKS, "--frameworks")
    args.servers = _choices(args.servers, SERVERS, "--servers")
    return args


def _choices(value: str, allowed: tuple[str, ...], option: str) -> list[str]:
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    if unknown := [v for v in chosen if v not in allowed]:
        raise SystemExit(f"{option}: unknown {unknown}; choose from {', '.join(allowed)}.")
    return chosen


def select(args: argparse.Namespace) -> list[Task]:
    tasks = split(args.split)
    if args.ids:
        if unknown := sorted(set(args.ids) - {t.id for t in tasks}):
            raise SystemExit(f"--ids: {unknown} are not tasks of the {args.split} split.")
        tasks = [t for t in tasks if t.id in args.ids]
    return tasks[: args.limit] if args.limit is not None else tasks


# -- the tools, shared by every framework -------------------------------------------------


def export(tasks: list[Task], workspace: Workspace) -> dict[str, dict[str, Any]]:
    """Each task as the peers' process reads it: id, category, text, tools as schemas."""
    return {
        t.id: {
            "id": t.id,
            "category": t.category,
            "text": t.text,
            "tools": [
                {"name": tool.name, "description": tool.description, "parameters": tool.schema}
                for tool in workspace.tools(t.tools)
            ],
        }
        for t in tasks
    }


class ToolServer:
    """`POST /call` {"task", "name", "arguments"} → {"output"}: the task's real tool run
    as bigloop's loop runs it (`call_tool`: validation, timeout, errors as text). The names
    of the tools called are kept per task (what the suite's checks see)."""

    def __init__(self, tasks: list[Task], workspace: Workspace) -> None:
        self._tools = {t.id: {x.name: x for x in workspace.tools(t.tools)} for t in tasks}
        self._called: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/call"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                output = server.call(body["task"], body["name"], body.get("arguments"))
                reply = json.dumps({"output": output}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def call(self, task_id: str, name: str, arguments: Any) -> str:
        with self._lock:
            self._called.setdefault(task_id, []).append(name)
        tools: dict[str, Tool] = self._tools.get(task_id, {})
        call = ToolCall(id="peer", name=name, arguments=arguments)
        return asyncio.run(call_tool(call, tools)).output

    def take(self, task_id: str) -> list[str]:
        """The tools called for `task_id` so far, forgotten here."""
        with self._lock:
            return self._called.pop(task_id, [])

    def __enter__(self) -> ToolServer:
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


# -- the model servers -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_command(kind: str, port: int, scripted: bool) -> list[str]:
    if scripted:
        return [sys.executable, str(Path(__file__).resolve()), "--serve-scripted", str(port)]
    where = ["--host", "127.0.0.1", "--port", str(port)]
    if kind == "bigloop":
        return [sys.executable, "-m", "bigloop", "serve", "openai", *where]
    from bigloop.atoms.models.weights import default_model_path

    threads = str(os.cpu_count() or 2)  # as LocalModel: every core, prompt and generation
    return [
        *(sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path())),
        *("--n_ctx", "8192", "--n_threads", threads, "--n_threads_batch", threads, *where),
    ]


@contextmanager
def model_server(kind: str, scripted: bool, log: Path) -> Iterator[tuple[str, str]]:
    """A model server of `kind` running on loopback: its base URL and its model id."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("a", encoding="utf-8") as out:
        process = subprocess.Popen(
            server_command(kind, port, scripted), stdout=out, stderr=subprocess.STDOUT
        )
        try:
            yield base_url, _wait_ready(process, base_url, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(process: subprocess.Popen[bytes], base_url: str, log: Path) -> str:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise HarnessError(f"The server exited with code {process.returncode}; see {log}.")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
                model_id: str = json.loads(response.read())["data"][0]["id"]
                return model_id
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise HarnessError(f"The server did not answer within {SERVER_START_S:g} s; see {log}.")


# -- one framework's process -------------------------------------------------------------


def pin(path: Path, settings: dict[str, Any]) -> None:
    """Record what `path` holds results of; refuse to add results of something else."""
    sidecar = path.with_suffix(".config.json")
    if sidecar.exists():
        before = json.loads(sidecar.read_text(encoding="utf-8"))
        if before != settings:
            changed = sorted(
                k for k in settings.keys() | before if before.get(k) != settings.get(k)
            )
            raise UserError(
                f"{path} holds results of other settings ({changed}); use another --out."
            )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def score(task: Task, raw: dict[str, Any], called: list[str]) -> Result:
    """A peer's answer judged by the task's check (a peer never asks)."""
    outcome = Outcome(status=raw["status"], answer=raw["answer"], tools_called=tuple(called))
    passed, why = task.check(outcome)
    return Result(
        id=task.id,
        category=task.category,
        split=SIDES.get(task.id, "extra"),
        passed=passed,
        why=why,
        status=raw["status"],
        answer=raw["answer"],
        seconds=raw["seconds"],
        model_turns=raw.get("model_turns", 0),
        tool_calls=len(called),
        tools_called=called,
        prompt_tokens=raw.get("prompt_tokens", 0),
        completion_tokens=raw.get("completion_tokens", 0),
        error=raw.get("error"),
    )


def _append(path: Path, result: Result) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(asdict(result), ensure_ascii=False) + "\n")


@contextmanager
def _results_of(command: list[str], log: Path) -> Iterator[queue.Queue[str | None]]:
    """A process of `command`, its stdout's lines as they come, then None; killed on exit
    if still running."""
    lines: queue.Queue[str | None] = queue.Queue()
    with log.open("a", encoding="utf-8") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
    stdout = process.stdout
    assert stdout is not None

    def read() -> None:
        with stdout:
            for line in stdout:
                lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield lines
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        reader.join(timeout=10)


@dataclass(kw_only=True)
class Bench:
    """What every row of one command shares."""

    args: argparse.Namespace
    out: Path
    work: Path
    exported: dict[str, dict[str, Any]]
    tools: ToolServer

    def path(self, row: str) -> Path:
        return self.out / f"{row}.jsonl"

    def log(self, name: str) -> Path:
        return self.out / "logs" / f"{name}.log"


def run_agent(
    bench: Bench, framework: str, server: str, todo: list[Task], served: tuple[str, str]
) -> None:
    """Run `todo` through one framework's process, appending each scored result.

    A task that takes longer than --task-timeout, or during which the process dies, is
    recorded as failed; the process is started again for the tasks left.

    Raises:
        HarnessError: the process did not start.
    """
    args, row = bench.args, f"{framework}-{server}"
    base_url, model_id = served
    remaining = list(todo)
    while remaining:
        tasks_file = bench.work / f"{row}.tasks.json"
        tasks = [bench.exported[t.id] for t in remaining]
        tasks_file.write_text(json.dumps(tasks), encoding="utf-8")
        command = [
            *(str(args.bench_python), str(AGENTS), "--framework", framework),
            *("--tasks", str(tasks_file), "--base-url", base_url, "--model", model_id),
            *("--tool-url", bench.tools.url, "--max-turns", str(args.max_turns)),
            *("--max-tokens", str(args.max_tokens), "--timeout", str(args.task_timeout)),
        ]
        with _results_of(command, bench.log(row)) as lines:
            _read_results(bench, row, lines, remaining)


def _read_results(
    bench: Bench, row: str, lines: queue.Queue[str | None], remaining: list[Task]
) -> None:
    """Score and record the process's results until it is done, dies or overruns a task."""
    timeout = bench.args.task_timeout
    try:
        ready = lines.get(timeout=AGENT_START_S)
    except queue.Empty:
        ready = None
    if ready is None or not json.loads(ready).get("ready"):
        raise HarnessError(f"{row}: the framework's process did not start; see {bench.log(row)}.")
    while remaining:
        task = remaining[0]
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            line, failure = None, {"status": "timeout", "error": f"over {timeout:g} s"}
        else:
            failure = {"status": "error", "error": "the framework's process died (see its log)"}
        if line is None:
            raw: dict[str, Any] = {"answer": None, "seconds": timeout, **failure}
        else:
            raw = json.loads(line)
            if raw["id"] != task.id:
                raise HarnessError(f"{row}: got {raw['id']} where {task.id} was due.")
        result = score(task, raw, bench.tools.take(task.id))
        _append(bench.path(row), result)
        remaining.pop(0)
        _progress(row, result)
        if line is None:
            return


def _progress(row: str, result: Result) -> None:
    mark = "pass" if result.passed else "FAIL"
    detail = f" ({result.status})" if result.status != "ok" else ""
    print(f"[{row}] {result.id} {mark}{detail} {result.seconds:.1f} s", file=sys.stderr)


# -- the run -----------------------------------------------------------------------------


def plan(
    args: argparse.Namespace, tasks: list[Task], out: Path
) -> dict[str, dict[str, list[Task]]]:
    """The tasks each row has still to run, by server then framework (every file pinned
    first, so that a mismatch stops the command before anything runs)."""
    todo: dict[str, dict[str, list[Task]]] = {}
    for server in args.servers:
        for framework in args.frameworks:
            path = out / f"{framework}-{server}.jsonl"
            if framework != "bigloop":  # run_suite pins its own files
                pin(path, {"framework": framework, "server": server, **_limits(args)})
            done = load_results(path)
            if pending := [t for t in tasks if t.id not in done]:
                todo.setdefault(server, {})[framework] = pending
    return todo


def peer_rows(bench: Bench, todo: dict[str, dict[str, list[Task]]]) -> list[str]:
    """Each server started in turn, every framework run against it, and stopped; the
    rows that could not run."""
    failed = []
    for server, rows in todo.items():
        try:
            with model_server(server, bench.args.scripted, bench.log(f"server-{server}")) as served:
                for framework, pending in rows.items():
                    try:
                        if framework == "bigloop":
                            _bigloop_client(bench, server, pending, served)
                        else:
                            run_agent(bench, framework, server, pending, served)
                    except HarnessError as e:
                        print(f"Error: {e}", file=sys.stderr)
                        failed.append(f"{framework}-{server}")
        except HarnessError as e:
            print(f"Error: {e}", file=sys.stderr)
            failed += [f"{framework}-{server}" for framework in rows]
    return failed


def _bigloop_client(bench: Bench, server: str, todo: list[Task], served: tuple[str, str]) -> None:
    """bigloop's loop as one more client of the server (`--frameworks ...,bigloop`)."""
    args, path = bench.args, bench.path(f"bigloop-{server}")
    base_url, model_id = served
    model = OpenAIModel(model_id, base_url=base_url, timeout_s=args.task_timeout)
    run_suite(model, todo, loop_config(args), path, on_result=_reporter(path.stem))


def _reporter(row: str) -> Callable[[Result], None]:
    return lambda result: _progress(row, result)


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "model": model_label(args),
        "max_turns": args.max_turns,
        "max_tokens": args.max_tokens,
    }


def loop_config(args: argparse.Namespace) -> LoopConfig:
    """bigloop's loop as `bigloop run` builds it, with the peers' turn and time limits."""
    return LoopConfig(max_steps=args.max_turns, max_seconds=args.task_timeout, planner=args.planner)


def model_label(args: argparse.Namespace) -> str:
    return "scripted" if args.scripted else DEFAULT_MODEL_FILE


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # `kill` stops the servers and agents this run started too (their `finally` blocks run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.serve_scripted is not None:
        serve_scripted(args.serve_scripted)
        return 0
    if any(f != "bigloop" for f in args.frameworks) and not args.bench_python.exists():
        print(f"Error: no {args.bench_python}; run bash scripts/bench-peers.sh", file=sys.stderr)
        return 2
    scratch = Path(tempfile.gettempdir()) / "bigloop-peers-scripted"
    out: Path = args.out or (scratch if args.scripted else RESULTS)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    tasks = select(args)
    inprocess = out / "bigloop-inprocess.jsonl"
    with tempfile.TemporaryDirectory(prefix="bigloop-peers-") as tmp:
        work = Path(tmp)
        workspace = Workspace.create(work / "workspace")
        # Built, not loaded: the embedded model loads on its first turn, after the servers.
        model = (
            FunctionModel(Oracle(workspace), name="scripted")
            if args.scripted
            else loop_config(args).build_model()
        )
        try:
            todo = plan(args, tasks, out)
            run_suite(model, [], loop_config(args), inprocess)  # pins its file now
            with ToolServer(tasks, workspace) as tools:
                exported = export(tasks, workspace)
                bench = Bench(args=args, out=out, work=work, exported=exported, tools=tools)
                failed = peer_rows(bench, todo)
            report = _reporter(inprocess.stem)
            run_suite(model, tasks, loop_config(args), inprocess, on_result=report)
        except UserError as e:
            print(f"Error: {e}", file=sys.stderr)
            return 2
    command = shlex.join([".venv/bin/python", "bench/peers.py", *(argv or sys.argv[1:])])
    table = markdown(args, tasks, out, command)
    (out / "latest.md").write_text(table, encoding="utf-8")
    print(table)
    if failed:
        print(f"Rows that could not run: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


# -- the table ---------------------------------------------------------------------------


def markdown(args: argparse.Namespace, tasks: list[Task], out: Path, command: str) -> str:
    """The table of every row over `tasks`, results read back from the files in `out`."""
    rows = [(f, s) for s in args.servers for f in args.frameworks] + [("bigloop", "inprocess")]
    ids = {t.id for t in tasks}
    results = {
        row: [r for r in load_results(out / f"{row[0]}-{row[1]}.jsonl").values() if r.id in ids]
        for row in rows
    }
    base = results[("bigloop", "inprocess")]
    categories: list[str] = [c for c in CATEGORIES if any(t.category == c for t in tasks)]
    head = ["framework", "server", "tasks", *categories, "**all**", "all but missing_value"]
    head += ["p50 s", "p95 s", "model turns", "tokens", "errors"]
    head += ["Δ acc vs bigloop", "time vs bigloop"]
    lines = [
        f"# Peers side by side, {args.split} split: {model_label(args)}",
        "",
        f"Command: `{command}`",
        "",
        f"{len(tasks)} tasks; {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores. Every "
        f"row: at most {args.max_turns} model turns and {args.max_tokens} tokens per turn, "
        f"{args.task_timeout:g} s per task, temperature 0. bigloop in-process: planner "
        f"{args.planner}.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *(_table_row(row, results[row], base, categories) for row in rows),
    ]
    for note in NOTES:
        lines += ["", note]
    if args.scripted:
        lines += ["", "**Scripted model (--scripted): plumbing only, says nothing of quality.**"]
    return "\n".join(lines) + "\n"


NOTES = [
    "Accuracy: the share of tasks whose answer passed the suite's check. Peers cannot ask "
    "the user, so they fail missing_value by construction; *all but missing_value* leaves "
    "those tasks out of every row.",
    "Model turns: chat-completion requests per task (peers: counted on their HTTP client, "
    "smolagents' forced answer after its step limit included; bigloop: model steps). "
    "Tokens: prompt + completion per task, as the server reported them. Errors: tasks "
    "ended by an exception, the turn limit or the timeout.",
    "Δ acc vs bigloop: points of accuracy above or below bigloop's loop in-process. "
    "Time vs bigloop: mean seconds per task over bigloop in-process's.",
]


def _table_row(
    row: tuple[str, str], results: list[Result], base: list[Result], categories: list[str]
) -> str:
    framework, server = row
    place = LABELS["bigloop-server" if server == "bigloop" else server]
    cells = [LABELS[framework], place, str(len(results))]
    if not results:
        return "| " + " | ".join(cells + ["–"] * (len(categories) + 9)) + " |"
    summary = summarize(results)
    for category in categories:
        k, n = summary.by_category.get(category, (0, 0))
        cells.append(f"{k / n:.0%}" if n else "–")
    answerable = [r for r in results if r.category != "missing_value"]
    cells.append(f"**{summary.passed}/{summary.tasks} ({summary.accuracy:.0%})**")
    cells.append(_share(sum(r.passed for r in answerable), len(answerable)))
    cells += [f"{summary.p50_seconds:.2f}", f"{summary.p95_seconds:.2f}"]
    cells += [f"{summary.mean_model_turns:.2f}", f"{summary.mean_tokens:.0f}"]
    cells.append(str(sum(r.status not in ("ok", "input_required") for r in results)))
    if row == ("bigloop", "inprocess") or not base:
        cells += ["–", "–"]
    else:
        delta = summary.accuracy - summarize(base).accuracy
        cells.append(f"{delta * 100:+.0f}")
        cells.append(f"{_mean_seconds(results) / max(_mean_seconds(base), 1e-9):.2f}x")
    return "| " + " | ".join(cells) + " |"


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "–"


def _mean_seconds(results: list[Result]) -> float:
    return sum(r.seconds for r in results) / len(results) if results else 0.0


# -- the scripted model (--scripted, tests only) ------------------------------------------


class _Recording(Toolbox):
    """A toolbox that remembers the calls made through it."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(workspace)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, tool_name: str, /, **arguments: Any) -> Any:
        self.calls.append((tool_name, arguments))
        return super().__call__(tool_name, **arguments)


class Oracle:
    """The scripted model of --scripted: on a task's first turn, the first call its ground
    truth (`Task.solve`) makes, if offered; then the ground truth as the answer (through
    smolagents' `final_answer` tool when offered). Tasks without a ground truth get a
    refusal. Plumbing only: it knows the answers."""

    def __init__(self, workspace: Workspace) -> None:
        self._box = _Recording(workspace)
        self._tasks = sorted(split("all"), key=lambda t: -len(t.text))

    def __call__(self, messages: list[Message], tools: list[ToolSpec]) -> str:
        request = "\n".join(m.content for m in messages if m.role == "user")
        task = next((t for t in self._tasks if t.text in request), None)
        offered = {t.name for t in tools}
        if task is None or task.solve is None:
            return self._answer("I cannot help with that.", offered)
        self._box.calls.clear()
        truth = str(task.solve(self._box))
        first_turn = not any(m.role in ("assistant", "tool") for m in messages)
        if first_turn and self._box.calls and self._box.calls[0][0] in offered:
            name, arguments = self._box.calls[0]
            return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})
        return self._answer(truth, offered)

    @staticmethod
    def _answer(text: str, offered: set[str]) -> str:
        if "final_answer" in offered:
            call = {"name": "final_answer", "arguments": {"answer": text}}
            return json.dumps({"tool_calls": [call]})
        return json.dumps({"answer": text})


def serve_scripted(port: int) -> None:
    """The scripted model behind `bigloop serve openai`'s app, until terminated."""
    import uvicorn

    from bigloop.protocols.openai_server import create_app

    with tempfile.TemporaryDirectory(prefix="bigloop-peers-") as tmp:
        model = FunctionModel(Oracle(Workspace.create(Path(tmp))), name="scripted")
        uvicorn.run(create_app(model), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
