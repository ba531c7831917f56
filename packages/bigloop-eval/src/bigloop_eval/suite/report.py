"""The suite's summary: accuracy per category, time, turns, tokens, false and missed asks."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from .run import Result
from .task import CATEGORIES


@dataclass(kw_only=True)
class Summary:
    """Numbers over a set of results.

    Attributes:
        by_category: category → (passed, tasks), in suite order.
        false_asks: (asked, tasks) over the tasks that have every value they need
            (every category but missing_value).
        missed_asks: (answered without asking, tasks) over the missing_value tasks.
    """

    tasks: int
    passed: int
    by_category: dict[str, tuple[int, int]]
    p50_seconds: float
    p95_seconds: float
    mean_model_turns: float
    mean_tokens: float
    false_asks: tuple[int, int]
    missed_asks: tuple[int, int]
    turns_by_model: dict[str, int] | None = None
    """Model turns per model that wrote them, when more than one did (a cascade)."""
    p50_floor_ratio: float | None = None
    """Median over tasks of model seconds / floor seconds (None: no floor known)."""
    p50_model_seconds: float = 0.0
    worst_generation: list[tuple[str, int, int]] | None = None
    """The 5 model turns that generated most over what their kept calls take:
    (task id, generated, needed)."""

    @property
    def accuracy(self) -> float:
        return self.passed / self.tasks if self.tasks else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(results: list[Result]) -> Summary:
    n = len(results)
    by_category: dict[str, tuple[int, int]] = {}
    for category in CATEGORIES:
        rows = [r for r in results if r.category == category]
        if rows:
            by_category[category] = (sum(r.passed for r in rows), len(rows))
    complete = [r for r in results if r.category != "missing_value"]
    lacking = [r for r in results if r.category == "missing_value"]
    seconds = [r.seconds for r in results]
    by_model = Counter(name for r in results for name in r.answered_by)
    return Summary(
        tasks=n,
        passed=sum(r.passed for r in results),
        by_category=by_category,
        p50_seconds=percentile(seconds, 0.5),
        p95_seconds=percentile(seconds, 0.95),
        mean_model_turns=sum(r.model_turns for r in results) / n if n else 0.0,
        mean_tokens=sum(r.tokens for r in results) / n if n else 0.0,
        false_asks=(sum(r.asked for r in complete), len(complete)),
        missed_asks=(sum(not r.asked for r in lacking), len(lacking)),
        turns_by_model=dict(by_model.most_common()) if len(by_model) > 1 else None,
        p50_floor_ratio=_median_ratio(results),
        p50_model_seconds=percentile([r.model_seconds for r in results], 0.5),
        worst_generation=_worst_generation(results),
    )


def _median_ratio(results: list[Result]) -> float | None:
    ratios = [r.model_seconds / r.floor_seconds for r in results if r.floor_seconds > 0]
    return percentile(ratios, 0.5) if ratios else None


def _worst_generation(results: list[Result]) -> list[tuple[str, int, int]] | None:
    turns = [(r.id, g, n) for r in results for g, n in r.generated if n > 0]
    if not turns:
        return None
    return sorted(turns, key=lambda t: t[1] / t[2], reverse=True)[:5]


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "–"


def markdown(summary: Summary, *, title: str) -> str:
    """Two tables: accuracy per category, then time, turns, tokens and asks."""
    lines = [f"## {title}", "", "| category | passed | accuracy |", "|---|---|---|"]
    for category, (k, n) in summary.by_category.items():
        lines.append(f"| {category} | {k}/{n} | {k / n:.0%} |")
    lines += [
        f"| **all** | **{summary.passed}/{summary.tasks}** | **{summary.accuracy:.0%}** |",
        "",
        "| p50 s/task | p95 s/task | mean model turns | mean tokens | false asks | missed asks |",
        "|---|---|---|---|---|---|",
        f"| {summary.p50_seconds:.2f} | {summary.p95_seconds:.2f} "
        f"| {summary.mean_model_turns:.2f} | {summary.mean_tokens:.0f} "
        f"| {_share(*summary.false_asks)} | {_share(*summary.missed_asks)} |",
        "",
        "False asks: tasks that have every value they need but ended with a question. "
        "Missed asks: missing_value tasks answered without asking.",
    ]
    if summary.p50_floor_ratio is not None:
        lines += [
            "",
            f"Latency: model time p50 {summary.p50_model_seconds:.2f} s per task, "
            f"{summary.p50_floor_ratio:.2f}x its floor at the median (the floor: the new "
            "tokens each turn had to read and the tokens it wrote, at this machine's "
            "measured rates).",
        ]
    if summary.worst_generation:
        worst = ", ".join(
            f"{task} {g}/{n} ({g / n:.1f}x)" for task, g, n in summary.worst_generation
        )
        lines += ["", f"Most generated over what the kept calls or answer take: {worst}."]
    if summary.turns_by_model:
        lines += [
            "",
            "Model turns by the model that wrote them: "
            + ", ".join(f"{name} {k}" for name, k in summary.turns_by_model.items())
            + ".",
        ]
    return "\n".join(lines) + "\n"
