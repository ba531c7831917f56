"""Teams against a single agent: BFCL multiple (first 50) and the task suite's test split.

Three setups run the same cases, one after the other, in one process, on one model (the
embedded one by default):

- **single**: one `Agent` with every tool of the case. BFCL: ReAct that stops after the
  first turn whose calls were all made, as `bigloop eval bfcl --mode loop`; suite: the auto
  planner with clarification, as `bigloop run`.
- **orchestrator**: a coordinator (the same model) splits the request into subtasks under
  a schema and names a worker for each from their cards. BFCL: the workers are the case's
  functions themselves; a semantic adapter fits each subtask to its function's schema
  (an "adapt" step); no merge turn, since BFCL scores calls. Suite: one worker agent per
  tool (the file tools and the database tools as one worker each), then a merge turn.
- **orchestrator_call**: the same workers, but the coordinator delegates in the model's
  own tool-call format (`choose="call"`): each worker offered as a tool described by its
  card; a BFCL function worker gets the coordinator's arguments as they are.
- **debate**: three agents with every tool — one greedy and two sampling at temperature
  0.7 (seeds 1 and 2): three greedy copies of one model would agree at once — for up to
  two rounds, stopping early on agreement; then a judge agent (the same model, no tools)
  picks a debater's calls (BFCL) or writes the final answer (suite). BFCL answers are the
  calls made (agreement: the same calls); suite answers agree when they give the same
  numbers (else the same normalized text).

Scored per case: BFCL's AST checker on the calls made (orchestrator: by the tool workers;
debate: the chosen debater's), the suite task's own check (tools called and questions
asked are read from the agents' runs); wall seconds, tokens, messages between agents.

    python bench/teams.py                          # all: writes bench/results/teams/latest.md
    python bench/teams.py --limit 5                # a quick look: first 5 cases of each
    python bench/teams.py --only suite --per-category 3   # 3 test tasks of each category
    python bench/teams.py --only bfcl --setup single --setup debate

Results resume: each benchmark and setup is a JSON Lines file under bench/results/teams/
(bound to one model by a `.config.json` beside it); a rerun skips the cases already there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bigloop_eval.bfcl_data import Case, load_cases
from bigloop_eval.bfcl_score import score
from bigloop_eval.suite import Task, Workspace, split
from bigloop_eval.suite.checks import Outcome

from bigloop import (
    Adapter,
    Agent,
    Budget,
    ChatModel,
    Clarify,
    Debate,
    LoopConfig,
    Message,
    ModelSettings,
    Orchestrator,
    ReactPlanner,
    RunResult,
    Tool,
    ToolCall,
    TraceStore,
    UserError,
    default_rules,
)
from bigloop.runtime.call import call_key
from bigloop.team import normalize

RESULTS = Path(__file__).parent / "results" / "teams"
BENCHMARKS = ("bfcl", "suite")
SETUPS = ("single", "orchestrator", "orchestrator_call", "debate")
BFCL_CATEGORY = "multiple"
BFCL_CASES = 50
BFCL_SETTINGS = ModelSettings(temperature=0.0, max_tokens=256)
SAMPLED = (ModelSettings(temperature=0.7, seed=1), ModelSettings(temperature=0.7, seed=2))
"""The two sampling debaters' settings (the first debater is greedy)."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_NOT_MADE = ("invalid_arguments", "unknown_tool")


@dataclass(kw_only=True)
class Row:
    """One case under one setup, as kept in the results file."""

    id: str
    benchmark: str
    setup: str
    category: str
    passed: bool
    why: str
    status: str
    seconds: float
    tokens: int
    messages: int
    answer: str | None = None
    calls: list[list[Any]] = field(default_factory=list)
    error: str | None = None


# ---------------------------------------------------------------------- BFCL


def recording_tools(case: Case, calls: list[tuple[str, Any]]) -> list[Tool]:
    """The case's functions as tools that only record each (validated) call."""

    def make(name: str) -> Callable[..., str]:
        def acknowledge(**arguments: Any) -> str:
            calls.append((name, arguments))
            return f"{name} was called."

        return acknowledge

    return [
        Tool.from_schema(s.name, s.description, s.parameters, make(s.name), inline=True)
        for s in case.tools
    ]


