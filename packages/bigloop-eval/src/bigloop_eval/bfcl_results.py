"""BFCL results: one record per case, the JSON Lines files they are kept in, and the summary.

Shared by every mode and category; it imports nothing else from `bigloop_eval`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bigloop.atoms.models.base import ModelSettings, Usage

Mode = Literal["raw", "loop", "graph", "retrieve", "code"]
"""How a case is run.

- raw: the model alone: called with the functions through its own chat template (or its
  server's native tool calling), output parsed leniently, as without bigloop.
- loop: bigloop's `Loop` with the ReAct planner: relevance-ranked tools, grammar, type
  adapters, schema validation, repair by feedback. Single-turn runs stop after the first
  model turn whose calls were all made (`ReactPlanner(stop_after_calls=True)`).
- graph: the `Loop` with the task-graph planner (multi-turn categories only).
- retrieve: the `Loop` as in loop mode, offered only the top `RETRIEVE_K` functions
  retrieved from a registry of every BFCL function (~2,900) instead of the case's own list
  (single-turn categories only).
"""
RETRIEVE_K = 3
SETTINGS = ModelSettings(temperature=0.0, max_tokens=256)


@dataclass(kw_only=True)
class CaseResult:
    id: str
    category: str
    mode: str
    valid: bool
    error_type: str | None
    calls: list[list[Any]]
    valid_calls: bool
    repairs: int = 0
    """Corrections: unreadable model turns and calls that were the model's mistake."""
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_seconds: float = 0.0
    generation_seconds: float = 0.0
    error: str | None = None
    raw: list[str] = field(default_factory=list)
    """The model's output, one entry per model turn."""
    asked: int = 0
    """Turns where the loop asked the user instead of calling (multi-turn, --clarify)."""

    @classmethod
    def measured(
        cls, case: Any, mode: str, usage: Usage, start: float, *, error: str | None, **fields: Any
    ) -> CaseResult:
        """A result with the case's identity, the usage's tokens and seconds since `start`;
        a model error overrides the checker's error type."""
        if error is not None:
            fields["error_type"] = "model_error"
        return cls(
            id=case.id,
            category=case.category,
            mode=mode,
            error=error,
            seconds=time.perf_counter() - start,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            prompt_seconds=usage.prompt_seconds,
            generation_seconds=usage.generation_seconds,
            **fields,
        )


def results_path(out_dir: Path, model_name: str, mode: str, category: str) -> Path:
    """Where one model's results for one mode and category are kept."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model_name)
    return out_dir / safe / mode / f"{category}.jsonl"


def load_results(path: Path) -> dict[str, CaseResult]:
    """The results already in `path`, by case id (none: {})."""
    if not path.exists():
        return {}
    done = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            done[row["id"]] = CaseResult(**row)
    return done


def summarize(results: list[CaseResult]) -> dict[str, Any]:
    """Accuracy, error types, valid-call rate, latency percentiles and tokens."""
    n = len(results)
    if n == 0:
        return {"cases": 0}
    seconds = sorted(r.seconds for r in results)
    errors: dict[str, int] = {}
    for r in results:
        if not r.valid and r.error_type:
            errors[r.error_type] = errors.get(r.error_type, 0) + 1
    return {
        "cases": n,
        "accuracy": sum(r.valid for r in results) / n,
        "valid_call_rate": sum(r.valid_calls for r in results) / n,
        "repaired": sum(r.repairs > 0 for r in results),
        "p50_s": seconds[n // 2],
        "p95_s": seconds[min(n - 1, int(n * 0.95))],
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "prompt_s": sum(r.prompt_seconds for r in results),
        "generation_s": sum(r.generation_seconds for r in results),
        "total_s": sum(r.seconds for r in results),
        "asked": sum(r.asked for r in results),
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])),
    }
