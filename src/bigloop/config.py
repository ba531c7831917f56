"""`LoopConfig`: everything that defines a loop, as data — what `bigloop run` builds from
its options, what a config file holds, and what is stored with every run so that
`bigloop resume` rebuilds the same loop.

A config file is the JSON of a `LoopConfig`; every field is optional (the defaults are
`bigloop run`'s) and an unknown field is an error:

```json
{
  "model": "qwen2.5",
  "base_url": "http://127.0.0.1:8000/v1",
  "tools": ["calculator", "days_between"],
  "db": "shop.db",
  "planner": "graph",
  "clarify": "missing",
  "top_k": 5,
  "max_steps": 12,
  "max_seconds": 60
}
```

This module sits below the loop: it builds atoms (the model, the tools) and leaves
planners, policies and budgets to `Loop.from_config`.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel, ModelSettings
from bigloop.atoms.models.prompts import DEMOS_HEADER
from bigloop.atoms.tool import Tool
from bigloop.parts import NAMES, ClarifyWhen, EscalateWhen
from bigloop.parts import PlannerName as Planner
from bigloop.runtime.context import Budget
from bigloop.trace import postgres

_CHOICES: dict[str, object] = {
    "planner": Planner,
    "clarify": ClarifyWhen,
    "escalate_when": EscalateWhen,
}
"""The fields whose value is one of a Literal's choices (validated with a clear error)."""


