"""What the trace viewer shows, as JSON-ready data read from the trace store's records.

Everything here is derived from stored steps; nothing is recomputed by running anything:

- a run: id, task, status, model, planner, tokens, cost (None for a run recorded before
  the store kept costs), time;
- a step: what it took and gave, the calls a model turn asked for, the routing decision
  and the model that answered, the question a step put to the user, and its repairs (a
  reply sent back as unreadable, a call refused or repeated, arguments adapted by the
  call checks);
- the plan graph of a graph-planner run: the plan and join turns' steps, numbered as the
  planner numbers them (`$N`), with their dependencies and how each step went.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bigloop.planners.plan import PlanStep
from bigloop.trace.records import Step, message_to_dict
from bigloop.trace.store import RunSummary

_REFUSED = {
    "unknown_tool": "the model called a tool that does not exist; the error went back to it",
    "invalid_arguments": "the call's arguments were refused; the error went back to the model",
    "denied": "the call cannot be undone and was not approved, so it was not made; the "
    "denial went back to the model",
}
_PLAN_ROLES = ("plan", "join")


def run_view(summary: RunSummary) -> dict[str, Any]:
    """A run's row: what the run list and the run's header show."""
    end = summary.ended_at if summary.ended_at is not None else time.time()
    return {
        "run_id": summary.run_id,
        "task": summary.task,
        "model": summary.model,
        "planner": summary.config.get("planner"),
        "status": summary.status,
        "answer": summary.answer,
        "error": summary.error,
        "question": summary.question
        or (summary.error if summary.status == "input_required" else None),
        "started_at": summary.started_at,
        "ended_at": summary.ended_at,
        "seconds": max(0.0, end - summary.started_at),
        "steps": summary.steps,
        "tool_calls": summary.tool_calls,
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.completion_tokens,
        "tokens": summary.prompt_tokens + summary.completion_tokens,
        "cost": summary.cost,
    }


def steps_view(steps: list[Step], started_at: float) -> list[dict[str, Any]]:
    """Every step of a run, oldest first, each with its repairs.

    Repairs need the model turn that asked for a call, so the whole run is read even when
    only its newest steps are sent.
    """
    asked: dict[str, dict[str, Any]] = {}
    views = []
    for step in steps:
        view = _step_view(step, started_at)
        if step.kind == "model":
            for call in view["calls"]:
                asked[call["id"]] = call["arguments"]
        elif view["call_id"] is not None and not view["call_id"].startswith("$"):
            original = asked.get(view["call_id"])
            if original is not None and step.input is not None and original != step.input:
                view["repairs"].append(
                    "arguments adapted by the call checks: "
                    f"{_compact(original)} → {_compact(step.input)}"
                )
        views.append(view)
    return views


def _step_view(step: Step, started_at: float) -> dict[str, Any]:
    info = step.input if step.kind == "model" and isinstance(step.input, dict) else {}
    message = step.message
    calls = [
        {"id": c.id, "name": c.name, "arguments": c.arguments}
        for c in (message.tool_calls if message is not None else [])
    ]
    repairs: list[str] = []
    if step.kind == "model" and step.error == "malformed_reply":
        repairs.append("unreadable reply: sent back to the model for correction")
    elif step.error in _REFUSED:
        repairs.append(_REFUSED[step.error])
    elif step.error == "repeated":
        repairs.append("an identical call was made before: its result was reused")
    question = None
    if step.kind == "ask":
        asked = step.input.get("question") if isinstance(step.input, dict) else None
        question = asked if isinstance(asked, str) else _text(step.output)
    return {
        "index": step.index,
        "kind": step.kind,
        "name": step.name,
        "offset": max(0.0, step.started_at - started_at),
        "seconds": step.seconds,
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "error": step.error,
        "input": step.input,
        "output": step.output,
        "role": info.get("role"),
        "route": info.get("route"),
        "answered_by": info.get("answered_by"),
        "calls": calls,
        "call_id": message.tool_call_id if message is not None else None,
        "question": question,
        "repairs": repairs,
    }


def plan_view(steps: list[Step]) -> dict[str, Any] | None:
    """The task graph a graph-planner run planned and ran: nodes (`$N` steps) and edges
    (a step uses another's result); None when the run made no plan."""
    nodes: dict[int, dict[str, Any]] = {}
    for step in steps:
        message = step.message
        if message is None:
            continue
        if step.kind == "model" and message.name in _PLAN_ROLES:
            for raw in _planned(message.content):
                sid = max(nodes, default=0) + 1
                plan_step = PlanStep(id=sid, tool=raw["tool"], arguments=raw["arguments"])
                nodes[sid] = {
                    "id": sid,
                    "tool": plan_step.tool,
                    "arguments": plan_step.arguments,
                    "deps": sorted(d for d in plan_step.deps if d < sid),
                    "planned_by": step.index,
                    "status": "planned",
                    "step": None,
                }
        elif (ref := message.tool_call_id) and ref.startswith("$") and ref[1:].isdigit():
            node = nodes.get(int(ref[1:]))
            if node is not None:
                node["status"] = "failed" if step.error else "done"
                node["step"] = step.index
    if not nodes:
        return None
    edges = [{"from": d, "to": n["id"]} for n in nodes.values() for d in n["deps"] if d in nodes]
    return {"nodes": list(nodes.values()), "edges": edges}


def conversation_view(task: str, steps: list[Step], before: int) -> list[dict[str, Any]]:
    """The conversation as the trace has it before step `before`: the task, then the
    message each earlier step added. System prompts and the loop's correction notes are
    not stored in the trace, so they are not shown."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    messages += [message_to_dict(s.message) for s in steps[:before] if s.message is not None]
    return messages


def _planned(content: str) -> list[dict[str, Any]]:
    """The `{"tool", "arguments"}` steps of a plan turn's reply (none for an answer or an
    unreadable reply)."""
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return []
    found = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(found, list):
        return []
    planned = []
    for raw in found:
        if isinstance(raw, dict) and isinstance(raw.get("tool"), str):
            arguments = raw.get("arguments")
            planned.append(
                {"tool": raw["tool"], "arguments": arguments if isinstance(arguments, dict) else {}}
            )
    return planned


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
