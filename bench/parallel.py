"""Parallelizable multi-tool tasks: the graph planner against ReAct on the embedded model.

36 tasks, each needing 2–6 independent lookups (weather, population, coffee and hotel
prices of cities) and then a combination (the warmest, the largest, a total, a
difference). The lookup tools behave like remote APIs: each call takes 0.3–1.0 s (fixed
per city and tool, so both planners wait the same). Both planners run every task in the
same process, one after the other; the report gives wall time, model turns, tokens and
accuracy per planner, and react/graph ratios.

    python bench/parallel.py                 # writes bench/results/parallel.md and .json
    python bench/parallel.py --limit 6       # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bigloop import LocalModel, Loop, Tool, tool
from bigloop.atoms.builtin import calculator

RESULTS = Path(__file__).parent / "results"

CITIES = {
    # city: (temperature °C, population millions, coffee USD, hotel USD/night)
    "Paris": (18, 2.1, 3.2, 210),
    "London": (14, 8.9, 3.9, 240),
    "Tokyo": (22, 14.0, 3.5, 180),
    "Oslo": (6, 0.7, 5.1, 200),
    "Cairo": (31, 10.0, 1.1, 90),
    "Lima": (19, 10.7, 2.0, 110),
    "Berlin": (12, 3.7, 3.0, 150),
    "Madrid": (24, 3.3, 2.2, 140),
    "Sydney": (21, 5.3, 3.6, 230),
    "Toronto": (9, 2.8, 3.3, 190),
    "Mumbai": (33, 12.5, 1.5, 100),
    "Seoul": (16, 9.7, 4.0, 160),
}


def latency(tool_name: str, city: str) -> float:
    """0.3–1.0 s, fixed per (tool, city): a remote API's latency, the same for every planner."""
    digest = hashlib.sha256(f"{tool_name}:{city}".encode()).digest()
    return 0.3 + 0.7 * digest[0] / 255


