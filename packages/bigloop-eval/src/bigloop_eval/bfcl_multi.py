"""BFCL's multi-turn categories, run as real loops against BFCL's shipped simulations.

Each case is a conversation of several user turns over stateful Python simulations (a
file system, a trading bot, a travel API…). Every call the model makes is executed in the
simulation and its result fed back; BFCL's multi-turn checker then replays the calls and
compares the simulations' state and outputs with the ground truth's, turn by turn.

- raw: a minimal loop a user would write: the model's own chat template with `tools=`,
  output parsed leniently, calls executed, results fed back.
- loop: bigloop's `Loop` per turn: grammar, call preparation, validation, repair, the
  repeat guard; the conversation carries over from turn to turn.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.models.base import ChatModel, Message, ToolSpec, Usage
from bigloop.atoms.models.local import LocalModel
from bigloop.atoms.models.parse import parse_reply
from bigloop.atoms.tool import Tool
from bigloop.config import LoopConfig
from bigloop.loop import Loop
from bigloop.policies.clarify import Clarify
from bigloop.runtime.context import Budget
from bigloop_eval.bfcl_data import MULTI_TURN, data_dir, read_jsonl, to_json_schema
from bigloop_eval.bfcl_results import SETTINGS, CaseResult, Mode
from bigloop_eval.bfcl_score import checker

STEPS_PER_TURN = 6
TOP_K = 10  # loop mode offers the 10 functions most relevant to each turn's request
MORE_FUNCTIONS = "I have updated some more functions you can choose from. What about now?"


@dataclass(kw_only=True)
class MultiCase:
    id: str
    category: str
    turns: list[list[dict[str, str]]]
    entry: dict[str, Any]
    answer: list[list[str]]

    def functions(self, turn: int) -> list[dict[str, Any]]:
        """Function docs offered at `turn`: excluded ones never, missed ones from their turn."""
        from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

        withheld = set(self.entry.get("excluded_function", []))
        for at, names in self.entry.get("missed_function", {}).items():
            if int(at) > turn:
                withheld.update(names)
        docs = []
        for cls in self.entry["involved_classes"]:
            path = data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls]
            docs += [d for d in read_jsonl(path, None) if d["name"] not in withheld]
        return docs


def load_multi_cases(category: str, limit: int | None = None) -> list[MultiCase]:
    if category not in MULTI_TURN:
        raise UserError(f"{category!r} is not a multi-turn category: {', '.join(MULTI_TURN)}.")
    entries = read_jsonl(data_dir() / f"BFCL_v4_{category}.json", limit)
    answers = {
        a["id"]: a["ground_truth"]
        for a in read_jsonl(data_dir() / "possible_answer" / f"BFCL_v4_{category}.json", None)
    }
    return [
        MultiCase(
            id=e["id"], category=category, turns=e["question"], entry=e, answer=answers[e["id"]]
        )
        for e in entries
    ]


def call_string(name: str, arguments: Any) -> str:
    """A call in the Python syntax BFCL's executor and checker read."""
    args = arguments if isinstance(arguments, dict) else {}
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


class Simulation:
    """BFCL's simulations for one case, with state kept between calls."""

    def __init__(self, case: MultiCase) -> None:
        self.case = case
        self.name = f"bigloop_{uuid.uuid4().hex[:8]}"

    def execute(self, calls: list[str]) -> list[str]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
            execute_multi_turn_func_call,
        )

        results, _ = execute_multi_turn_func_call(
            func_call_list=calls,
            initial_config=self.case.entry["initial_config"],
            involved_classes=self.case.entry["involved_classes"],
            model_name=self.name,
            test_entry_id=self.case.id,
            long_context="long_context" in self.case.category,
        )
        return [str(r) for r in results]

    def tools(self, docs: list[dict[str, Any]], *, stateful: bool = False) -> list[Tool]:
        """The docs as tools whose calls run in this simulation (`stateful`: marked not
        idempotent, so a task graph keeps their order)."""

        def runner(name: str) -> Any:
            def run(**arguments: Any) -> str:
                return self.execute([call_string(name, arguments)])[0]

            return run

        return [
            Tool.from_schema(
                d["name"],
                d.get("description", ""),
                to_json_schema(d["parameters"]),
                runner(d["name"]),
                inline=True,
                idempotent=not stateful,
                effect="write" if stateful else "read",  # a simulation: nothing to gate
            )
            for d in docs
        ]


def score_multi(case: MultiCase, decoded: list[list[list[str]]]) -> tuple[bool, str | None]:
    checker()  # installs the stand-in for BFCL's model config before the import below
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
        multi_turn_checker,
        multi_turn_irrelevance_checker,
    )

    if any(not turn for turn in case.answer):
        result = multi_turn_irrelevance_checker(decoded, case.answer)
        if not result["valid"]:
            return False, result.get("error_type")
    result = multi_turn_checker(
        decoded, case.answer, case.entry, case.category, f"bigloop_score_{uuid.uuid4().hex[:8]}"
    )
    return bool(result["valid"]), None if result["valid"] else result.get("error_type")


