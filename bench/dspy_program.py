"""DSPy on BFCL cases: one optimizer's run, inside DSPy's own environment (`.venv-dspy`).

    .venv-dspy/bin/python bench/dspy_program.py --cases CASES.json --base-url URL/v1 \\
        --model MODEL_ID --optimizer mipro --budget 300 --out-dir DIR

Started by `bench/dspy_opt.py`, one process per optimizer; it cannot import bigloop. The
cases file holds {"score_url", "train", "dev", "test"}, each case {"id", "messages",
"functions": [{"name", "description", "parameters" (JSON schema)}]}.

The program is what a DSPy user would write for BFCL's single-turn categories: one
`dspy.Predict` over the signature `request, tools: list[dspy.Tool] -> tool_calls:
dspy.ToolCalls` (`--module cot`: `dspy.ChainOfThought`), the case's functions as
`dspy.Tool`s built from their JSON schema the way DSPy builds MCP tools. It emits every call
of the turn at once; the calls are recorded, never run (BFCL scores the calls of one turn).
`dspy.ReAct` is not used: it takes one tool per model call, then a `finish` call and an
extraction call (three or more model calls for a one-call case), and its calls would still
have to be recorded from inside the tools.

The metric posts {"id", "calls"} to the scoring endpoint (BFCL's checker, run by the
harness) and reads {"valid", "error_type", "error"}: 1.0 or 0.0, and for GEPA the error
type and message as the feedback.

- none: the program as written.
- mipro: `dspy.MIPROv2` with explicit num_candidates/num_trials fitted to --budget
  (`mipro_plan`), bootstrapped demos only (the examples carry no labels: the score is the
  only supervision), train as trainset and dev as valset.
- gepa: `dspy.GEPA` with max_metric_calls fitted to --budget (`gepa_plan`), the served
  model as its reflection LM too.

Every model call goes through a counting proxy on loopback, so the counts are requests
the server answered (DSPy's in-memory cache serves repeated prompts for free; the disk
cache is off). The LMs use DSPy's LiteLLM engine (see `configure`).

Written to --out-dir: `results.jsonl` (one row per test case: id, calls, seconds,
lm_calls, error), `optimized.json` (the optimization's counts, written once it
is done, with the optimized program in `program.json`; a rerun loads it and only finishes
the test cases left) and `summary.json` at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import dspy
from dspy.adapters.types.tool import convert_input_schema_to_tool_args

OPTIMIZERS = ("none", "mipro", "gepa")
MIPRO_MAX_BOOTSTRAPPED_DEMOS = 4  # DSPy's default
MIPRO_VIEW_DATA_BATCH_SIZE = 3  # examples per data-summary call (BFCL tools make long examples)
MIPRO_FULL_EVAL_STEPS = 5  # DSPy's default
MIPRO_MINIBATCH_SIZE = 35  # DSPy's default, used (as with auto=) only when dev > 50 cases
GEPA_REFLECTION_MINIBATCH = 3  # DSPy's default
UPSTREAM_TIMEOUT_S = 1800.0


class BudgetError(ValueError):
    """The budget or the splits cannot run the optimizer."""


# -- budgets -------------------------------------------------------------------------------


def mipro_recommended_trials(num_candidates: int) -> int:
    """DSPy's own rule for a single-predictor program with demos (MIPROv2
    `_set_num_trials_from_num_candidates`): max(2 * 2 * log2(N), 1.5 * N)."""
    return int(max(4 * math.log2(num_candidates), 1.5 * num_candidates))


def mipro_estimate(
    n_train: int, n_dev: int, num_candidates: int, num_trials: int
) -> dict[str, int]:
    """Model calls MIPROv2 makes on this program, at most (cache hits are free).

    - bootstrap: every demo set bootstraps from the same zero-shot teacher at temperature
      0, so each train case costs one call however many sets ask for it;
    - proposal: the data summary (first batch, up to 9 more, the summary), then per
      instruction candidate a description of the program, one of the module and the
      instruction (sampled, so never cached);
    - evaluation: the default program and each trial on dev (minibatches of 35 with a full
      dev evaluation every 5 trials when dev > 50 cases, as with auto=).
    """
    batch = MIPRO_VIEW_DATA_BATCH_SIZE
    summary = 2 + min(9, math.ceil(max(0, n_train - batch) / batch))
    proposal = summary + 3 * num_candidates
    if n_dev > 50:
        size, steps = min(MIPRO_MINIBATCH_SIZE, n_dev), MIPRO_FULL_EVAL_STEPS
        extra_final = 1 if num_trials % steps else 0
        full_evals = 1 + num_trials // steps + extra_final
        evaluation = num_trials * size + full_evals * n_dev
    else:
        evaluation = (1 + num_trials) * n_dev
    total = n_train + proposal + evaluation
    return {"bootstrap": n_train, "proposal": proposal, "evaluation": evaluation, "total": total}


def mipro_plan(budget: int, n_train: int, n_dev: int) -> dict[str, Any]:
    """MIPROv2's num_candidates and num_trials for `budget` model calls: the most
    candidates whose recommended number of trials fits, and as many trials as fit.

    Raises:
        BudgetError: not even 2 candidates and 1 trial fit, or no train or dev case.
    """
    if n_train < 1 or n_dev < 1:
        raise BudgetError("MIPROv2 needs at least one train and one dev case.")
    best: dict[str, Any] | None = None
    for candidates in range(2, 13):
        trials = 0
        while mipro_estimate(n_train, n_dev, candidates, trials + 1)["total"] <= budget:
            trials += 1
        if trials < 1:
            break
        plan = {"num_candidates": candidates, "num_trials": trials}
        if best is None or trials >= mipro_recommended_trials(candidates):
            best = plan
    if best is None:
        least = mipro_estimate(n_train, n_dev, 2, 1)["total"]
        raise BudgetError(f"--budget {budget} is too small for MIPROv2 here (at least {least}).")
    best["minibatch"] = n_dev > 50
    best["minibatch_size"] = min(MIPRO_MINIBATCH_SIZE, n_dev)
    best["estimate"] = mipro_estimate(n_train, n_dev, best["num_candidates"], best["num_trials"])
    return best


def gepa_plan(budget: int, n_train: int, n_dev: int) -> dict[str, Any]:
    """GEPA's max_metric_calls for `budget` model calls.

    A metric call is a program run (one model call, or two when DSPy falls back to its
    JSONAdapter). Reflection calls come on top, one per iteration, and an iteration costs
    at least 2 m metric calls (parent and child on the same train minibatch of m) after
    the first dev evaluation: M + (M - dev) / (2 m) <= budget, so M = (2 m budget + dev)
    / (2 m + 1). Accepted children cost a dev evaluation each and fewer reflections.
    GEPA checks the budget between iterations, so its last dev evaluation can overrun it.

    Raises:
        BudgetError: the budget does not cover one dev evaluation and one iteration.
    """
    if n_train < 1:
        raise BudgetError("GEPA needs at least one train case.")
    valset = n_dev or n_train
    per_iteration = 2 * GEPA_REFLECTION_MINIBATCH
    metric_calls = (per_iteration * budget + valset) // (per_iteration + 1)
    if metric_calls < valset + per_iteration:
        least = valset + per_iteration + 1
        raise BudgetError(f"--budget {budget} is too small for GEPA here (at least {least}).")
    reflections = math.ceil((metric_calls - valset) / per_iteration)
    return {
        "max_metric_calls": metric_calls,
        "reflection_minibatch_size": GEPA_REFLECTION_MINIBATCH,
        "estimate": {"metric": metric_calls, "reflection": reflections},
    }


# -- counting the model calls --------------------------------------------------------------


class CountingProxy:
    """An HTTP proxy on loopback in front of the model server: every request is passed
    on as is, and the completions (POST .../completions) are counted."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.count = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        prefix = urllib.parse.urlsplit(self.upstream).path
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}{prefix}"
        self._origin = self.upstream[: len(self.upstream) - len(prefix)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/").endswith("completions"):
                    with proxy._lock:
                        proxy.count += 1
                self._forward(body)

            def _forward(self, body: bytes | None) -> None:
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "authorization", "accept")
                }
                request = urllib.request.Request(
                    proxy._origin + self.path, data=body, headers=headers, method=self.command
                )
                try:
                    with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT_S) as response:
                        status, kind, reply = response.status, response.headers, response.read()
                except urllib.error.HTTPError as e:
                    status, kind, reply = e.code, e.headers, e.read()
                except OSError as e:
                    status, kind, reply = 502, None, json.dumps({"error": str(e)}).encode()
                self.send_response(status)
                content_type = kind.get("Content-Type") if kind else None
                self.send_header("Content-Type", content_type or "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> CountingProxy:
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


# -- the program ---------------------------------------------------------------------------


def build(module: str) -> Any:
    """The DSPy program (a `dspy.Module`), its signature and tools as DSPy's docs build
    them."""

    class CallFunctions(dspy.Signature):
        """Answer the user's request by calling the given functions. Emit every call the
        request needs, with argument values taken from the request; emit no call when no
        function fits the request."""

        request: str = dspy.InputField(desc="The user's request (the conversation so far).")
        tools: list[dspy.Tool] = dspy.InputField(desc="The functions that can be called.")
        tool_calls: dspy.ToolCalls = dspy.OutputField(
            desc="Every function call the request needs; none if no function fits."
        )

    def as_tool(function: dict[str, Any]) -> Any:
        args, arg_types, arg_desc = convert_input_schema_to_tool_args(function["parameters"])
        # As in DSPy's MCP conversion; the description also says which are required.
        args = {k: {**v, "description": arg_desc[k]} for k, v in args.items()}
        name = function["name"]

        def acknowledge(**arguments: Any) -> str:
            return f"{name} was called."

        return dspy.Tool(
            acknowledge,
            name=name,
            desc=function.get("description", ""),
            args=args,
            arg_types=arg_types,
            arg_desc=arg_desc,
        )

    class BFCLCaller(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            kind = dspy.ChainOfThought if module == "cot" else dspy.Predict
            self.respond = kind(CallFunctions)

        def forward(self, request: str, functions: list[dict[str, Any]]) -> Any:
            tools = [as_tool(f) for f in functions]
            out = self.respond(request=request, tools=tools)
            made = out.tool_calls.tool_calls if out.tool_calls is not None else []
            calls = [[c.name, c.args] for c in made]
            return dspy.Prediction(tool_calls=out.tool_calls, calls=calls)

    return BFCLCaller()


def request_text(messages: list[dict[str, str]]) -> str:
    """A case's messages as one request: the text alone when it is one user message."""
    if len(messages) == 1 and messages[0].get("role") == "user":
        return messages[0]["content"]
    return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in messages)


def examples(cases: list[dict[str, Any]]) -> list[Any]:
    return [
        dspy.Example(
            case_id=c["id"], request=request_text(c["messages"]), functions=c["functions"]
        ).with_inputs("request", "functions")
        for c in cases
    ]


class Scorer:
    """The metric: BFCL's checker behind the harness's scoring endpoint."""

    def __init__(self, url: str) -> None:
        self.url = url

    def verdict(self, case_id: str, calls: Any) -> dict[str, Any]:
        body = json.dumps({"id": case_id, "calls": calls}).encode()
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            verdict: dict[str, Any] = json.loads(response.read())
            return verdict

    def metric(self, gold: Any, pred: Any, trace: Any = None) -> float:
        return 1.0 if self.verdict(gold.case_id, _calls_of(pred))["valid"] else 0.0

    def feedback_metric(
        self,
        gold: Any,
        pred: Any,
        trace: Any = None,
        pred_name: str | None = None,
        pred_trace: Any = None,
    ) -> Any:
        verdict = self.verdict(gold.case_id, _calls_of(pred))
        if verdict["valid"]:
            feedback = "Correct: BFCL's checker accepted the calls."
            return dspy.Prediction(score=1.0, feedback=feedback)
        feedback = f"Wrong ({verdict.get('error_type') or 'error'}): {verdict.get('error') or ''}"
        return dspy.Prediction(score=0.0, feedback=feedback.strip())


def _calls_of(pred: Any) -> list[Any]:
    calls = getattr(pred, "calls", None)
    return calls if isinstance(calls, list) else []


# -- the run -------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cases", type=Path, required=True, help="The cases file (JSON).")
    parser.add_argument("--base-url", required=True, help="The OpenAI-compatible server, .../v1.")
    parser.add_argument("--model", required=True, help="The served model's id.")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="none")
    parser.add_argument("--budget", type=int, default=300, help="Model calls for optimizing.")
    parser.add_argument("--out-dir", type=Path, required=True, help="Where results go.")
    parser.add_argument("--module", choices=["predict", "cot"], default="predict")
    parser.add_argument("--max-tokens", type=int, default=512, help="Per program call (512).")
    parser.add_argument(
        "--proposer-max-tokens",
        type=int,
        default=1024,
        help="Per instruction-proposal or reflection call (1024).",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="The optimizer's seed (its default: 9, 0)."
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="Build the program and the optimizer, print the plan as JSON; no model call.",
    )
    return parser.parse_args(argv)


