"""Hand-off, scripted: the receiver continues the whole conversation under its own
instructions, the hand-off is a message step, ping-pong is bounded, and a resumed run
starts from the last hand-off."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import FunctionModel, Message, ToolSpec, TraceStore, UserError, tool
from bigloop.team import Agent, Handoff


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


@tool
def refund(order: str) -> str:
    """Refund an order.

    Args:
        order: the order number.
    """
    return f"Order {order} refunded."


def triage_model(seen: list[list[Message]]) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        assert [t.name for t in tools] == ["handoff_to_billing"]
        return call("handoff_to_billing", reason="a refund")

    return FunctionModel(reply, name="triage-model")


def billing_model(seen: list[list[Message]]) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        if messages[-1].role == "tool":
            return answer("Done: order 1234 is refunded.")
        return call("refund", order="1234")

    return FunctionModel(reply, name="billing-model")


def test_the_receiver_continues_the_whole_conversation() -> None:
    triage_seen: list[list[Message]] = []
    billing_seen: list[list[Message]] = []
    triage = Agent("triage", triage_model(triage_seen), instructions="You route requests.")
    billing = Agent(
        "billing",
        billing_model(billing_seen),
        [refund],
        instructions="You handle refunds.",
    )
    team = Handoff([triage, billing], routes={"triage": ["billing"]})
    result = team.run_sync("Please refund order 1234, I was charged twice.")
    assert result.status == "ok" and result.answer == "Done: order 1234 is refunded."
    assert result.planner == "handoff"

    [step] = result.steps
    assert (step.kind, step.name, step.input["text"], step.output) == (
        "message",
        "triage→billing",
        "a refund",
        None,
    )
    handed = [(m["role"], m["content"]) for m in step.input["messages"]]
    assert handed[0] == ("user", "Please refund order 1234, I was charged twice.")
    assert handed[-1] == ("tool", "Handing the conversation to billing.")

    first = billing_seen[0]
    assert (first[0].role, first[0].content) == ("system", "You handle refunds.")
    assert [(m.role, m.content) for m in first[1:2]] == [
        ("user", "Please refund order 1234, I was charged twice.")
    ]
    assert first[2].tool_calls[0].name == "handoff_to_billing"
    assert first[-1].content == (
        "triage handed this conversation to you (a refund). Continue with my request: "
        "Please refund order 1234, I was charged twice."
    )
    assert len(triage_seen) == 1  # triage's run ended at the hand-off
    roles = [m.role for m in result.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_hand_off_tools_are_offered_whatever_the_task_says() -> None:
    offered: list[list[str]] = []

    def route(messages: list[Message], tools: list[ToolSpec]) -> str:
        offered.append([t.name for t in tools])
        return call("handoff_to_billing", reason="small talk")

    team = Handoff(
        [
            Agent("triage", FunctionModel(route), [refund]),
            Agent("billing", FunctionModel(lambda m, t: answer("ok"))),
        ],
        routes={"triage": ["billing"]},
    )
    # No word of this task is in a tool's description: the relevance gate offers none of
    # the agent's own tools, but the hand-off tool stays.
    result = team.run_sync("Tell me something nice about autumn leaves.")
    assert offered == [["handoff_to_billing"]] and result.answer == "ok"


def test_agents_that_keep_handing_over_are_stopped() -> None:
    def bounce(to: str) -> FunctionModel:
        return FunctionModel(lambda m, t: call(f"handoff_to_{to}", reason="not mine"))

    team = Handoff([Agent("a", bounce("b")), Agent("b", bounce("a"))], max_handoffs=3)
    result = team.run_sync("Who handles this?")
    assert result.status == "budget_exceeded"
    assert [s.name for s in result.steps] == ["a→b", "b→a", "a→b"]


def test_a_resumed_hand_off_starts_from_the_last_hand_off(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    triage_seen: list[list[Message]] = []
    billing_seen: list[list[Message]] = []
    down = {"billing": True}
    billing_inner = billing_model(billing_seen)

    async def billing_reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if down["billing"]:
            raise RuntimeError("billing is down")
        response = await billing_inner.chat(messages, tools)
        return response.raw or answer(response.text)

    team = Handoff(
        [
            Agent("triage", triage_model(triage_seen)),
            Agent("billing", FunctionModel(billing_reply), [refund]),
        ],
        routes={"triage": ["billing"]},
        store=store,
    )
    failed = team.run_sync("Please refund order 1234.")
    assert failed.status == "failed" and "billing is down" in (failed.error or "")
    down["billing"] = False
    resumed = asyncio.run(team.resume(failed.run_id))
    assert resumed.status == "ok" and resumed.answer == "Done: order 1234 is refunded."
    assert len(triage_seen) == 1  # triage was not asked again
    assert billing_seen[0][0].content == "Please refund order 1234."
    assert [s.name for s in store.result(failed.run_id).steps] == ["triage→billing"]


def test_routes_must_name_agents_of_the_team() -> None:
    model = FunctionModel(lambda m, t: answer("x"))
    with pytest.raises(UserError, match="not in the team"):
        Handoff([Agent("a", model)], routes={"a": ["zed"]})
    with pytest.raises(UserError, match="distinct names"):
        Handoff([Agent("a", model), Agent("a", model)])
