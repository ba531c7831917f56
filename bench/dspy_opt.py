"""DSPy's optimizers (MIPROv2, GEPA) on BFCL cases with the embedded model, on the splits
bigloop's own optimizer uses.

    .venv/bin/python bench/dspy_opt.py --category simple_python --train 30 --dev 30 \\
        --test 100 --optimizer none --optimizer mipro --optimizer gepa --budget 300

Splits, in the category file's order: test = cases [0, test) (test <= 100), train =
[100, 100 + train), dev = [100 + train, 100 + train + dev). Cases are read with bigloop's
loaders and scored with BFCL's checker as bigloop scores them (`bigloop_eval.bfcl_score`).

`llama_cpp.server` is started on a free loopback port with the embedded model (as
`bench/peers.py` starts it), and a scoring endpoint on loopback (POST {"id", "calls"} ->
{"valid", "error_type", "error"}) is DSPy's metric. Each optimizer then runs in its own
process of DSPy's environment (`bench/dspy_program.py` under `.venv-dspy`, from
`scripts/bench-dspy.sh`), one after the other; DSPy is never a bigloop dependency.

Under --out, each optimizer gets `<category>-<optimizer>/` (per-case `results.jsonl`,
`summary.json`, the optimized program, `run.log`); the table goes to `<category>.md`, the
scored cases to `<category>.json`. A rerun skips the optimizers whose results are complete
and finishes the others (an optimization already done is not run again).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.peers import HarnessError, model_server, pin
from bigloop_eval.bfcl_data import SINGLE_TURN, Case
from bigloop_eval.bfcl_run import load_any
from bigloop_eval.bfcl_score import score

from bigloop import UserError
from bigloop.atoms.models.weights import DEFAULT_MODEL_FILE

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "dspy"
PROGRAM = Path(__file__).parent / "dspy_program.py"
DSPY_PYTHON = ROOT / ".venv-dspy" / "bin" / "python"
OPTIMIZERS = ("none", "mipro", "gepa")
FIRST_TRAIN = 100  # train and dev come after the first 100 cases, which test draws from
LABELS = {"none": "none (the program as written)", "mipro": "MIPROv2", "gepa": "GEPA"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Splits: test = cases [0, test); train = [100, 100 + train); dev = "
        "[100 + train, 100 + train + dev), in the category file's order. Rerunning a "
        "command skips the optimizers whose results in --out are complete.",
    )
    parser.add_argument(
        "--category",
        choices=SINGLE_TURN,
        default="simple_python",
        metavar="CATEGORY",
        help=f"A single-turn BFCL category (simple_python): {', '.join(SINGLE_TURN)}.",
    )
    parser.add_argument("--train", type=int, default=30, help="Train cases (30).")
    parser.add_argument("--dev", type=int, default=30, help="Dev cases, the valset (30).")
    parser.add_argument("--test", type=int, default=100, help="Test cases, at most 100 (100).")
    parser.add_argument(
        "--optimizer",
        action="append",
        choices=OPTIMIZERS,
        default=None,
        help="none, mipro or gepa; repeat for several, run in the order given (none).",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=300,
        help="Model calls each optimizer may spend optimizing, proposals and reflection "
        "included (300); the test evaluation comes on top.",
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="Results folder (bench/results/dspy)."
    )
    parser.add_argument(
        "--module",
        choices=["predict", "cot"],
        default="predict",
        help="The DSPy program: dspy.Predict (default) or dspy.ChainOfThought.",
    )
    parser.add_argument("--max-tokens", type=int, default=512, help="Per program call (512).")
    parser.add_argument(
        "--dspy-python",
        type=Path,
        default=DSPY_PYTHON,
        help="DSPy's Python (.venv-dspy/bin/python, from scripts/bench-dspy.sh).",
    )
    parser.add_argument(
        "--fake-server",
        default=None,
        metavar="URL",
        help="TESTS ONLY: this OpenAI-compatible server (.../v1) instead of starting "
        "llama_cpp.server with the embedded model.",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="Build each optimizer in DSPy's process and print its plan (the budget's "
        "split); no server, no model call.",
    )
    args = parser.parse_args(argv)
    args.optimizer = list(dict.fromkeys(args.optimizer or ["none"]))
    if not 0 < args.test <= FIRST_TRAIN:
        parser.error(f"--test must be between 1 and {FIRST_TRAIN}.")
    if args.train < 0 or args.dev < 0 or args.budget < 0:
        parser.error("--train, --dev and --budget cannot be negative.")
    if any(o != "none" for o in args.optimizer) and args.train < 1:
        parser.error("mipro and gepa need --train 1 or more.")
    if "mipro" in args.optimizer and args.dev < 1:
        parser.error("mipro needs --dev 1 or more (its valset).")
    return args


# -- the cases -----------------------------------------------------------------------------


def splits(args: argparse.Namespace) -> dict[str, list[Case]]:
    """test, train and dev, as bigloop's optimizer splits the category.

    Raises:
        UserError: the category has too few cases for the splits asked for.
    """
    cases: list[Case] = load_any(args.category)
    end = FIRST_TRAIN + args.train + args.dev
    needed = end if args.train + args.dev else args.test
    if len(cases) < needed:
        raise UserError(
            f"{args.category} has {len(cases)} cases; these splits need {needed} "
            f"(train and dev start at case {FIRST_TRAIN})."
        )
    return {
        "test": cases[: args.test],
        "train": cases[FIRST_TRAIN : FIRST_TRAIN + args.train],
        "dev": cases[FIRST_TRAIN + args.train : end],
    }


def export(case: Case) -> dict[str, Any]:
    """A case as DSPy's process reads it: the functions as JSON schema, as bigloop's
    models get them."""
    return {
        "id": case.id,
        "messages": case.messages,
        "functions": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in case.tools
        ],
    }


def score_calls(case: Case, calls: Any) -> dict[str, Any]:
    """BFCL's verdict on `calls` ([[name, arguments], ...]) for `case`."""
    pairs = [
        (c[0], c[1])
        for c in (calls if isinstance(calls, list) else [])
        if isinstance(c, list | tuple) and len(c) == 2 and isinstance(c[0], str)
    ]
    result = score(case, pairs)
    errors = result.errors
    error = "; ".join(map(str, errors)) if isinstance(errors, list) else str(errors or "")
    return {"valid": result.valid, "error_type": result.error_type or "", "error": error}