def configure(args: argparse.Namespace, base_url: str) -> tuple[Any, Any]:
    """The task LM (greedy, as bigloop decodes) and the proposer/reflection LM (the same
    served model, sampled as DSPy's docs advise for GEPA's reflection).

    Both through DSPy's LiteLLM engine, the route `openai/<model>` with `api_base` took
    before DSPy 3.4: DSPy's native engine sends the token limit as
    `max_completion_tokens`, which llama_cpp.server ignores (it would generate up to the
    context's end); LiteLLM sends `max_tokens`."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    common = {"api_base": base_url, "api_key": "local", "num_retries": 2, "timeout": 1800}
    common["engine"] = "litellm"
    lm = dspy.LM(f"openai/{args.model}", temperature=0.0, max_tokens=args.max_tokens, **common)
    proposer = dspy.LM(
        f"openai/{args.model}", temperature=1.0, max_tokens=args.proposer_max_tokens, **common
    )
    dspy.configure(lm=lm, num_threads=1, max_errors=1_000_000)
    return lm, proposer


def optimizer_for(args: argparse.Namespace, scorer: Scorer, proposer: Any, sizes: tuple[int, int]):
    """The optimizer, its compile() keyword arguments and its plan."""
    n_train, n_dev = sizes
    if args.optimizer == "mipro":
        plan = mipro_plan(args.budget, n_train, n_dev)
        optimizer = dspy.MIPROv2(
            metric=scorer.metric,
            prompt_model=proposer,
            max_bootstrapped_demos=MIPRO_MAX_BOOTSTRAPPED_DEMOS,
            max_labeled_demos=0,
            auto=None,
            num_candidates=plan["num_candidates"],
            num_threads=1,
            max_errors=1_000_000,
            **({} if args.seed is None else {"seed": args.seed}),
        )
        compile_kwargs = {
            "num_trials": plan["num_trials"],
            "minibatch": plan["minibatch"],
            "minibatch_size": plan["minibatch_size"],
            "minibatch_full_eval_steps": MIPRO_FULL_EVAL_STEPS,
            "view_data_batch_size": MIPRO_VIEW_DATA_BATCH_SIZE,
        }
        return optimizer, compile_kwargs, plan
    plan = gepa_plan(args.budget, n_train, n_dev)
    optimizer = dspy.GEPA(
        metric=scorer.feedback_metric,
        max_metric_calls=plan["max_metric_calls"],
        reflection_minibatch_size=plan["reflection_minibatch_size"],
        reflection_lm=proposer,
        num_threads=1,
        track_stats=True,
        **({} if args.seed is None else {"seed": args.seed}),
    )
    return optimizer, {}, plan


def optimize(
    args: argparse.Namespace, data: dict[str, Any], proxy: CountingProxy, proposer: Any
) -> dict[str, Any]:
    """Optimize (or not), save the program, and record what it cost."""
    program = build(args.module)
    info: dict[str, Any] = {"optimizer": args.optimizer, "lm_calls_optimizing": 0}
    info["seconds_optimizing"] = 0.0
    if args.optimizer != "none":
        train, dev = examples(data["train"]), examples(data["dev"])
        scorer = Scorer(data["score_url"])
        optimizer, compile_kwargs, plan = optimizer_for(
            args, scorer, proposer, (len(train), len(dev))
        )
        info["plan"] = plan
        before, start = proxy.count, time.perf_counter()
        program = optimizer.compile(program, trainset=train, valset=dev or None, **compile_kwargs)
        info["seconds_optimizing"] = round(time.perf_counter() - start, 3)
        info["lm_calls_optimizing"] = proxy.count - before
        info["dev_score"] = _dev_score(program)
    info["instructions"] = {n: p.signature.instructions for n, p in program.named_predictors()}
    info["demos"] = {n: len(p.demos) for n, p in program.named_predictors()}
    program.save(str(args.out_dir / "program.json"))
    (args.out_dir / "optimized.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def _dev_score(program: Any) -> float | None:
    """The optimizer's own score of the program it returned, on dev (0..1)."""
    score = getattr(program, "score", None)  # MIPROv2, in percent
    if isinstance(score, int | float):
        return round(float(score) / 100, 4)
    results = getattr(program, "detailed_results", None)  # GEPA
    if results is not None:
        return round(float(results.val_aggregate_scores[results.best_idx]), 4)
    return None


