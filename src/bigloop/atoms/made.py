"""Tools the loop writes itself (the review's §4.1.3: LATM, CREATOR, CRAFT): a maker model
writes a Python function from a description and examples with known answers; bigloop
runs it in the `run_python` sandbox against every example, and only a function that
passes them all becomes a tool. Made tools live in a tool library on disk (`ToolLibrary`,
a folder: one JSON file per tool and version, with the source, the examples it passed,
the maker and when), are loaded with `--tools-dir` / `LoopConfig.tools_dir`, and are
called like any tool — but their code runs only inside the sandbox, never in bigloop's
process. `ToolLibrary.recheck()` runs every tool's examples again and retires the ones
that fail (a hand-edited source, a changed sandbox).

    made = await make_tool("Add a percentage to an amount.", examples, maker_model)
    if isinstance(made, MadeTool):
        ToolLibrary("tools/").save(made)
    Loop(model, [*default_tools(), *ToolLibrary("tools/").tools()])
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bigloop._errors import ToolFailure, UserError
from bigloop.atoms.builtin.python_sandbox import SandboxLimits, SandboxStopped, run_sandboxed
from bigloop.atoms.models.base import ChatModel, Message, ModelSettings
from bigloop.atoms.models.prompts import (
    MAKE_TOOL_FOR_TASK_REQUEST,
    MAKE_TOOL_REQUEST,
    MAKE_TOOL_RETRY,
    MAKE_TOOL_SYSTEM,
)
from bigloop.atoms.tool import Tool

_MADE_PROPERTIES: dict[str, Any] = {
    "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{1,40}$"},
    "description": {"type": "string"},
    "parameters": {
        "type": "object",
        "properties": {
            "type": {"const": "object"},
            "properties": {"type": "object"},
            "required": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["type", "properties"],
    },
    "source": {"type": "string"},  # max_tokens bounds it (a maxLength grammar is too big)
}
MADE_SCHEMA = {
    "type": "object",
    "properties": _MADE_PROPERTIES,
    "required": ["name", "description", "parameters", "source"],
}
FOR_TASK_SCHEMA = {
    "type": "object",
    "properties": {**_MADE_PROPERTIES, "arguments": {"type": "object"}},
    "required": ["name", "description", "parameters", "source", "arguments"],
}
_RESULT = "<bigloop-result>"  # the harness's line; the function's own prints stay output
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,40}$")


@dataclass(frozen=True)
class Example:
    """A call of the tool to make and the result it must give."""

    arguments: dict[str, Any]
    expected: Any


@dataclass
class MadeTool:
    """A tool a model wrote that passed its examples in the sandbox."""

    name: str
    description: str
    parameters: dict[str, Any]
    source: str
    examples: list[Example]
    maker: str
    version: int = 1
    created_at: float = field(default_factory=time.time)
    retired: str | None = None  # why it no longer runs (failed a recheck)
    made_for: str | None = None  # the request it was made from (`tool_for`)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def tool(self, limits: SandboxLimits | None = None) -> Tool:
        """This tool for a loop: each call runs the source in the sandbox."""
        chosen = limits or SandboxLimits()

        async def call(**arguments: Any) -> Any:
            return await run_made(self, arguments, chosen)

        return Tool.from_schema(
            self.name, self.description, self.parameters, call, timeout_s=chosen.wall_s + 10
        )


@dataclass(frozen=True)
class Rejected:
    """A proposal that did not become a tool, and why."""

    reason: str
    source: str = ""


async def make_tool(
    description: str,
    examples: list[Example],
    maker: ChatModel,
    *,
    limits: SandboxLimits | None = None,
) -> MadeTool | Rejected:
    """Ask `maker` for a function doing `description`; a `MadeTool` when its source passes
    every example in the sandbox, else `Rejected` with the first failure.

    Raises:
        UserError: no examples (a tool is accepted only on known answers).
    """
    if not examples:
        raise UserError("make_tool needs examples with known answers to test the tool on.")
    request = MAKE_TOOL_REQUEST.format(
        description=description,
        examples="\n".join(
            json.dumps({"arguments": e.arguments, "result": e.expected}) for e in examples
        ),
    )
    proposal = await _ask(maker, request, MADE_SCHEMA)
    if isinstance(proposal, Rejected):
        return proposal
    proposal.pop("arguments", None)
    made = MadeTool(examples=examples, maker=maker.name, **proposal)
    if problem := await first_failure(made, limits):
        return Rejected(problem, made.source)
    return made


async def tool_for(
    task: str,
    answer: str,
    accepts: Callable[[Any], bool],
    maker: ChatModel,
    *,
    tries: int = 2,
    limits: SandboxLimits | None = None,
) -> MadeTool | Rejected:
    """LATM's tool maker on one failure: ask `maker` for a general function for requests
    like `task` (whose right answer is `answer`) and the call that answers `task`; a
    `MadeTool` when that call's values all occur in `task`, its result is one `accepts`
    takes, and the result changes when the numbers given change (no answer baked in).
    The call and its result become the tool's example, rechecked like any other. A
    rejected proposal is sent back with the reason (CREATOR's rectification), up to
    `tries` proposals in all; the last rejection when none passes."""
    prompt = [
        Message(role="system", content=MAKE_TOOL_SYSTEM),
        Message(role="user", content=MAKE_TOOL_FOR_TASK_REQUEST.format(task=task, answer=answer)),
    ]
    rejected = Rejected("no proposal was asked for")
    for _ in range(tries):
        settings = ModelSettings(max_tokens=1200, response_schema=FOR_TASK_SCHEMA)
        reply = await maker.chat(prompt, [], settings)
        proposal = _proposal(reply.text)
        outcome = (
            proposal
            if isinstance(proposal, Rejected)
            else await _checked(proposal, task, answer, accepts, maker.name, limits)
        )
        if isinstance(outcome, MadeTool):
            return outcome
        rejected = outcome
        prompt += [
            Message(role="assistant", content=reply.text),
            Message(role="user", content=MAKE_TOOL_RETRY.format(reason=outcome.reason)),
        ]
    return rejected


async def _checked(
    proposal: dict[str, Any],
    task: str,
    answer: str,
    accepts: Callable[[Any], bool],
    maker: str,
    limits: SandboxLimits | None,
) -> MadeTool | Rejected:
    """`proposal` as a tool when its call for `task` is grounded, right and not a
    constant; else why not."""
    arguments = proposal.pop("arguments", None)
    source = proposal["source"]
    if not isinstance(arguments, dict) or not arguments:
        return Rejected("the maker gave no call for the request", source)
    if problem := ungrounded(arguments, task):
        return Rejected(problem, source)
    made = MadeTool(examples=[], maker=maker, made_for=task, **proposal)
    chosen = limits or SandboxLimits()
    try:
        got = await run_made(made, arguments, chosen)
    except ToolFailure as e:
        return Rejected(f"{_shown(arguments)} failed: {str(e)[:300]}", source)
    if not accepts(got):
        return Rejected(f"{_shown(arguments)} gave {got!r}; the right answer is {answer}", source)
    if not await _depends(made, arguments, got, chosen):
        return Rejected("its result does not change with the numbers it is given", source)
    made.examples = [Example(arguments=arguments, expected=got)]
    return made


async def _ask(maker: ChatModel, request: str, schema: dict[str, Any]) -> dict[str, Any] | Rejected:
    prompt = [
        Message(role="system", content=MAKE_TOOL_SYSTEM),
        Message(role="user", content=request),
    ]
    settings = ModelSettings(max_tokens=1200, response_schema=schema)
    reply = await maker.chat(prompt, [], settings)
    return _proposal(reply.text)


_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def ungrounded(arguments: dict[str, Any], text: str) -> str | None:
    """Why `arguments` are not taken from `text` (a value that does not occur in it: a
    number written there, or that number as a fraction of 100; a name written there);
    None when every value occurs."""
    numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(text)]
    lowered = " ".join(text.lower().split())

    def occurs(value: Any) -> bool:
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, int | float):
            return any(
                math.isclose(value, n, rel_tol=1e-9) or math.isclose(value * 100, n, rel_tol=1e-9)
                for n in numbers
            )
        if isinstance(value, str):
            return " ".join(value.lower().split()) in lowered
        if isinstance(value, list):
            return all(map(occurs, value))
        if isinstance(value, dict):
            return all(map(occurs, value.values()))
        return False

    for name, value in arguments.items():
        if not occurs(value):
            return f"{name}={value!r} does not occur in the request"
    return None


async def _depends(
    made: MadeTool, arguments: dict[str, Any], got: Any, limits: SandboxLimits
) -> bool:
    """Whether `made`'s result changes when its numeric arguments do (True when it takes
    none: names cannot be changed blindly)."""
    numeric = {
        k: v for k, v in arguments.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
    if not numeric:
        return True
    changed = {
        **arguments,
        **{k: (v * 3 + 7 if isinstance(v, int) else v * 1.7 + 0.3) for k, v in numeric.items()},
    }
    try:
        other = await run_made(made, changed, limits)
    except ToolFailure:
        return True  # other values may be out of its domain (a date, a count); it ran on ours
    return not same(other, got)


def _proposal(text: str) -> dict[str, Any] | Rejected:
    try:
        data = json.loads(text)
        name, source = str(data["name"]), str(data["source"])
        parameters, description = dict(data["parameters"]), str(data["description"])
    except (ValueError, TypeError, KeyError):
        return Rejected(f"the maker's reply is not a tool: {text[:200]!r}")
    if not _NAME.match(name) or keyword.iskeyword(name):
        return Rejected(f"{name!r} is not a usable tool name", source)
    if f"def {name}(" not in source:
        return Rejected(f"the source defines no function {name}()", source)
    found = {"name": name, "description": description, "parameters": parameters, "source": source}
    return found | ({"arguments": data["arguments"]} if "arguments" in data else {})


async def first_failure(made: MadeTool, limits: SandboxLimits | None = None) -> str | None:
    """The first example `made` fails in the sandbox, said in words; None when all pass."""
    for example in made.examples:
        try:
            got = await run_made(made, example.arguments, limits or SandboxLimits())
        except ToolFailure as e:
            return f"{_shown(example.arguments)} failed: {str(e)[:300]}"
        if not same(got, example.expected):
            return f"{_shown(example.arguments)} gave {got!r}, not {example.expected!r}"
    return None


async def run_made(made: MadeTool, arguments: dict[str, Any], limits: SandboxLimits) -> Any:
    """Call `made` with `arguments` in the sandbox; its result (JSON-like).

    Raises:
        ToolFailure: the code raised, broke a sandbox limit or returned no result.
    """
    if made.retired:
        raise ToolFailure(f"{made.name} is retired: {made.retired}")
    harness = (
        f"{made.source}\n\n"
        "import json as _bigloop_json\n"
        f"_bigloop_result = {made.name}(**_bigloop_json.loads({json.dumps(arguments)!r}))\n"
        f"print({_RESULT!r} + _bigloop_json.dumps(_bigloop_result, default=str))\n"
    )
    try:
        output = await run_sandboxed(harness, limits)
    except SandboxStopped as e:
        raise ToolFailure(str(e)) from e
    for line in reversed(output.split("\n")):
        if line.startswith(_RESULT):
            return json.loads(line[len(_RESULT) :])
    raise ToolFailure(f"{made.name} printed no result: {output[-300:]!r}")


def same(got: Any, expected: Any) -> bool:
    """Equal as JSON, numbers within a relative 1e-6 (0.1 + 0.2 is 0.3)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return got is expected
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(expected, list) and isinstance(got, list):
        return len(got) == len(expected) and all(map(same, got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in got)
    return bool(got == expected)


def _shown(arguments: dict[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")"


class ToolLibrary:
    """A folder of made tools: `NAME.vN.json` per version; the newest version that is not
    retired is the tool."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def save(self, made: MadeTool) -> Path:
        """Store `made` as the next version of its name; the file written."""
        self.folder.mkdir(parents=True, exist_ok=True)
        made.version = 1 + max((m.version for m in self._versions(made.name)), default=0)
        path = self.folder / f"{made.name}.v{made.version}.json"
        path.write_text(json.dumps(_record(made), indent=1, ensure_ascii=False) + "\n")
        return path

    def made(self) -> list[MadeTool]:
        """Every tool's newest version that is not retired, by name."""
        latest: dict[str, MadeTool] = {}
        for m in self._all():
            if m.retired is None and (m.name not in latest or m.version > latest[m.name].version):
                latest[m.name] = m
        return [latest[n] for n in sorted(latest)]

    def tools(self, limits: SandboxLimits | None = None) -> list[Tool]:
        """The library's tools, ready for a loop (each call runs in the sandbox)."""
        return [m.tool(limits) for m in self.made()]

    async def recheck(self, limits: SandboxLimits | None = None) -> list[str]:
        """Run every current tool's examples again; retire (in its file) each that fails.
        The names retired."""
        retired = []
        for made in self.made():
            if problem := await first_failure(made, limits):
                made.retired = problem
                path = self.folder / f"{made.name}.v{made.version}.json"
                path.write_text(json.dumps(_record(made), indent=1, ensure_ascii=False) + "\n")
                retired.append(made.name)
        return retired

    def _versions(self, name: str) -> list[MadeTool]:
        return [m for m in self._all() if m.name == name]

    def _all(self) -> list[MadeTool]:
        if not self.folder.is_dir():
            raise UserError(f"No tool library at {self.folder}: make a tool into it first.")
        found = []
        for path in sorted(self.folder.glob("*.v*.json")):
            try:
                data = json.loads(path.read_text())
                data["examples"] = [Example(**e) for e in data["examples"]]
                data.pop("sha256", None)
                found.append(MadeTool(**data))
            except (ValueError, TypeError, KeyError) as e:
                raise UserError(f"{path} is not a made tool ({e}); move it away.") from e
        return found


def _record(made: MadeTool) -> dict[str, Any]:
    return {**asdict(made), "sha256": made.sha256}