class ScoreServer:
    """`POST /score` {"id", "calls"} -> {"valid", "error_type", "error"}: DSPy's metric."""

    def __init__(self, cases: list[Case]) -> None:
        self._cases = {c.id: c for c in cases}
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/score"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                case = server._cases.get(body.get("id"))
                if case is None:
                    verdict = {"valid": False, "error_type": "unknown_case", "error": ""}
                else:
                    with server._lock:
                        verdict = score_calls(case, body.get("calls"))
                reply = json.dumps(verdict).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> ScoreServer:
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


# -- the runs ------------------------------------------------------------------------------


def folder(args: argparse.Namespace, optimizer: str) -> Path:
    out: Path = args.out
    return out / f"{args.category}-{optimizer}"


def settings(args: argparse.Namespace, optimizer: str) -> dict[str, Any]:
    """What a results folder holds results of (a rerun with others is refused); the
    program as written does not depend on train, dev or the budget."""
    optimizing = optimizer != "none"
    return {
        "category": args.category,
        "optimizer": optimizer,
        "train": args.train if optimizing else None,
        "dev": args.dev if optimizing else None,
        "test": args.test,
        "budget": args.budget if optimizing else None,
        "module": args.module,
        "max_tokens": args.max_tokens,
        "model": model_label(args),
    }


def read_rows(path: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["id"]] = row
    return rows


def complete(args: argparse.Namespace, optimizer: str, test: list[Case]) -> bool:
    where = folder(args, optimizer)
    done = read_rows(where / "results.jsonl")
    return (where / "summary.json").exists() and all(c.id in done for c in test)


def program_command(
    args: argparse.Namespace, optimizer: str, cases_file: Path, served: tuple[str, str]
) -> list[str]:
    """The command of one optimizer's process (a dry run writes in the scratch folder)."""
    base_url, model_id = served
    out_dir = cases_file.parent / optimizer if args.dry_run else folder(args, optimizer)
    return [
        *(str(args.dspy_python), str(PROGRAM), "--cases", str(cases_file)),
        *("--base-url", base_url, "--model", model_id, "--optimizer", optimizer),
        *("--budget", str(args.budget), "--out-dir", str(out_dir)),
        *("--module", args.module, "--max-tokens", str(args.max_tokens)),
        *(["--dry-run"] if args.dry_run else []),
    ]


