"""Fixed workflows: steps a developer declares, run as a task graph, usable as one atom.

A `Workflow` is a plan written by hand: named steps, each a tool (or a sub-loop or another
workflow, both of which are tools via `as_tool`) with arguments that may use the
workflow's inputs and earlier steps' results as `"$name"`. Independent steps run
concurrently. `Workflow.as_tool()` makes the whole workflow one tool, so it can be
offered to a `Loop`, and `Loop.as_tool()` does the same for a loop: hierarchical
composition.

    wf = Workflow(
        "compare_hotels",
        "Hotel prices of two cities, and the lower one.",
        inputs={"a": str, "b": str},
        steps=[
            Do("price_a", get_hotel_price, city="$a"),
            Do("price_b", get_hotel_price, city="$b"),
            Do("lower", calculator, expression="min($price_a, $price_b)"),
        ],
    )
    result = await wf.run(a="Paris", b="Oslo")   # {"price_a": ..., "price_b": ..., "lower": ...}
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

from bigloop._errors import ModelRetry, ToolFailure, UserError
from bigloop.atoms.tool import EFFECTS, Effect, Tool
from bigloop.planners.plan import in_cycles

_NAME_REF = re.compile(r"\$([A-Za-z_]\w*)")


@dataclass(kw_only=True)
class _Do:
    name: str
    tool: Tool
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def deps(self) -> set[str]:
        return set(_NAME_REF.findall(json.dumps(self.arguments)))


def Do(name: str, tool: Tool, /, **arguments: Any) -> _Do:
    """A workflow step: call `tool` with `arguments` (`"$x"` uses input or step x)."""
    if not isinstance(tool, Tool):
        raise UserError(
            f"Step {name!r}: {tool!r} is not a Tool. Decorate the function with @tool, "
            "or use loop.as_tool() / workflow.as_tool() for a sub-loop."
        )
    return _Do(name=name, tool=tool, arguments=arguments)


class Workflow:
    """Declared steps run as a task graph (see the module docstring).

    Raises:
        UserError: at construction, for duplicate names, a reference to no input or step,
            or a cycle — the developer's mistakes fail fast.
    """

    def __init__(
        self,
        name: str,
        description: str,
        *,
        inputs: dict[str, type],
        steps: list[_Do],
        output: str | None = None,
    ) -> None:
        names = [s.name for s in steps]
        if dupes := sorted({n for n in names if names.count(n) > 1} | (set(names) & set(inputs))):
            raise UserError(f"Workflow {name!r}: names used twice: {dupes}; rename them.")
        known = set(inputs) | set(names)
        for step in steps:
            if missing := sorted(step.deps - known):
                raise UserError(
                    f"Workflow {name!r}, step {step.name!r} uses "
                    f"{', '.join('$' + m for m in missing)}, which is no input or step. "
                    f"Inputs: {sorted(inputs)}; steps: {names}."
                )
        names_set = set(names)
        if cycle := in_cycles({s.name: s.deps & names_set for s in steps}):
            raise UserError(f"Workflow {name!r}: steps {cycle} depend on each other (a cycle).")
        if output is not None and output not in names:
            raise UserError(f"Workflow {name!r}: output {output!r} is not a step ({names}).")
        self.name = name
        self.description = description
        self.inputs = inputs
        self.steps = steps
        self.output = output

    async def run(self, **inputs: Any) -> dict[str, Any]:
        """Run every step (independent ones concurrently); each step's result by name.

        Raises:
            ToolFailure: a step's tool failed; the message names the step.
        """
        if missing := sorted(set(self.inputs) - set(inputs)):
            raise UserError(f"Workflow {self.name!r} needs inputs {missing}.")
        values: dict[str, Any] = dict(inputs)
        results: dict[str, Any] = {}
        pending = list(self.steps)
        while pending:
            ready = [s for s in pending if s.deps <= set(values)]
            outputs = await asyncio.gather(*(self._call(s, values) for s in ready))
            for step, out in zip(ready, outputs, strict=True):
                values[step.name] = results[step.name] = out
            pending = [s for s in pending if s not in ready]
        return results

    async def _call(self, step: _Do, values: dict[str, Any]) -> Any:
        arguments = _substitute(step.arguments, values)
        try:
            text = await step.tool.call(arguments)
        except (ToolFailure, ModelRetry) as e:  # ModelRetry: the step does not fit its tool
            raise ToolFailure(f"workflow {self.name!r}, step {step.name!r}: {e}") from None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    @property
    def effect(self) -> Effect:
        """The strongest effect of its steps ("irreversible" > "write" > "read")."""
        return max((s.tool.effect for s in self.steps), key=EFFECTS.index, default="read")

    def as_tool(self) -> Tool:
        """The workflow as one tool: its inputs are the arguments; it returns the output
        step's result, or every step's result.

        The tool's effect is the strongest of its steps' (`effect`), and it is idempotent
        only when every step is: a workflow with an irreversible step is called only when
        approved, like the step itself (`bigloop.policies.approval`)."""
        properties = {k: {"type": _json_type(t)} for k, t in self.inputs.items()}

        async def run(**arguments: Any) -> Any:
            results = await self.run(**arguments)
            return results[self.output] if self.output else results

        return Tool.from_schema(
            self.name,
            self.description,
            {"type": "object", "properties": properties, "required": list(self.inputs)},
            run,
            effect=self.effect,
            idempotent=all(s.tool.idempotent for s in self.steps),
        )


def _substitute(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if not isinstance(value, str):
        return value
    whole = _NAME_REF.fullmatch(value)
    if whole:
        return values[whole.group(1)]
    return _NAME_REF.sub(lambda m: _text(values[m.group(1)]), value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_type(kind: type) -> str:
    names = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}
    return names.get(kind, "object")
