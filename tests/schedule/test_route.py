from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import (
    AtomCard,
    FunctionModel,
    Loop,
    Message,
    ModelUnavailable,
    ScriptedModel,
    ToolSpec,
    TraceStore,
    UserError,
    tool,
)
from bigloop.schedule.route import (
    BanditPolicy,
    CascadeModel,
    Constraints,
    FallbackModel,
    HedgedModel,
    RoutedModel,
    Weights,
    learn_cards,
    pareto_front,
    route,
)

LOCAL = AtomCard(name="local", kind="model", privacy="local", cost=0.0, latency_s=3.0,
                 reliability=0.7)  # fmt: skip
CLOUD = AtomCard(name="cloud", kind="model", privacy="api.example.com", cost=0.01,
                 latency_s=0.8, reliability=0.95)  # fmt: skip
SLOW = AtomCard(name="slow", kind="model", privacy="local", cost=0.0, latency_s=9.0,
                reliability=0.6)  # fmt: skip


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def test_private_data_never_goes_to_a_remote_atom() -> None:
    decision = route([CLOUD, LOCAL], Constraints(private=True))
    assert decision.order == ["local"]
    assert decision.rejected == {"cloud": "private data may not go to api.example.com"}


def test_weights_order_the_feasible_and_budgets_filter() -> None:
    assert route([LOCAL, CLOUD], weights=Weights(cost=10, latency=0, reliability=0)).order[0] == (
        "local"
    )
    assert route([LOCAL, CLOUD], weights=Weights(cost=0, latency=1, reliability=1)).order[0] == (
        "cloud"
    )
    assert route([LOCAL, CLOUD], Constraints(max_latency_s=1.0)).order == ["cloud"]
    with pytest.raises(UserError, match="No atom meets the routing constraints"):
        route([CLOUD], Constraints(private=True))


def test_pareto_front_drops_dominated_atoms() -> None:
    assert pareto_front([LOCAL, CLOUD, SLOW]) == ["local", "cloud"]


def test_fallback_moves_on_when_a_model_fails() -> None:
    broken = ScriptedModel([], name="broken")
    chain = FallbackModel([broken, ScriptedModel([answer("hi")], name="ok")])
    result = Loop(chain, []).run_sync("Say hi.")
    assert result.answer == "hi"
    assert result.steps[0].input["answered_by"] == "ok"


def test_hedged_call_takes_the_faster_valid_reply() -> None:
    async def slow(messages: list[Message], tools: list[ToolSpec]) -> str:
        await asyncio.sleep(1.0)
        return answer("slow")

    hedged = HedgedModel(
        FunctionModel(slow, name="primary"),
        ScriptedModel([answer("fast")], name="backup"),
        hedge_after_s=0.05,
    )
    result = Loop(hedged, []).run_sync("Quick?")
    assert result.answer == "fast" and hedged.last == "backup"


def test_cascade_escalates_only_invalid_replies() -> None:
    @tool
    def area(width: float, height: float) -> float:
        """Area of a rectangle."""
        return width * height

    cheap = ScriptedModel(
        [
            json.dumps({"tool_calls": [{"name": "area", "arguments": {"width": 2}}]}),
            answer("6"),
        ],
        name="cheap",
    )
    strong = ScriptedModel(
        [json.dumps({"tool_calls": [{"name": "area", "arguments": {"width": 2, "height": 3}}]})],
        name="strong",
    )
    cascade = CascadeModel(cheap, strong)
    result = Loop(cascade, [area]).run_sync("Area of 2 by 3?")
    assert result.answer == "6"
    assert (cascade.calls, cascade.escalated) == (2, 1)
    assert [s.input.get("answered_by") for s in result.steps if s.kind == "model"] == [
        "strong",
        "cheap",
    ]


def test_routed_model_writes_its_decision_into_the_trace(tmp_path: Path) -> None:
    local = ScriptedModel([answer("done locally")], name="local")
    cloud = ScriptedModel([answer("done remotely")], name="cloud")
    routed = RoutedModel(
        [local, cloud], constraints=Constraints(private=True), cards=[LOCAL, CLOUD]
    )
    store = TraceStore(tmp_path / "t.db")
    result = Loop(routed, [], store=store).run_sync("Summarise my medical record.")
    assert result.answer == "done locally"
    step = store.steps(result.run_id)[0]
    assert step.input["route"]["order"] == ["local"]
    assert step.input["route"]["rejected"]["cloud"].startswith("private data")
    assert step.input["route"]["pareto"] == ["local"]  # the front among feasible atoms


def test_bandit_learns_the_better_atom_per_kind() -> None:
    policy = BanditPolicy(seed=1)
    for _ in range(30):
        policy.update("math", "cheap", False)
        policy.update("math", "strong", True)
        policy.update("chat", "cheap", True)
    picks = [policy.choose("math", ["cheap", "strong"]) for _ in range(50)]
    assert picks.count("strong") >= 45
    assert policy.mean("chat", "cheap") > 0.9


def test_cards_learn_reliability_and_latency_from_traces(tmp_path: Path) -> None:
    @tool
    def flaky(n: int) -> int:
        """Fails on odd numbers."""
        if n % 2:
            raise ValueError("odd")
        return n

    store = TraceStore(tmp_path / "t.db")
    for n in range(4):
        model = ScriptedModel(
            [json.dumps({"tool_calls": [{"name": "flaky", "arguments": {"n": n}}]}), answer("x")]
        )
        Loop(model, [flaky], store=store).run_sync(f"flaky {n}")
    (card,) = learn_cards([flaky.card], store)
    assert card.reliability == 0.5
    assert card.latency_s is not None and card.latency_s < 0.1


def test_fallback_chain_reports_every_failure() -> None:
    chain = FallbackModel([ScriptedModel([], name="a"), ScriptedModel([], name="b")])
    with pytest.raises(ModelUnavailable, match=r"a: .*; b: "):
        asyncio.run(chain.chat([Message(role="user", content="x")], []))
