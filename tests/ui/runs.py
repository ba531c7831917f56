"""Runs recorded by the real loop with scripted models, for the trace viewer's tests."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from bigloop import Budget, Loop, ScriptedModel, TraceStore, tool
from bigloop.trace.records import Step, StepKind

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'


@tool
def lookup(name: str) -> str:
    """Look a page up by name.

    Args:
        name: the page.
    """
    if name == "missing":
        raise KeyError(name)
    return f"page {name}: {XSS}"


@tool
def repeat(text: str, times: int) -> str:
    """Repeat a text.

    Args:
        text: what to repeat.
        times: how many times.
    """
    return text * times


@tool
async def add_later(a: float, b: float) -> float:
    """Add two numbers, after a short wait (a remote service)."""
    await asyncio.sleep(0.05)
    return a + b


def calls(*made: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in made]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def react_run(store: TraceStore) -> str:
    """A ReAct run with a tool result holding markup, a failing call, a call to a tool
    that does not exist, arguments the call checks adapt ("3" → 3), then an answer."""
    model = ScriptedModel(
        [
            calls(("lookup", {"name": "home"}), ("lookup", {"name": "missing"})),
            calls(("teleport", {"to": "Mars"})),
            calls(("repeat", {"text": "ab", "times": "3"})),
            answer("The home page says hello."),
        ]
    )
    loop = Loop(model, [lookup, repeat], store=store, budget=Budget(max_repairs=5), planner="react")
    result = loop.run_sync("Read the home page and the missing page.")
    assert result.status == "ok", result
    return result.run_id


def graph_run(store: TraceStore) -> str:
    """A graph-planner run: two independent steps and one that adds their results.

    The tool takes a moment, as real ones do: an instant tool can finish while the plan is
    still streaming, and then the graph planner numbers two steps alike (reported).
    """
    plan = json.dumps(
        {
            "steps": [
                {"tool": "add_later", "arguments": {"a": 1, "b": 2}},
                {"tool": "add_later", "arguments": {"a": 3, "b": 4}},
                {"tool": "add_later", "arguments": {"a": "$1", "b": "$2"}},
            ]
        }
    )
    model = ScriptedModel([plan, answer("10")])
    loop = Loop(model, [add_later], store=store, planner="graph")
    result = loop.run_sync("(1 + 2) + (3 + 4)?")
    assert result.status == "ok", result
    return result.run_id


def start_live_run(store: TraceStore, run_id: str = "live00000001") -> str:
    """A run still in progress: started, with one model turn recorded so far."""
    store.start_run(run_id, "A run in progress", "scripted", {"planner": "react"})
    add_live_step(store, run_id, 0)
    return run_id


def add_live_step(store: TraceStore, run_id: str, index: int) -> None:
    kind: StepKind = "model" if index % 2 == 0 else "tool"
    store.add_step(
        Step(
            run_id=run_id,
            index=index,
            kind=kind,
            name="scripted" if kind == "model" else "add",
            input={"messages": index + 1, "tools": 1} if kind == "model" else {"a": index, "b": 1},
            output=f"live output {index}",
            seconds=0.01,
            prompt_tokens=5 if kind == "model" else 0,
            completion_tokens=3 if kind == "model" else 0,
            started_at=time.time(),
        )
    )
