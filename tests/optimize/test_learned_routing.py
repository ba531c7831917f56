"""Routing that learns: a `RoutedModel` with a bandit learns from each finished run which
model to try first per kind of task, without a manual step, and starts from the traces."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bigloop import FunctionModel, Loop, Message, ToolSpec, TraceStore, tool
from bigloop.atoms.card import AtomCard
from bigloop.optimize.bandit import BanditPolicy
from bigloop.routing.cascade import RoutedModel


@tool
def double(x: int) -> int:
    """Twice x.

    Args:
        x: a whole number.
    """
    return 2 * x


def model(name: str, good: bool) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if not good:  # every call of the bad model is refused
            return json.dumps({"name": "double", "arguments": {"x": "twenty-one"}})
        if messages[-1].role == "tool" or messages[-1].name == "bigloop":
            return json.dumps({"answer": "42"})
        return json.dumps({"name": "double", "arguments": {"x": 21}})

    card = AtomCard(name=name, kind="model", description=name, cost=0.1 if not good else 1.0)
    return FunctionModel(reply, name=name, card=card)


def kind_of(task: str) -> str:
    return "math" if "double" in task else "other"


def test_the_router_learns_from_finished_runs_which_model_to_try_first(tmp_path: Path) -> None:
    cheap, strong = model("cheap", good=False), model("strong", good=True)
    learner = BanditPolicy(seed=3)
    routed = RoutedModel([cheap, strong], learner=learner, kind_of=kind_of)
    store = TraceStore(tmp_path / "t.db")
    loop = Loop(routed, [double], store=store)
    firsts = []
    for _ in range(30):
        result = asyncio.run(loop.run("double 21 please"))
        first = next(s for s in result.steps if s.kind == "model")
        firsts.append(first.input["route"]["learned"]["first"])
    assert learner.mean("math", "strong") > 0.8 > 0.3 > learner.mean("math", "cheap")
    assert firsts[-10:].count("strong") >= 8
    # A new process starts from the traces: the same preference, without a manual step.
    again = BanditPolicy.from_store(store, kind_of)
    assert again.mean("math", "strong") > again.mean("math", "cheap")