def run_program(args: argparse.Namespace, command: list[str], work: Path) -> int:
    """One optimizer's process, its output to its folder's run.log; its exit code."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", DSPY_CACHEDIR=str(work / "dspy-cache"))
    env.update(PYTHONUNBUFFERED="1")
    log = Path(command[command.index("--out-dir") + 1]) / "run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if args.dry_run:  # the plan to stdout, problems to stderr
        done = subprocess.run(command, capture_output=True, env=env, text=True, check=False)
        if done.stdout.strip():
            print(done.stdout.strip())
        if done.stderr.strip():
            print(done.stderr.strip(), file=sys.stderr)
        return done.returncode
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        return subprocess.run(command, stdout=out, stderr=out, env=env, check=False).returncode


@contextmanager
def served_model(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """The model server's base URL and model id: --fake-server's, or llama_cpp.server with
    the embedded model, started here and stopped on exit."""
    if args.dry_run:
        yield "http://127.0.0.1:9/v1", "dry-run"
    elif args.fake_server:
        base_url = args.fake_server.rstrip("/")
        with urllib.request.urlopen(f"{base_url}/models", timeout=10) as response:
            yield base_url, json.loads(response.read())["data"][0]["id"]
    else:
        log = args.out / "logs" / "server-llama_cpp.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with model_server("llama_cpp", False, log) as served:
            yield served


def run(args: argparse.Namespace, parts: dict[str, list[Case]], work: Path) -> list[str]:
    """Every optimizer not yet complete, one after the other; the ones that failed."""
    if not args.dry_run:  # every folder first: a mismatch stops the command before any run
        for optimizer in args.optimizer:
            pin(folder(args, optimizer) / "results.jsonl", settings(args, optimizer))
    todo = [o for o in args.optimizer if args.dry_run or not complete(args, o, parts["test"])]
    for optimizer in args.optimizer:
        if optimizer not in todo:
            print(f"[{optimizer}] complete, skipped", file=sys.stderr)
    if not todo:
        return []
    failed = []
    everything = [c for part in parts.values() for c in part]
    with ScoreServer(everything) as scorer, served_model(args) as served:
        cases_file = work / "cases.json"
        exported = {name: [export(c) for c in part] for name, part in parts.items()}
        cases_file.write_text(json.dumps({"score_url": scorer.url, **exported}))
        for optimizer in todo:
            command = program_command(args, optimizer, cases_file, served)
            log = Path(command[command.index("--out-dir") + 1]) / "run.log"
            where = "dry run" if args.dry_run else f"log: {log}"
            print(f"[{optimizer}] running; {where}", file=sys.stderr)
            start = time.monotonic()
            code = run_program(args, command, work)
            minutes = (time.monotonic() - start) / 60
            print(f"[{optimizer}] exit {code} after {minutes:.1f} min", file=sys.stderr)
            if code != 0:
                failed.append(optimizer)
    return failed


# -- the table -----------------------------------------------------------------------------


def model_label(args: argparse.Namespace) -> str:
    return "fake server" if args.fake_server else DEFAULT_MODEL_FILE


def row_of(args: argparse.Namespace, optimizer: str, test: list[Case]) -> dict[str, Any]:
    """One optimizer's numbers over the test cases, its calls scored here."""
    where = folder(args, optimizer)
    rows = read_rows(where / "results.jsonl")
    info: dict[str, Any] = {}
    for name in ("optimized.json", "summary.json"):
        if (where / name).exists():
            info.update(json.loads((where / name).read_text(encoding="utf-8")))
    cases = []
    for case in test:
        if case.id in rows:
            verdict = score_calls(case, rows[case.id]["calls"])
            cases.append({"id": case.id, **verdict, **rows[case.id]})
    seconds = [c["seconds"] for c in cases]
    return {
        "optimizer": optimizer,
        "cases": cases,
        "passed": sum(c["valid"] for c in cases),
        "run": len(cases),
        "lm_calls_optimizing": info.get("lm_calls_optimizing"),
        "seconds_optimizing": info.get("seconds_optimizing"),
        "dev_score": info.get("dev_score"),
        "plan": info.get("plan"),
        "p50_seconds": statistics.median(seconds) if seconds else None,
        "mean_lm_calls": statistics.mean(c["lm_calls"] for c in cases) if cases else None,
        "errors": sum(bool(c.get("error")) for c in cases),
        "complete": (where / "summary.json").exists() and len(cases) == len(test),
    }