def distinct(calls: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Identical calls once, in order (what `bigloop eval bfcl` scores)."""
    seen: dict[str, tuple[str, Any]] = {}
    for name, arguments in calls:
        seen.setdefault(
            call_key(ToolCall(id="", name=name, arguments=arguments)), (name, arguments)
        )
    return list(seen.values())


def calls_made(result: RunResult) -> str:
    """A debater's answer: the calls its run made, as canonical JSON ("" for none: an
    abstention, which keeps the debater's earlier answer)."""
    calls = [(s.name, s.input) for s in result.tool_steps if s.error is None]
    if not calls:
        return ""
    return json.dumps([list(c) for c in distinct(calls)], sort_keys=True, ensure_ascii=False)


def bfcl_agent(
    name: str, tools: list[Tool], instructions: str, settings: ModelSettings, model: ChatModel
) -> Agent:
    return Agent(
        name,
        model,
        tools,
        instructions=instructions,
        planner=ReactPlanner(stop_after_calls=True, rules=default_rules(off={"check_answers"})),
        budget=Budget(max_steps=3, max_repairs=99),
        settings=settings,
    )


async def bfcl_case(case: Case, setup: str, model: ChatModel, store: TraceStore) -> Row:
    *history, last = case.messages
    instructions = "\n".join(m["content"] for m in history if m["role"] == "system")
    earlier = [
        Message(role="assistant" if m["role"] == "assistant" else "user", content=m["content"])
        for m in history
        if m["role"] != "system"
    ]
    calls: list[tuple[str, Any]] = []
    start = time.perf_counter()
    if setup == "single":
        agent = bfcl_agent(
            "single", recording_tools(case, calls), instructions, BFCL_SETTINGS, model
        )
        result = await agent.run(last["content"], history=earlier)
    elif setup in ("orchestrator", "orchestrator_call"):
        team = Orchestrator(
            model,
            recording_tools(case, calls),
            choose="call" if setup == "orchestrator_call" else "model",
            adapter=Adapter(model, settings=BFCL_SETTINGS),
            merge=False,
            settings=BFCL_SETTINGS,
            store=store,
        )
        result = await team.run(last["content"])
    else:
        tools = recording_tools(case, [])
        debaters = [
            bfcl_agent(n, tools, instructions, s, model)
            for n, s in zip(("a", "b", "c"), (BFCL_SETTINGS, *SAMPLED), strict=True)
        ]
        judge = Agent(
            "judge",
            model,
            instructions="You check function calls against a request.",
            settings=BFCL_SETTINGS,
        )
        debate = Debate(
            debaters,
            judge=judge,
            rounds=2,
            pick=True,
            same=lambda a: a,
            answer=calls_made,
            store=store,
        )
        result = await debate.run(last["content"])
        try:
            calls = [(c[0], c[1]) for c in json.loads(result.answer or "[]")]
        except (ValueError, TypeError, IndexError):
            calls = []
    seconds = time.perf_counter() - start
    made = distinct(calls)
    checked = score(case, made)
    return Row(
        id=case.id,
        benchmark="bfcl",
        setup=setup,
        category=case.category,
        passed=checked.valid,
        why=checked.error_type or "ok",
        status=result.status,
        seconds=round(seconds, 3),
        tokens=result.usage.total_tokens,
        messages=sum(s.kind == "message" for s in result.steps),
        answer=result.answer,
        calls=[[n, a] for n, a in made],
        error=result.error,
    )


# ---------------------------------------------------------------------- the suite

GROUPS = {
    "files": "Reads and searches the user's files: notes, recipes, projects, expenses, travel.",
    "db": "Answers questions about the shop database (customers, products, orders) with SQL.",
}


def same_numbers(answer: str) -> str:
    """Suite answers agree when they give the same numbers (else the same words)."""
    numbers = sorted(_NUMBER.findall(answer.replace(",", "")))
    return " ".join(numbers) if numbers else normalize(answer)


def suite_agent(name: str, tools: list[Tool], model: ChatModel, **options: Any) -> Agent:
    """An agent configured as `bigloop run` configures its loop."""
    return Agent(name, model, tools, planner="auto", clarify=Clarify(ungrounded=True), **options)


def workers(task: Task, workspace: Workspace, model: ChatModel) -> list[Agent]:
    """One worker per tool the task names (the file tools and the SQL tools as one each)."""
    team = []
    for name in task.tools:
        tools = workspace.tools((name,))
        description = GROUPS.get(name) or tools[0].description.split(". ")[0]
        team.append(suite_agent(name, tools, model, description=description))
    return team


def team_outcome(result: RunResult, store: TraceStore) -> Outcome:
    """What a suite check sees of a team run: its status and answer, the tools its agents
    called and whether any of them asked the user."""
    asked = result.status == "input_required"
    called: list[str] = []
    for step in result.steps:
        sub = (
            step.input.get("run")
            if step.kind == "message" and isinstance(step.input, dict)
            else None
        )
        if sub is None:
            if step.kind == "message" and step.error == "input_required":
                asked = True
            continue
        for s in store.steps(sub):
            asked = asked or s.kind == "ask"
            if s.kind == "tool" and s.error not in _NOT_MADE:
                called.append(s.name)
    called += [s.name for s in result.steps if s.kind == "adapt"]
    return Outcome(
        status=result.status, answer=result.answer, asked=asked, tools_called=tuple(called)
    )


async def suite_case(
    task: Task, setup: str, model: ChatModel, workspace: Workspace, store: TraceStore
) -> Row:
    tools = workspace.tools(task.tools)
    start = time.perf_counter()
    if setup == "single":
        result = await suite_agent("single", tools, model).run(task.text, history=[])
        outcome = Outcome.of(result)
    elif setup in ("orchestrator", "orchestrator_call"):
        choose: Literal["call", "model"] = "call" if setup == "orchestrator_call" else "model"
        team = Orchestrator(
            model, workers(task, workspace, model), choose=choose, search="bm25", store=store
        )
        result = await team.run(task.text)
        outcome = team_outcome(result, store)
    else:
        debaters = [
            suite_agent("a", tools, model),
            suite_agent("b", tools, model, settings=SAMPLED[0]),
            suite_agent("c", tools, model, settings=SAMPLED[1]),
        ]
        judge = Agent("judge", model, instructions="You judge answers to a request.")
        debate = Debate(debaters, judge=judge, rounds=2, same=same_numbers, store=store)
        result = await debate.run(task.text)
        outcome = team_outcome(result, store)
    seconds = time.perf_counter() - start
    passed, why = task.check(outcome)
    return Row(
        id=task.id,
        benchmark="suite",
        setup=setup,
        category=task.category,
        passed=passed,
        why=why,
        status=result.status,
        seconds=round(seconds, 3),
        tokens=result.usage.total_tokens,
        messages=sum(s.kind == "message" for s in result.steps),
        answer=result.answer,
        error=result.error,
    )


# ---------------------------------------------------------------------- results


def load_rows(path: Path) -> dict[str, Row]:
    """The rows already in `path`, by case id (an unfinished last line is ignored)."""
    if not path.exists():
        return {}
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = Row(**json.loads(line))
        except (ValueError, TypeError):
            continue
        rows[row.id] = row
    return rows


def pin(path: Path, model: ChatModel) -> None:
    """Bind `path` to `model`; refuse results of another model in it.

    Raises:
        UserError: `path` holds results of another model.
    """
    sidecar = path.with_suffix(".config.json")
    pinned = {"model": model.name}
    if sidecar.exists() and json.loads(sidecar.read_text(encoding="utf-8")) != pinned:
        raise UserError(f"{path} holds results of another model; pass another --out.")
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps(pinned) + "\n", encoding="utf-8")


