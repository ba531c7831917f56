"""Feedback from a run's trace: the critique in words, the demonstration a successful run
makes, and the calls the model got wrong. Benches call these on the steps the trace store
holds for the run (`TraceStore.steps`), so the optimizers learn from what was recorded."""

from __future__ import annotations

import json
from collections.abc import Sequence

from bigloop.config import Demo, DemoCall
from bigloop.optimize.bench import Mistake
from bigloop.runtime.call import MODEL_MISTAKES
from bigloop.trace.records import Step

MAX_CRITIQUE = 600
"""Characters of critique kept per run: enough for the verdict and the first errors."""


def critique(verdict: str, steps: Sequence[Step]) -> str:
    """Why a run was wrong: the checker's `verdict`, then what went wrong on the way —
    unreadable replies, calls refused or failed (with their arguments), questions asked,
    answers a check revised."""
    lines = [verdict.strip()] if verdict.strip() else []
    for step in steps:
        if step.kind == "model" and step.error:
            lines.append(f"unreadable reply: {step.error}")
        elif step.kind == "tool" and step.error:
            args = json.dumps(step.input, ensure_ascii=False, default=str)[:160]
            detail = str(step.output or "")[:160]
            lines.append(f"call {step.name}({args}) {step.error}: {detail}".rstrip(": "))
        elif step.kind == "ask":
            lines.append(f"asked the user: {step.input}")
    text = "\n".join(lines)
    return text[:MAX_CRITIQUE]


def demo_from(task: str, steps: Sequence[Step], answer: str | None) -> Demo:
    """The demonstration a successful run makes: its request and the calls it made (in
    order, without the ones refused), or its answer when it made none."""
    calls = [
        DemoCall(name=s.name, arguments=s.input if isinstance(s.input, dict) else {})
        for s in steps
        if s.kind == "tool" and s.error is None
    ]
    return Demo(task=task, calls=calls, answer=None if calls else answer)


def mistakes(steps: Sequence[Step]) -> list[Mistake]:
    """The calls the loop refused as the model's mistakes (unknown tool, invalid
    arguments), with the reason given: what a tool's documentation can prevent."""
    return [
        Mistake(tool=s.name, arguments=s.input, error=f"{s.error}: {str(s.output or '')[:200]}")
        for s in steps
        if s.kind == "tool" and s.error in MODEL_MISTAKES
    ]