class DemoCall(BaseModel):
    """One call of a demonstration: a tool name and its arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Demo(BaseModel):
    """A demonstration: a request and the reply that solved it (calls, or an answer),
    shown to the model with the instructions (`bigloop.optimize.demos` picks them from
    successful runs)."""

    model_config = ConfigDict(extra="forbid")

    task: str
    calls: list[DemoCall] = Field(default_factory=list)
    answer: str | None = None


class LoopConfig(BaseModel):
    """A loop as data, JSON-serialisable.

    Each field's `description` says what it does; the command line's options for these
    fields (`bigloop run`, `serve mcp`, `serve a2a`, `eval`) are generated from them
    (`bigloop.cli_parts.config_options`), so the help, the defaults and the checks are these.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        default="embedded",
        description="'embedded' (default), an installable model (coder-1.5b), a .gguf path, "
        "or a server's model name together with --base-url.",
    )
    base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.",
    )
    adapter: str | None = Field(
        default=None,
        description="A GGUF LoRA adapter applied over the local model (`bigloop optimize "
        "--step finetune` trains one); none: the model as shipped.",
    )
    adapter_sha256: str | None = Field(
        default=None,
        description="The adapter's sha256; a file that no longer matches is refused.",
    )
    escalate: str | None = Field(
        default=None,
        description="A stronger local model (e.g. coder-1.5b) that takes a turn over when the "
        "model's reply has invalid calls, values nobody said, or an answer before any tool "
        "ran (cheap/strong cascade, `CascadeModel`; escalate_when says which turns).",
    )
    escalate_when: EscalateWhen = Field(
        default="ungrounded",
        description="Which turns escalate takes over: ungrounded (default: invalid calls, "
        "values nobody said, an answer before any tool ran) or unsure (invalid calls, or "
        "the model's own confidence under escalate_threshold; no extra model call).",
    )
    escalate_threshold: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="The confidence under which escalate_when unsure escalates a turn.",
    )
    vote: int = Field(
        default=1,
        ge=1,
        le=9,
        description="Replies per model turn; above 1 the most common is kept (the first "
        "greedy, the rest sampled: self-consistency, `routing.vote.VoteModel`).",
    )
    tool_fits: bool = Field(
        default=False,
        description="The opt-in tool_fits check (`bigloop.policies.tool_fits`): the model's "
        "own yes/no on whether the tool it called does what a fresh request asks. Off by "
        "default: it refused read_file for 'the secret code in notes.txt' (P(yes) 0.42); on "
        "BFCL it took irrelevance 54 -> 65 at no loss on the call categories "
        "(bench/results/tool_fits/).",
    )
    tools: list[str] | None = Field(
        default=None,
        description="Built-in tools to offer (default: calculator, days_between, add_days, "
        "weekday, today, convert_units).",
    )
    files: str | None = Field(
        default=None, description="Let the loop read files under this folder."
    )
    db: str | None = Field(
        default=None, description="Let the loop query this SQLite file (read-only)."
    )
    python: bool = Field(
        default=False,
        description="Let the loop run Python code (the run_python tool) in a sandboxed "
        "subprocess: no network, a temporary folder, CPU, memory and output limits.",
    )
    tools_dir: str | None = Field(
        default=None,
        description="Also offer the made tools of this library (`bigloop tools make`); their "
        "calls run in the Python sandbox.",
    )
    a2a: list[str] = Field(
        default_factory=list,
        description="Offer the A2A agent at this URL (e.g. one `bigloop serve a2a` runs) as a "
        "tool, named and described by its agent card (needs the 'a2a' extra).",
    )
    a2a_timeout_s: float = Field(
        default=300.0, gt=0, description="The most one call to an A2A agent may take."
    )
    mcp: list[str] = Field(
        default_factory=list,
        description="Offer the tools of this MCP server: a command line run over stdio "
        "('mcp-server-time') or a streamable HTTP URL (needs the 'mcp' extra).",
    )
    mcp_timeout_s: float = Field(
        default=60.0, gt=0, description="The most one call to an MCP server's tool may take."
    )
    planner: Planner = Field(
        default="auto",
        description="react: a model turn per step; graph: plan every call at once and run "
        "independent calls concurrently; search: tree search over candidate calls; auto "
        "(default): graph when the task lists several items, else react; code: the model "
        "writes one Python program that calls the tools (run in the sandbox).",
    )
    clarify: ClarifyWhen = Field(
        default="missing",
        description="When to ask the user instead of guessing an argument: off, missing "
        "(default: a required argument is absent, or the model insists on the docs' "
        "example), ungrounded (also: its value appears nowhere in the conversation; it "
        "catches invented values but refuses right values the model knows or computes, "
        "bench/results/do_no_harm/).",
    )
    off: list[str] = Field(
        default_factory=list,
        description="Switch off one of the loop's default policies, e.g. clarify or "
        "rank_tools (a wrong name lists them all; `bigloop policies` lists them).",
    )
    top_k: int | None = Field(
        default=None,
        ge=1,
        description="Offer the model only the K tools most relevant to the task (default: all).",
    )
    system: str | None = Field(
        default=None, description="A system prompt placed before bigloop's own instructions."
    )
    demos: list[Demo] = Field(
        default_factory=list,
        description="Demonstrations shown after system (`instructions()` renders both).",
    )
    tool_docs: dict[str, str] = Field(
        default_factory=dict,
        description="Tool name -> a description that replaces the tool's own (tools not "
        "offered are ignored); `bigloop optimize` rewrites them from mistakes.",
    )
    provenance: dict[str, Any] | None = Field(
        default=None,
        description="How this config was made (`bigloop optimize` records its data, seed, "
        "base config and every accepted change); not used by the loop.",
    )
    temperature: float = Field(default=0.0, ge=0.0, description="The model's sampling temperature.")
    max_tokens_per_turn: int = Field(
        default=512, ge=1, description="Completion tokens allowed per model turn."
    )
    max_steps: int = Field(default=8, ge=1, description="Model turns allowed.")
    max_repairs: int = Field(
        default=3,
        ge=0,
        description="Invalid replies and calls sent back to the model for correction.",
    )
    max_seconds: float | None = Field(default=None, gt=0, description="Wall time of the run.")
    max_tokens: int | None = Field(
        default=None, ge=1, description="Prompt + completion tokens of the run."
    )
    max_cost: float | None = Field(
        default=None, ge=0, description="Cost of the run, from the atoms' cards."
    )
    max_step_seconds: float | None = Field(
        default=None, gt=0, description="Wall time of one model turn."
    )
    max_calls_per_turn: int = Field(
        default=16,
        ge=1,
        description="Calls made from one model turn; the model is told that the rest were "
        "not made.",
    )
    trace_db: str | None = Field(
        default=None,
        description="The trace store runs are recorded in: a SQLite file, or a postgresql:// "
        "URL shared by many processes and hosts (docs/scaling.md). Default: "
        "$BIGLOOP_TRACE_DB, else traces.db in the user data folder ($BIGLOOP_HOME).",
    )

    @field_validator("planner", "clarify", "escalate_when", mode="before")
    @classmethod
    def _known_choice(cls, value: object, info: ValidationInfo) -> object:
        choices = get_args(_CHOICES[info.field_name or ""])
        if value not in choices:
            listed = ", ".join(choices[:-1]) + f" or {choices[-1]}"
            raise ValueError(f"Unknown {info.field_name} {value!r}; use {listed}.")
        return value

    @field_validator("off")
    @classmethod
    def _known_policies(cls, value: list[str]) -> list[str]:
        if unknown := [n for n in value if n not in NAMES]:
            raise ValueError(f"unknown policy name(s) {unknown}; choose from {', '.join(NAMES)}")
        return value

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, source: str) -> LoopConfig:
        """Validate `data` (e.g. a parsed config file).

        Args:
            source: where `data` comes from, for the error message ("Config file x.json").

        Raises:
            UserError: `data` is not a valid config; the message names each bad field.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise UserError(f"{source}: invalid loop config: {_problems(e)}") from None

    @classmethod
    def load(cls, path: str | Path) -> LoopConfig:
        """Read a config file (the JSON of a `LoopConfig`).

        Raises:
            UserError: the file is missing, is not a JSON object, or has a bad field.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UserError(
                f"Config file {path} does not exist. Pass the path of a JSON file of "
                "LoopConfig fields (`bigloop run ... --save-config FILE` writes one)."
            ) from None
        except OSError as e:
            raise UserError(f"Cannot read config file {path}: {e.strerror}.") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(
                f"Config file {path} is not valid JSON: {e.msg} at line {e.lineno}, "
                f"column {e.colno}."
            ) from None
        if not isinstance(data, dict):
            raise UserError(
                f"Config file {path} must hold a JSON object of LoopConfig fields, "
                f'e.g. {{"model": "embedded", "max_steps": 8}}.'
            )
        config = cls.from_data(data, source=f"Config file {path}")
        if config.adapter and not Path(config.adapter).expanduser().is_absolute():
            # an adapter beside its config (as `bigloop optimize` writes them) travels with it
            adapter = str((path.parent / config.adapter).resolve())
            config = config.model_copy(update={"adapter": adapter})
        return config

    def save(self, path: str | Path) -> None:
        """Write this config as JSON to `path`, every field included.

        Raises:
            UserError: the file cannot be written.
        """
        path = Path(path)
        try:
            path.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as e:
            raise UserError(f"Cannot write config file {path}: {e.strerror}.") from None

    def with_absolute_paths(self) -> LoopConfig:
        """This config with `files`, `db` and a .gguf `model` or `escalate` as absolute
        paths, relative ones taken from the current folder. A run stores its config so; a
        resume started from another folder then uses the same files."""

        def absolute(path: str | None) -> str | None:
            return None if path is None else str(Path(path).expanduser().resolve())

        model, escalate, adapter = self.model, self.escalate, absolute(self.adapter)
        trace_db = self.trace_db
        if trace_db is not None and not postgres.is_url(trace_db):
            trace_db = absolute(trace_db)
        if model.endswith(".gguf") and self.base_url is None:
            model = absolute(model) or model
        if escalate and escalate.endswith(".gguf"):
            escalate = absolute(escalate)
        return self.model_copy(
            update={
                "files": absolute(self.files),
                "db": absolute(self.db),
                "tools_dir": absolute(self.tools_dir),
                "model": model,
                "escalate": escalate,
                "adapter": adapter,
                "trace_db": trace_db,
            }
        )

    def budget(self) -> Budget:
        """The run's limits this config sets."""
        return Budget(
            max_steps=self.max_steps,
            max_repairs=self.max_repairs,
            max_seconds=self.max_seconds,
            max_tokens=self.max_tokens,
            max_cost=self.max_cost,
            max_step_seconds=self.max_step_seconds,
            max_calls_per_turn=self.max_calls_per_turn,
        )

    def model_settings(self) -> ModelSettings:
        """The model's sampling settings this config sets."""
        return ModelSettings(temperature=self.temperature, max_tokens=self.max_tokens_per_turn)

    def instructions(self) -> str | None:
        """The system text the loop puts first: `system`, then the demonstrations."""
        parts = [self.system] if self.system else []
        if self.demos:
            parts.append(render_demos(self.demos))
        return "\n\n".join(parts) or None

    def documented(self, tools: list[Tool]) -> list[Tool]:
        """`tools` with the descriptions `tool_docs` gives in place of their own."""
        return [
            dataclasses.replace(t, description=self.tool_docs[t.name])
            if t.name in self.tool_docs
            else t
            for t in tools
        ]

    def build_model(self) -> ChatModel:
        """The model `model` and `base_url` name (the embedded one loads on first use).

        Raises:
            UserError: `model` is neither "embedded", a .gguf file, nor paired with a URL.
        """
        from bigloop.atoms.models.spec import ModelSpec

        spec = ModelSpec(name=self.model, base_url=self.base_url, adapter=self.checked_adapter())
        return self.escalating(self.voting(spec.build()))

    def voting(self, model: ChatModel) -> ChatModel:
        """`model`, or — with `vote` above 1 — the most common of `vote` replies of it."""
        if self.vote == 1:
            return model
        from bigloop.routing.vote import VoteModel

        return VoteModel(model, self.vote)

    def checked_adapter(self) -> str | None:
        """`adapter`, after checking the file is there and (with `adapter_sha256`) the
        same one.

        Raises:
            UserError: the file is missing or its hash differs.
        """
        if self.adapter is None:
            return None
        path = Path(self.adapter)
        if not path.is_file():
            raise UserError(f"adapter: {path} does not exist.")
        from bigloop.atoms.models.weights import file_sha256

        if self.adapter_sha256 and file_sha256(path) != self.adapter_sha256:
            raise UserError(
                f"adapter: {path} is not the adapter this config was made with (its sha256 "
                "differs). Retrain it, or set adapter_sha256 to null to use it anyway."
            )
        return str(path)

    def escalating(self, model: ChatModel) -> ChatModel:
        """`model`, or — with `escalate` set — a cascade from it to that stronger model
        (`CascadeModel`, escalating as `escalate_when` says).

        Raises:
            UserError: `escalate` names no installable model or .gguf file.
        """
        if self.escalate is None:
            return model
        from bigloop.atoms.models.spec import ModelSpec
        from bigloop.atoms.verifiers import ConfidenceVerifier
        from bigloop.routing.cascade import CascadeModel, grounded_reply

        try:
            strong = ModelSpec(name=self.escalate).build()
        except UserError as e:
            raise UserError(f"escalate: {e}".replace("--model", "--escalate")) from None
        if self.escalate_when == "unsure":
            return CascadeModel(
                model, strong, verifier=ConfidenceVerifier(), threshold=self.escalate_threshold
            )
        return CascadeModel(model, strong, check=grounded_reply)

    def build_tools(self) -> list[Tool]:
        """The named built-in tools (or the defaults), plus file and SQLite tools when
        `files` or `db` is set, and `run_python` when `python` is; a tool per A2A agent
        in `a2a`; the tools of each MCP server in `mcp`.

        Raises:
            UserError: an unknown tool name (the message lists the valid ones), or a
                folder or database that does not exist; an A2A agent whose card cannot
                be read; an MCP server that does not list its tools.
        """
        from bigloop.atoms import builtin

        chosen = builtin.default_tools()
        if self.tools is not None:
            by_name = {t.name: t for t in chosen}
            unknown = [n for n in self.tools if n not in by_name]
            if unknown:
                raise UserError(f"Unknown tool(s) {unknown}; choose from {sorted(by_name)}.")
            chosen = [by_name[n] for n in self.tools]
        if self.files:
            chosen += builtin.file_tools(self.files)
        if self.db:
            chosen += builtin.sqlite_tools(self.db)
        if self.python:
            chosen.append(builtin.python_sandbox())
        if self.tools_dir:
            from bigloop.atoms.made import ToolLibrary

            chosen += ToolLibrary(self.tools_dir).tools()
        chosen += self._a2a_tools()
        chosen += self._mcp_tools()
        return chosen

    def _a2a_tools(self) -> list[Tool]:
        """A tool per A2A agent in `a2a` (their cards are read now).

        Raises:
            UserError: the 'a2a' extra is missing, or an agent's card cannot be read.
        """
        if not self.a2a:
            return []
        try:
            from bigloop.atoms.a2a_client import a2a_agent_tool
        except ImportError as e:
            raise UserError(
                f"--a2a needs bigloop's 'a2a' extra ({e.name} is not installed): "
                "pip install 'a2a-sdk[http-server]'"
            ) from None
        return [a2a_agent_tool(url, timeout_s=self.a2a_timeout_s) for url in self.a2a]

    def _mcp_tools(self) -> list[Tool]:
        """The tools of each MCP server in `mcp` (listed now).

        Raises:
            UserError: the 'mcp' extra is missing, or a server cannot be started or
                reached, or does not list its tools.
        """
        if not self.mcp:
            return []
        try:
            from bigloop.atoms.mcp_client import mcp_tools
        except ImportError as e:
            raise UserError(
                f"--mcp needs bigloop's 'mcp' extra ({e.name} is not installed): pip install mcp"
            ) from None
        return [t for server in self.mcp for t in mcp_tools(server, timeout_s=self.mcp_timeout_s)]