async def _lookup(tool_name: str, city: str, column: int) -> float:
    row = CITIES.get(city.strip().title())
    await asyncio.sleep(latency(tool_name, city))
    if row is None:
        raise ValueError(f"unknown city {city!r}; known: {', '.join(CITIES)}")
    return row[column]


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Current weather in a city: the temperature in degrees Celsius (to compare how warm
    or cold cities are).

    Args:
        city: the city's name, e.g. "Rome".
    """
    return {"city": city, "temperature_c": await _lookup("weather", city, 0)}


@tool
async def get_population(city: str) -> dict[str, object]:
    """Population of a city (how many people live there), in millions.

    Args:
        city: the city's name, e.g. "Rome".
    """
    return {"city": city, "population_millions": await _lookup("population", city, 1)}


@tool
async def get_coffee_price(city: str) -> dict[str, object]:
    """Price of one cup of coffee in a city, in US dollars.

    Args:
        city: the city's name, e.g. "Rome".
    """
    return {"city": city, "coffee_usd": await _lookup("coffee", city, 2)}


@tool
async def get_hotel_price(city: str) -> dict[str, object]:
    """Average price of one hotel night in a city, in US dollars (to compare how cheap or
    expensive cities are to stay in).

    Args:
        city: the city's name, e.g. "Rome".
    """
    return {"city": city, "hotel_usd": await _lookup("hotel", city, 3)}


TOOLS: list[Tool] = [get_weather, get_population, get_coffee_price, get_hotel_price, calculator]


@dataclass(kw_only=True)
class Task:
    text: str
    kind: str  # "pick": the answer names `expected` first among `options`; "number(s)"
    expected: list[str]
    options: list[str]
    lookups: int


def _join(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1]


def tasks() -> list[Task]:
    out: list[Task] = []
    groups = [
        ["Paris", "London"],
        ["Tokyo", "Oslo", "Cairo"],
        ["Lima", "Berlin", "Madrid", "Sydney"],
        ["Toronto", "Mumbai", "Seoul", "Paris", "Oslo"],
        ["London", "Tokyo", "Lima", "Berlin", "Cairo", "Sydney"],
        ["Madrid", "Seoul", "Toronto"],
    ]

    def pick(column: int, largest: bool, names: list[str]) -> str:
        key = (lambda c: CITIES[c][column]) if largest else (lambda c: -CITIES[c][column])
        return max(names, key=key)

    picks = [  # (question, column of CITIES, the largest value wins)
        ("Which of these cities is the warmest right now: {}?", 0, True),
        ("Which city has the largest population: {}?", 1, True),
        ("Which city has the cheapest hotel night: {}?", 3, False),
    ]
    for names in groups:
        for question, column, largest in picks:
            out.append(
                Task(
                    text=question.format(_join(names)),
                    kind="pick",
                    expected=[pick(column, largest, names)],
                    options=names,
                    lookups=len(names),
                )
            )
        total = round(sum(CITIES[c][2] for c in names), 2)
        out.append(
            Task(
                text=f"I buy one coffee in each of {_join(names)}. "
                "How many US dollars do I spend in total?",
                kind="numbers",
                expected=[f"{total:g}"],
                options=names,
                lookups=len(names),
            )
        )
        a, b = names[0], names[1]
        out.append(
            Task(
                text=f"What is the temperature in {a} and the population of {b}?",
                kind="numbers",
                expected=[f"{CITIES[a][0]:g}", f"{CITIES[b][1]:g}"],
                options=[a, b],
                lookups=2,
            )
        )
        c = names[-1]
        out.append(
            Task(
                text=f"How much do a coffee in {a} and a hotel night in {c} cost in US dollars?",
                kind="numbers",
                expected=[f"{CITIES[a][2]:g}", f"{CITIES[c][3]:g}"],
                options=[a, c],
                lookups=2,
            )
        )
    return out


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def correct(task: Task, answer: str | None) -> bool:
    if not answer:
        return False
    if task.kind == "pick":
        found = [(answer.find(o), o) for o in task.options if o in answer]
        return bool(found) and min(found)[1] == task.expected[0]
    numbers = [float(n) for n in _NUMBER.findall(answer.replace(",", ""))]
    return all(any(abs(n - float(e)) < 0.011 for n in numbers) for e in task.expected)


@dataclass(kw_only=True)
class Row:
    planner: str
    task: str
    lookups: int
    ok: bool
    status: str
    answer: str | None
    seconds: float
    model_turns: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    model_seconds: float


async def run_one(model: LocalModel, planner: str, task: Task) -> Row:
    loop = Loop(model, TOOLS, planner=planner)  # type: ignore[arg-type]
    start = time.perf_counter()
    result = await loop.run(task.text)
    seconds = time.perf_counter() - start
    return Row(
        planner=planner,
        task=task.text,
        lookups=task.lookups,
        ok=correct(task, result.answer),
        status=result.status,
        answer=result.answer,
        seconds=seconds,
        model_turns=sum(1 for s in result.steps if s.kind == "model"),
        tool_calls=len(result.tool_steps),
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        model_seconds=result.usage.seconds,
    )


def report(rows: list[Row], planners: list[str], command: str) -> str:
    by = {p: [r for r in rows if r.planner == p] for p in planners}
    lines = [
        "# Parallelizable multi-tool tasks: graph vs react (embedded Qwen2.5-Coder-0.5B)",
        "",
        f"Command: `{command}`. {len(by[planners[0]])} tasks, 2–6 independent lookups each, "
        "every lookup a 0.3–1.0 s call; both planners in one process, one task at a time.",
        "",
        "| planner | accuracy | wall s (total) | wall s p50 | model turns | tool calls "
        "| prompt tok | completion tok |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p, rs in by.items():
        lines.append(
            f"| {p} | {sum(r.ok for r in rs)}/{len(rs)} | {sum(r.seconds for r in rs):.1f} "
            f"| {statistics.median(r.seconds for r in rs):.2f} "
            f"| {sum(r.model_turns for r in rs)} | {sum(r.tool_calls for r in rs)} "
            f"| {sum(r.prompt_tokens for r in rs)} | {sum(r.completion_tokens for r in rs)} |"
        )
    if "react" in by and "graph" in by:
        g, r = by["graph"], by["react"]

        def total(rows: list[Row], attr: str) -> float:
            return float(sum(getattr(x, attr) for x in rows))

        per_task = statistics.median(a.seconds / b.seconds for a, b in zip(r, g, strict=True))
        tokens_r = total(r, "prompt_tokens") + total(r, "completion_tokens")
        tokens_g = total(g, "prompt_tokens") + total(g, "completion_tokens")
        lines += [
            "",
            f"react/graph wall time: **{total(r, 'seconds') / total(g, 'seconds'):.2f}x** total, "
            f"{per_task:.2f}x median per task; model turns "
            f"{total(r, 'model_turns') / max(1, total(g, 'model_turns')):.2f}x, "
            f"tokens {tokens_r / max(1, tokens_g):.2f}x.",
        ]
    header = " | ".join(f"{p} acc | {p} s p50" for p in planners)
    lines += ["", "## Per lookup count", "", f"| lookups | {header} |"]
    lines.append("|---|" + "---|---|" * len(planners))
    for n in sorted({r.lookups for r in rows}):
        cells = []
        for p in planners:
            rs = [r for r in by[p] if r.lookups == n]
            p50 = statistics.median(r.seconds for r in rs)
            cells.append(f"{sum(r.ok for r in rs)}/{len(rs)} | {p50:.2f}")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--planners", default="graph,react")
    parser.add_argument("--out", default=str(RESULTS / "parallel"))
    args = parser.parse_args()
    planners = args.planners.split(",")
    model = LocalModel()
    model.llama()
    suite = tasks()[: args.limit]
    rows: list[Row] = []
    for i, task in enumerate(suite, 1):
        for planner in planners:
            row = await run_one(model, planner, task)
            rows.append(row)
            print(
                f"[{i}/{len(suite)}] {planner:6} {'ok ' if row.ok else 'BAD'} {row.seconds:5.1f}s "
                f"turns={row.model_turns} calls={row.tool_calls} {task.text[:60]!r} -> "
                f"{(row.answer or row.status)[:80]!r}",
                flush=True,
            )
    command = "python bench/parallel.py" + (f" --limit {args.limit}" if args.limit else "")
    text = report(rows, planners, command)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    print(text)


if __name__ == "__main__":
    asyncio.run(main())