def markdown(args: argparse.Namespace, rows: list[dict[str, Any]], command: str) -> str:
    n = args.test
    head = ["optimizer", "test accuracy", "LM calls optimizing", "minutes optimizing"]
    head += ["p50 s / test case", "LM calls / test case", "errors", "dev score"]
    lines = [
        f"# DSPy optimizers on BFCL {args.category}: {model_label(args)}",
        "",
        f"Command: `{command}`",
        "",
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores. Test: cases 0-{n - 1}; train: "
        f"{args.train} cases from {FIRST_TRAIN}; dev: {args.dev} cases from "
        f"{FIRST_TRAIN + args.train}. DSPy program: `dspy.{_module(args)}` over `request, "
        f"tools: list[dspy.Tool] -> tool_calls: dspy.ToolCalls`, ChatAdapter, temperature "
        f"0, {args.max_tokens} tokens per call. Budget: {args.budget} model calls per "
        "optimizer.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in rows:
        cells = [LABELS[row["optimizer"]]]
        k, run = row["passed"], row["run"]
        cells.append(f"**{k}/{n} ({k / n:.0%})**" + ("" if run == n else f" ({run} run)"))
        calls, seconds = row["lm_calls_optimizing"], row["seconds_optimizing"]
        cells.append("–" if calls is None else str(calls))
        cells.append("–" if seconds is None else f"{seconds / 60:.1f}")
        cells.append("–" if row["p50_seconds"] is None else f"{row['p50_seconds']:.2f}")
        cells.append("–" if row["mean_lm_calls"] is None else f"{row['mean_lm_calls']:.2f}")
        cells.append(str(row["errors"]))
        cells.append("–" if row["dev_score"] is None else f"{row['dev_score']:.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *NOTES]
    if args.fake_server:
        lines += ["", "**Fake server (--fake-server): plumbing only, says nothing of quality.**"]
    return "\n".join(lines) + "\n"


def _module(args: argparse.Namespace) -> str:
    return "ChainOfThought" if args.module == "cot" else "Predict"


NOTES = [
    "Test accuracy: the test cases whose calls BFCL's checker accepts (scored here, with "
    "`bigloop_eval.bfcl_score`), over all test cases; a case not run counts as failed. "
    "LM calls: chat completions the model server answered, counted by a proxy in DSPy's "
    "process (DSPy's in-memory cache answers repeated prompts without a call; its disk "
    "cache is off); optimizing includes instruction proposals and GEPA's reflection. "
    "p50 s: wall-clock seconds per test case, every model call of the case included. "
    "Errors: test cases whose program raised (unparsable output after DSPy's JSON "
    "fallback, say), scored with no calls. Dev score: the optimizer's own score of the "
    "program it returned.",
]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A terminated run stops DSPy's process and the model server it started, too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not args.dspy_python.exists():
        print(f"Error: no {args.dspy_python}; run bash scripts/bench-dspy.sh", file=sys.stderr)
        return 2
    try:
        parts = splits(args)
        with tempfile.TemporaryDirectory(prefix="bigloop-dspy-") as tmp:
            failed = run(args, parts, Path(tmp))
    except (UserError, HarnessError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        return 1 if failed else 0
    command = shlex.join([".venv/bin/python", "bench/dspy_opt.py", *(argv or sys.argv[1:])])
    rows = [row_of(args, o, parts["test"]) for o in args.optimizer]
    table = markdown(args, rows, command)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.category}.md").write_text(table, encoding="utf-8")
    scored = {"command": command, "rows": rows}
    text = json.dumps(scored, indent=1, ensure_ascii=False, default=str)
    (args.out / f"{args.category}.json").write_text(text + "\n", encoding="utf-8")
    print(table)
    if failed:
        print(f"Optimizers that failed (see their run.log): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