def render_demos(demos: list[Demo]) -> str:
    """Demonstrations as text: each request, then the JSON reply that solved it."""
    lines = [DEMOS_HEADER]
    for demo in demos:
        if demo.calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in demo.calls]
            reply = json.dumps({"tool_calls": calls}, ensure_ascii=False)
        else:
            reply = json.dumps({"answer": demo.answer or ""}, ensure_ascii=False)
        lines.append(f"Request: {demo.task}\nReply: {reply}")
    return "\n\n".join(lines)


def _problems(error: ValidationError) -> str:
    """Pydantic's message for each bad field, on one line; a likely spelling for a typo."""
    fields = list(LoopConfig.model_fields)
    problems = []
    for e in error.errors(include_url=False):
        where = ".".join(str(part) for part in e["loc"]) or "config"
        message = str(e["ctx"]["error"]) if e["type"] == "value_error" else e["msg"]
        if e["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(e["loc"][0]), fields, n=1)
            message += f" (did you mean {close[0]!r}?)" if close else f" (fields: {fields})"
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


ADDED_LATER: dict[str, object] = {
    name: LoopConfig.model_fields[name].default
    for name in ("escalate_when", "escalate_threshold", "tool_fits", "trace_db")
}
"""LoopConfig fields added after results were recorded, with their defaults: a field at
its default is left out of what identifies a config (`optimize.evaluate.fingerprint`,
the suite's pinned results), so that earlier results still match."""
