"""Task graphs: plans of tool calls whose arguments may use earlier steps' results.

A plan is a list of steps numbered from 1 (a replan continues the numbering). An argument
value `"$N"` is replaced by step N's result, parsed as JSON when it is JSON (so a number
stays a number); `"$N"` inside a longer string is replaced by the result's text. A plan is
checked before it runs: unknown tools, references to steps that do not exist, missing
required arguments and cycles are sent back to the planner as `InvalidPlan`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bigloop._errors import ModelRetry
from bigloop.atoms.models.base import ToolSpec
from bigloop.atoms.schema import grammar_safe
from bigloop.policies.grounding import scalars

_REF = re.compile(r"\$(\d+)")
_WHOLE_REF = re.compile(r"^\$(\d+)$")
# A reference, as the grammar allows it in place of any argument value.
REF_SCHEMA: dict[str, Any] = {"type": "string", "pattern": "^[$][0-9]+$"}
_EMPTY = {"", "[]", "{}", "null", "none", '""'}


class InvalidPlan(ModelRetry):
    """The plan cannot run as written; the message tells the planner what to fix."""


@dataclass(kw_only=True)
class PlanStep:
    id: int
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def deps(self) -> set[int]:
        """Ids of the steps whose results this step's arguments use."""
        return set(_refs(self.arguments))


@dataclass(kw_only=True)
class Plan:
    steps: list[PlanStep] = field(default_factory=list)

    @property
    def ids(self) -> set[int]:
        return {s.id for s in self.steps}


def plan_schema(
    specs: list[ToolSpec], *, allow_answer: bool = False, min_steps: int = 1
) -> dict[str, Any]:
    """The JSON schema of a plan over `specs` (every argument may also be a `$N`
    reference) of at least `min_steps` steps; with `allow_answer`, a reply may instead be
    `{"answer": "..."}`."""
    shapes = []
    for spec in specs:
        args = grammar_safe(spec.parameters)
        props = {k: {"anyOf": [v, REF_SCHEMA]} for k, v in args.get("properties", {}).items()}
        shapes.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"const": spec.name},
                    "arguments": {**args, "properties": props},
                },
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    steps: dict[str, Any] = {
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "items": shapes[0] if len(shapes) == 1 else {"anyOf": shapes},
                "minItems": min_steps,
            }
        },
        "required": ["steps"],
        "additionalProperties": False,
    }
    if not allow_answer:
        return steps
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    return {"anyOf": [answer, steps]}


def parse_plan(
    text: str, specs: Mapping[str, ToolSpec], *, first_id: int = 1, done: Iterable[int] = ()
) -> Plan | str:
    """Read a planner's reply: a checked `Plan`, or the answer text when it answered.

    Args:
        first_id: the number of the plan's first step (a replan continues the count).
        done: ids of earlier steps whose results the plan may use.

    Raises:
        InvalidPlan: unreadable JSON, unknown tool, missing required argument, a
            reference to no step, or a cycle.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidPlan(f"The plan was not valid JSON ({e.msg}).") from None
    if isinstance(value, dict) and isinstance(value.get("answer"), str):
        return str(value["answer"])
    raw_steps = value.get("steps") if isinstance(value, dict) else None
    if not isinstance(raw_steps, list) or not raw_steps:
        raise InvalidPlan('Reply with {"steps": [...]} holding at least one step.')
    plan = Plan()
    problems = []
    for offset, raw in enumerate(raw_steps):
        sid = first_id + offset
        if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
            problems.append(f'step {sid} must be {{"tool": ..., "arguments": {{...}}}}')
            continue
        args = raw.get("arguments")
        step = PlanStep(id=sid, tool=raw["tool"], arguments=args if isinstance(args, dict) else {})
        plan.steps.append(step)
        if step.tool not in specs:
            names = ", ".join(specs) or "none"
            problems.append(f"step {sid}: there is no tool {step.tool!r} (tools: {names})")
            continue
        required = specs[step.tool].parameters.get("required", [])
        if missing := [r for r in required if r not in step.arguments]:
            problems.append(f"step {sid}: {step.tool} needs {', '.join(missing)}")
    known = plan.ids | set(done)
    for step in plan.steps:
        if bad := sorted(step.deps - known):
            refs = ", ".join(f"${n}" for n in bad)
            problems.append(f"step {step.id} uses {refs}, but there is no such step")
    deps = {s.id: s.deps & plan.ids for s in plan.steps}
    if not problems and (cycle := in_cycles(deps)):
        problems.append(f"steps {', '.join(map(str, cycle))} depend on each other (a cycle)")
    if problems:
        raise InvalidPlan("The plan cannot run: " + "; ".join(problems) + ".")
    return plan


def resolve(arguments: Any, outputs: Mapping[int, str]) -> Any:
    """`arguments` with every `$N` replaced by step N's result."""
    if isinstance(arguments, dict):
        return {k: resolve(v, outputs) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [resolve(v, outputs) for v in arguments]
    if not isinstance(arguments, str):
        return arguments
    if whole := _WHOLE_REF.match(arguments.strip()):
        return _value(outputs[int(whole.group(1))])
    return _REF.sub(lambda m: outputs.get(int(m.group(1)), m.group(0)), arguments)


def is_empty(output: str) -> bool:
    """A result that carries nothing (an empty list, null, blank)."""
    return output.strip().lower() in _EMPTY


def _value(output: str) -> Any:
    try:
        return json.loads(output)
    except json.JSONDecodeError:
        return output


def _refs(value: Any) -> Iterable[int]:
    for s in scalars(value):
        if isinstance(s, str):
            yield from (int(n) for n in _REF.findall(s))


K = TypeVar("K", int, str)


def in_cycles(deps: Mapping[K, set[K]]) -> list[K]:
    """The nodes a topological sort of `deps` (node -> the nodes it needs) cannot order:
    those on or behind a cycle; empty when there is none."""
    done: set[K] = set()
    while True:
        ready = {sid for sid, d in deps.items() if sid not in done and d <= done}
        if not ready:
            return sorted(set(deps) - done)
        done |= ready
