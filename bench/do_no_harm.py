"""Do no harm: calls that are already right must pass through the loop's policies unchanged.

Replays the ground-truth calls of BFCL's multi-turn categories (multi_turn_base and
multi_turn_long_context: conversations of several user turns over BFCL's stateful
simulations — a file system, a trading bot, a travel API…) through the real `Loop`, built
the way `bigloop run` builds it (`Loop.from_config(LoopConfig(), tools=..., model=...)`:
the auto planner, clarifying questions, every default policy), with the conversation
carried from turn to turn (`history`) and, in a second row, a system prompt. The model
is scripted: at each turn it makes the turn's ground-truth calls one per model turn (or,
asked for a plan, all of them as one plan), then answers. Every call runs in BFCL's
simulation.

A ground-truth call passes unchanged when the loop made exactly that call (same tool,
same arguments). Otherwise it was harmed: adapted (made with other arguments), refused by
a check, asked about, not offered (a selector dropped its tool), not made (the run ended
first), or answered from an earlier result instead of being made (a repeat). BFCL's own
multi-turn checker then scores what was made, per case.

    .venv/bin/python bench/do_no_harm.py [--limit N] [--out NAME]

Writes bench/results/do_no_harm/NAME.md and .json (default NAME: the git revision). The
cases are split by id parity into dev (even: the policies may be tuned on them) and test
(odd: reported, never tuned on).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import collections
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from bigloop_eval.bfcl_multi import (
    MORE_FUNCTIONS,
    MultiCase,
    Simulation,
    call_string,
    load_multi_cases,
    score_multi,
)

from bigloop.atoms.models.base import Message, ModelResponse, ModelSettings, ToolCall, ToolSpec
from bigloop.atoms.models.function import FunctionModel
from bigloop.config import LoopConfig
from bigloop.loop import Loop
from bigloop.planners.code import program_reply

RESULTS = Path(__file__).parent / "results" / "do_no_harm"
CATEGORIES = ("multi_turn_base", "multi_turn_long_context")
SYSTEM = "You are a careful assistant. Use the tools to do what the user asks."
HARMS = ("adapted", "refused", "asked", "not_offered", "not_made", "repeated")


def parse_call(text: str, docs: list[dict[str, Any]]) -> ToolCall:
    """A ground-truth call, "cd(folder='document')" or "sort('report.pdf')", as a
    `ToolCall` (positional values named from the function's documented parameters)."""
    node = ast.parse(text.strip(), mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    name = node.func.id
    params = next(
        (list(d["parameters"].get("properties", {})) for d in docs if d["name"] == name), []
    )
    arguments = {params[i]: ast.literal_eval(v) for i, v in enumerate(node.args)}
    arguments |= {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    return ToolCall(id="", name=name, arguments=arguments)


class Replay:
    """The scripted model of one turn: the ground-truth calls, in order, then an answer."""

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls = list(calls)
        self.next = 0
        self.not_offered: list[ToolCall] = []
        self.ids = 0

    def reply(self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> Any:
        if settings.free_text:  # the code planner: one program per call, then the answer
            return self.program()
        schema = settings.response_schema
        if schema is not None:  # a planner's structured turn: a plan, or the answer
            wants_plan = "steps" in json.dumps(schema) and self.next < len(self.calls)
            if not wants_plan:
                return ModelResponse(text=json.dumps({"answer": "Done."}))
            rest, self.next = self.calls[self.next :], len(self.calls)
            steps = [{"tool": c.name, "arguments": c.arguments} for c in rest]
            return ModelResponse(text=json.dumps({"steps": steps}))
        offered = {t.name for t in tools}
        while self.next < len(self.calls):
            call = self.calls[self.next]
            self.next += 1
            if call.name in offered:
                self.ids += 1
                made = ToolCall(id=f"r{self.ids}", name=call.name, arguments=dict(call.arguments))
                return ModelResponse(tool_calls=[made])
            self.not_offered.append(call)
        return ModelResponse(text="Done.")

    def program(self) -> ModelResponse:
        """The code planner's turn: the next call as a program (`program_reply`), then
        the answer. The functions a program may call are the bridge's (the tools the
        selectors kept), not the turn's `tools`: a call to a dropped one is refused
        inside the program and counts as not made."""
        if self.next < len(self.calls):
            self.next += 1
            return ModelResponse(text=program_reply([self.calls[self.next - 1]]))
        return ModelResponse(text="Done.")


def build_loop(config: LoopConfig, tools: list[Any], model: FunctionModel) -> Loop:
    """`bigloop run`'s loop around `tools` and `model` (on revisions before
    `Loop.from_config` took them, through the config's builders)."""
    try:
        return Loop.from_config(config, tools=tools, model=model)
    except TypeError:
        with (
            mock.patch.object(LoopConfig, "build_model", lambda self: model),
            mock.patch.object(LoopConfig, "build_tools", lambda self: tools),
        ):
            return Loop.from_config(config)


def outcome(expected: ToolCall, steps: list[Any], used: set[int], replay: Replay) -> str:
    """How the loop treated one ground-truth call: "unchanged" or a harm (`HARMS`)."""
    if any(c is expected for c in replay.not_offered):
        return "not_offered"
    for i, s in enumerate(steps):
        if i in used or s.kind not in ("tool", "ask") or s.name != expected.name:
            continue
        used.add(i)
        if s.kind == "ask":
            return "asked"
        if s.error == "repeated":
            return "repeated"
        if s.error is not None:
            return "refused" if s.error in ("invalid_arguments", "denied") else "not_made"
        return "unchanged" if s.input == expected.arguments else "adapted"
    return "not_made"


async def replay_case(
    case: MultiCase, system: str | None, policies: dict[str, Any] | None = None
) -> dict[str, Any]:
    sim = Simulation(case)
    history: list[Message] = []
    counts: collections.Counter[str] = collections.Counter()
    decoded: list[list[list[str]]] = []
    examples: list[dict[str, Any]] = []
    for turn, messages in enumerate(case.turns):
        request = "\n".join(m["content"] for m in messages) or MORE_FUNCTIONS
        docs = case.functions(turn)
        expected = [parse_call(c, docs) for c in case.answer[turn]]
        replay = Replay(expected)
        model = FunctionModel(replay.reply, name="replay")
        config = LoopConfig(system=system, max_steps=len(expected) + 3, **(policies or {}))
        loop = build_loop(config, sim.tools(docs, stateful=True), model)
        result = await loop.run(request, history=history)
        history = result.messages
        used: set[int] = set()
        for call in expected:
            how = outcome(call, result.steps, used, replay)
            counts[how] += 1
            if how != "unchanged" and len(examples) < 3:
                made = [(s.name, s.input, s.error) for s in result.steps if s.kind != "model"]
                examples.append(
                    {
                        "turn": turn,
                        "call": call_string(call.name, call.arguments),
                        "how": how,
                        "steps": made[:6],
                    }
                )
        made_by_turn: dict[int, list[str]] = {}
        for s in result.steps:
            if s.kind == "tool" and s.error is None:
                owner = max(
                    (m.index for m in result.steps if m.kind == "model" and m.index < s.index),
                    default=-1,
                )
                made_by_turn.setdefault(owner, []).append(call_string(s.name, s.input))
        decoded.append([made_by_turn[k] for k in sorted(made_by_turn)])
    valid, error_type = await asyncio.to_thread(score_multi, case, decoded)
    return {
        "id": case.id,
        "counts": dict(counts),
        "valid": valid,
        "error_type": error_type,
        "examples": examples,
    }


def revision() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts: collections.Counter[str] = collections.Counter()
    for r in rows:
        counts.update(r["counts"])
    total = sum(counts.values())
    return {
        "cases": len(rows),
        "calls": total,
        "unchanged": counts["unchanged"],
        "unchanged_pct": round(100 * counts["unchanged"] / total, 2) if total else 0.0,
        "harms": {h: counts[h] for h in HARMS},
        "checker_valid": sum(r["valid"] for r in rows),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="cases per category")
    parser.add_argument("--out", default=None, help="result file name (default: git revision)")
    parser.add_argument(
        "--off", action="append", default=[], help="a policy to switch off (repeatable)"
    )
    parser.add_argument(
        "--planner",
        default=LoopConfig().planner,
        help="the loop's planner (default: LoopConfig's); code: each call as a program",
    )
    parser.add_argument(
        "--clarify",
        default=LoopConfig().clarify,
        help="off, missing or ungrounded (default: LoopConfig's)",
    )
    args = parser.parse_args()
    name = args.out or revision()
    report: dict[str, Any] = {"revision": revision(), "command": " ".join(sys.argv), "rows": {}}
    lines = [
        f"# Do-no-harm replay ({report['revision']})",
        "",
        f"`{report['command']}` — ground-truth calls replayed through "
        f"`Loop.from_config(LoopConfig(planner={args.planner!r}, clarify={args.clarify!r}, "
        f"off={args.off}))` (every other policy on), history carried between turns.",
        "",
        "| category | system prompt | split | cases | calls | unchanged | "
        + " | ".join(HARMS)
        + " | BFCL checker valid |",
        "|---|---|---|---|---|---|" + "---|" * len(HARMS) + "---|",
    ]
    policies = {"clarify": args.clarify, "off": args.off, "planner": args.planner}
    report["policies"] = policies
    start = time.perf_counter()
    for category in CATEGORIES:
        cases = load_multi_cases(category, args.limit)
        for system in (None, SYSTEM):
            rows = []
            for n, case in enumerate(cases, 1):
                rows.append(await replay_case(case, system, policies))
                print(
                    f"\r{category} system={bool(system)} {n}/{len(cases)}", end="", file=sys.stderr
                )
            print(file=sys.stderr)
            key = f"{category}/{'system' if system else 'none'}"
            report["rows"][key] = {"all": summarize(rows), "cases": rows}
            for split, part in (("dev", rows[0::2]), ("test", rows[1::2]), ("all", rows)):
                s = summarize(part)
                harms = " | ".join(str(s["harms"][h]) for h in HARMS)
                lines.append(
                    f"| {category} | {'yes' if system else 'no'} | {split} | {s['cases']} | "
                    f"{s['calls']} | {s['unchanged']} ({s['unchanged_pct']}%) | {harms} | "
                    f"{s['checker_valid']}/{s['cases']} |"
                )
    report["seconds"] = round(time.perf_counter() - start, 1)
    lines += ["", f"Took {report['seconds']} s."]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