def summary(rows: list[Row]) -> dict[str, Any]:
    seconds = sorted(r.seconds for r in rows)
    return {
        "n": len(rows),
        "passed": sum(r.passed for r in rows),
        "accuracy": sum(r.passed for r in rows) / len(rows) if rows else 0.0,
        "mean_s": statistics.fmean(seconds) if rows else 0.0,
        "p50_s": statistics.median(seconds) if rows else 0.0,
        "p95_s": seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))] if rows else 0.0,
        "tokens": statistics.fmean(r.tokens for r in rows) if rows else 0.0,
        "messages": statistics.fmean(r.messages for r in rows) if rows else 0.0,
        "failed_runs": sum(r.status != "ok" for r in rows),
    }


def markdown(table: dict[tuple[str, str], list[Row]], model: str, command: str) -> str:
    lines = [
        "# Teams against a single agent",
        "",
        f"Model: {model}. Command: `{command}`.",
        "BFCL: category multiple, scored by BFCL's AST checker on the calls made. Suite: the "
        "test split, each task's own check. Seconds are wall time per case; tokens are "
        "prompt + completion of every model turn of the case (all agents).",
        "",
        "| benchmark | setup | cases | accuracy | mean s | p50 s | p95 s | tokens/case "
        "| messages/case | runs not ok |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (bench, setup), rows in table.items():
        s = summary(rows)
        lines.append(
            f"| {bench} | {setup} | {s['n']} | {s['passed']}/{s['n']} ({s['accuracy']:.0%}) "
            f"| {s['mean_s']:.1f} | {s['p50_s']:.1f} | {s['p95_s']:.1f} | {s['tokens']:.0f} "
            f"| {s['messages']:.1f} | {s['failed_runs']} |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- main


def first_of_each(tasks: list[Task], k: int | None) -> list[Task]:
    """The first `k` tasks of each category, in suite order (all with `k` None)."""
    if k is None:
        return tasks
    seen: dict[str, int] = {}
    chosen = []
    for task in tasks:
        seen[task.category] = seen.get(task.category, 0) + 1
        if seen[task.category] <= k:
            chosen.append(task)
    return chosen


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", choices=BENCHMARKS, action="append", default=None)
    parser.add_argument("--setup", choices=SETUPS, action="append", default=None)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N cases of each.")
    parser.add_argument(
        "--per-category",
        type=int,
        default=None,
        metavar="K",
        help="Suite: the first K test tasks of each category (a stratified sample).",
    )
    parser.add_argument("--model", default="embedded", help="As `bigloop run --model`.")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--trace-db", type=Path, default=None, help="Keep the team traces here.")
    return parser.parse_args(argv)


async def run_all(
    args: argparse.Namespace, model: ChatModel, store: TraceStore
) -> dict[tuple[str, str], list[Row]]:
    table: dict[tuple[str, str], list[Row]] = {}
    limit = args.limit
    for bench in args.only or BENCHMARKS:
        if bench == "bfcl":
            cases: list[Any] = load_cases(BFCL_CATEGORY, min(limit or BFCL_CASES, BFCL_CASES))
        else:
            cases = first_of_each(split("test"), args.per_category)[:limit]
        with tempfile.TemporaryDirectory(prefix="bigloop-teams-") as tmp:
            workspace = Workspace.create(Path(tmp))
            for setup in args.setup or SETUPS:
                path = args.out / f"{bench}-{setup}.jsonl"
                pin(path, model)
                done = load_rows(path)
                for i, case in enumerate(cases, start=1):
                    if case.id not in done:
                        work: Awaitable[Row] = (
                            bfcl_case(case, setup, model, store)
                            if bench == "bfcl"
                            else suite_case(case, setup, model, workspace, store)
                        )
                        row = await work
                        with path.open("a", encoding="utf-8") as f:
                            f.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
                        done[case.id] = row
                    row = done[case.id]
                    mark = "pass" if row.passed else "FAIL"
                    print(
                        f"{bench} {setup} {i}/{len(cases)} {case.id} {mark} {row.seconds:.1f} s",
                        file=sys.stderr,
                    )
                table[(bench, setup)] = [done[c.id] for c in cases]
    return table


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        model = LoopConfig(model=args.model, base_url=args.base_url).build_model()
        with tempfile.TemporaryDirectory(prefix="bigloop-team-traces-") as tmp:
            store = TraceStore(args.trace_db or Path(tmp) / "traces.db")
            try:
                table = asyncio.run(run_all(args, model, store))
            finally:
                store.close()
    except UserError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    command = "python bench/teams.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    text = markdown(table, model.name, command)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(text, encoding="utf-8")
    (args.out / "latest.json").write_text(
        json.dumps({f"{b}/{s}": summary(rows) for (b, s), rows in table.items()}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