def load_program(args: argparse.Namespace) -> Any:
    """The saved program: its instructions and demos on a freshly built program (a demo's
    tools come back as the text they are shown as)."""
    program = build(args.module)
    program.load(str(args.out_dir / "program.json"))
    return program


def evaluate(program: Any, cases: list[dict[str, Any]], proxy: CountingProxy, path: Path) -> None:
    """Run the test cases not yet in `path`, one after the other, appending a row each."""
    done = set()
    if path.exists():
        done = {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}
    for case, example in zip(cases, examples(cases), strict=True):
        if case["id"] in done:
            continue
        before, start = proxy.count, time.perf_counter()
        error = None
        try:
            calls = _calls_of(program(**example.inputs()))
        except Exception as e:  # noqa: BLE001 - a failing case is a failed case, never a crash
            calls, error = [], f"{type(e).__name__}: {e}"[:2000]
        row = {
            "id": case["id"],
            "calls": calls,
            "seconds": round(time.perf_counter() - start, 3),
            "lm_calls": proxy.count - before,
            "error": error,
        }
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        print(f"[{case['id']}] {len(calls)} calls, {row['seconds']:.1f} s", file=sys.stderr)


def dry_run(args: argparse.Namespace, data: dict[str, Any]) -> int:
    """Build the program and the optimizer (no model call) and print the plan."""
    _, proposer = configure(args, args.base_url)
    build(args.module)
    plan: dict[str, Any] = {"optimizer": args.optimizer, "dspy": dspy.__version__}
    if args.optimizer != "none":
        sizes = (len(data["train"]), len(data["dev"]))
        optimizer, compile_kwargs, plan["plan"] = optimizer_for(
            args, Scorer(data["score_url"]), proposer, sizes
        )
        plan["optimizer_class"] = type(optimizer).__name__
        plan["compile"] = compile_kwargs
    print(json.dumps(plan))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data = json.loads(args.cases.read_text())
    args.out_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.dry_run:
            return dry_run(args, data)
        with CountingProxy(args.base_url) as proxy:
            _, proposer = configure(args, proxy.url)
            saved = args.out_dir / "optimized.json"
            if saved.exists() and (args.out_dir / "program.json").exists():
                info = json.loads(saved.read_text())
            else:
                info = optimize(args, data, proxy, proposer)
            program = load_program(args)  # as saved, whether resumed or not
            results = args.out_dir / "results.jsonl"
            before, start = proxy.count, time.perf_counter()
            evaluate(program, data["test"], proxy, results)
            summary = {
                **info,
                "module": args.module,
                "budget": args.budget,
                "dspy": dspy.__version__,
                "test_cases": len(data["test"]),
                "lm_calls_test_this_run": proxy.count - before,
                "seconds_test_this_run": round(time.perf_counter() - start, 3),
            }
            (args.out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    except BudgetError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