async def run_multi_case(
    case: MultiCase, model: ChatModel, mode: Mode, *, clarify: bool = False
) -> CaseResult:
    """Run every turn of `case`, then score it with BFCL's multi-turn checker.

    With `clarify`, the loop may stop a turn to ask the user (BFCL's miss_param turns
    leave out a value); such a turn makes no calls and is counted in `asked`.

    Raises:
        UserError: code mode, which is for the single-turn categories.
    """
    if mode == "code":
        raise UserError("--mode code is for the single-turn categories; use loop or graph here.")
    sim = Simulation(case)
    usage = Usage()
    start = time.perf_counter()
    decoded: list[list[list[str]]] = []
    raws: list[str] = []
    repairs = asked = 0
    error = None
    history: list[Message] = []
    try:
        for turn, messages in enumerate(case.turns):
            request = "\n".join(m["content"] for m in messages) or MORE_FUNCTIONS
            docs = case.functions(turn)
            if mode == "raw":
                steps, history = await _raw_turn(model, sim, docs, history, request, usage, raws)
            else:
                steps, history, fixes, question = await _loop_turn(
                    model, sim, docs, history, request, usage, mode, clarify
                )
                repairs += fixes
                asked += question
            decoded.append(steps)
    except ModelUnavailable as e:
        error = str(e)
        decoded += [[] for _ in range(len(case.turns) - len(decoded))]
    valid, error_type = await asyncio.to_thread(score_multi, case, decoded)
    return CaseResult.measured(
        case,
        mode,
        usage,
        start,
        valid=valid,
        error_type=error_type,
        error=error,
        calls=[[json.dumps(step)] for turn in decoded for step in turn],
        valid_calls=True,
        repairs=repairs,
        raw=raws,
        asked=asked,
    )


async def _loop_turn(
    model: ChatModel,
    sim: Simulation,
    docs: list[dict[str, Any]],
    history: list[Message],
    request: str,
    usage: Usage,
    mode: Mode = "loop",
    clarify: bool = False,
) -> tuple[list[list[str]], list[Message], int, bool]:
    loop = Loop(
        model,
        # The simulations keep state: their calls are side effects, kept in planned order.
        sim.tools(docs, stateful=mode == "graph"),
        config=LoopConfig(clarify="off"),  # asking only with --clarify
        budget=Budget(max_steps=STEPS_PER_TURN),
        settings=SETTINGS,
        top_k=TOP_K,
        planner="graph" if mode == "graph" else "react",
        clarify=Clarify() if clarify else None,
    )
    result = await loop.run(request, history=history)
    usage.add(result.usage)
    turn_of: dict[int, list[str]] = {}
    for step in result.steps:
        if step.kind == "tool" and step.error is None and step.message is not None:
            # Calls of one model turn form one BFCL step (a graph's plan: one step).
            owner = max(
                (s.index for s in result.steps if s.kind == "model" and s.index < step.index),
                default=-1,
            )
            turn_of.setdefault(owner, []).append(call_string(step.name, step.input))
    steps = [turn_of[k] for k in sorted(turn_of)]
    fixes = sum(1 for s in result.steps if s.error not in (None, "repeated", "unanswered"))
    return steps, result.messages, fixes, result.status == "input_required"


async def _raw_turn(
    model: ChatModel,
    sim: Simulation,
    docs: list[dict[str, Any]],
    history: list[Message],
    request: str,
    usage: Usage,
    raws: list[str],
) -> tuple[list[list[str]], list[Message]]:
    specs = [
        ToolSpec(
            name=d["name"],
            description=d.get("description", ""),
            parameters=to_json_schema(d["parameters"]),
        )
        for d in docs
    ]
    chat = [{"role": m.role, "content": m.content} for m in history]
    chat.append({"role": "user", "content": request})
    steps: list[list[str]] = []
    for _ in range(STEPS_PER_TURN):
        if isinstance(model, LocalModel):
            raw, used = await asyncio.to_thread(
                model.complete_chat, chat, settings=SETTINGS, tools=[s.to_openai() for s in specs]
            )
        else:
            response = await model.chat(
                [
                    Message(role=m["role"], content=m["content"])  # type: ignore[arg-type]
                    for m in chat
                ],
                specs,
                SETTINGS,
            )
            raw, used = response.raw, response.usage
        usage.add(used)
        raws.append(raw)
        calls = [call_string(n, a) for n, a in parse_reply(raw).calls]
        chat.append({"role": "assistant", "content": raw})
        if not calls:
            break
        steps.append(calls)
        results = await asyncio.to_thread(sim.execute, calls)
        chat.append(
            {
                "role": "user",
                "content": "\n".join(f"{c} -> {r}" for c, r in zip(calls, results, strict=True)),
            }
        )
    history = [Message(role=m["role"], content=m["content"]) for m in chat]  # type: ignore[arg-type]
    return steps, history
