"""Teams on the embedded model: each pattern runs to an answer with its messages traced
(plumbing is tested with scripted models; whether teams pay is measured in
bench/teams.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bigloop import LocalModel, TraceStore
from bigloop.atoms.builtin.calculator import calculator
from bigloop.atoms.builtin.units import convert_units
from bigloop.policies.adapt import Adapter
from bigloop.team import Agent, Debate, Handoff, Memory, Orchestrator

pytestmark = pytest.mark.real


def workers(model: LocalModel) -> list[Agent]:
    """A units agent and a maths agent, each described by its card."""
    units = Agent("units", model, [convert_units], description="Converts quantities between units.")
    return [units, Agent("maths", model, [calculator], description="Computes arithmetic.")]


@pytest.mark.xfail(
    strict=False,
    reason="not yet passed on the embedded 0.5B model (first run 2026-11-30: the merged answer lost the workers' numbers); kept running so a fix or a stronger model shows up as XPASS",  # noqa: E501
)
def test_orchestrator_delegates_to_workers_by_their_cards(
    embedded: LocalModel, tmp_path: Path
) -> None:
    store = TraceStore(tmp_path / "t.db")
    team = Orchestrator(embedded, workers(embedded), store=store)
    result = asyncio.run(team.run("Convert 5 miles to km, and compute 17 * 23."))
    assert result.status == "ok", result.error
    messages = [s for s in result.steps if s.kind == "message"]
    assert messages and all(s.name.startswith("coordinator→") for s in messages)
    assert [s.kind for s in store.result(result.run_id).steps] == [s.kind for s in result.steps]
    assert "391" in (result.answer or "") or "8.0" in (result.answer or "")


@pytest.mark.xfail(
    strict=False,
    reason="not yet passed on the embedded 0.5B model (first run 2026-12-01: the coordinator called the units agent for 17 * 23); kept running so a fix or a stronger model shows up as XPASS",  # noqa: E501
)
def test_orchestrator_delegating_by_tool_calls_reaches_the_workers(
    embedded: LocalModel, tmp_path: Path
) -> None:
    store = TraceStore(tmp_path / "t.db")
    team = Orchestrator(embedded, workers(embedded), store=store, choose="call")
    result = asyncio.run(team.run("Compute 17 * 23."))
    assert result.status == "ok", result.error
    messages = [s for s in result.steps if s.kind == "message"]
    assert [s.name for s in messages][:1] == ["coordinator→maths"]
    assert "391" in (result.answer or "")


def test_a_debate_of_three_answers_with_every_answer_traced(embedded: LocalModel) -> None:
    agents = [Agent(name, embedded, [calculator]) for name in ("a", "b", "c")]
    team = Debate(agents, judge=Agent("judge", embedded), rounds=2)
    result = asyncio.run(team.run("What is 17 * 23?"))
    assert result.status == "ok", result.error
    assert [s.name for s in result.steps[:3]] == ["debate→a", "debate→b", "debate→c"]
    assert "391" in (result.answer or "")


@pytest.mark.xfail(
    strict=False,
    reason="not yet passed on the embedded 0.5B model (first run 2026-11-30: the agents handed over 4 times without an answer); kept running so a fix or a stronger model shows up as XPASS",  # noqa: E501
)
def test_triage_hands_a_conversion_to_the_units_agent(embedded: LocalModel) -> None:
    triage = Agent(
        "triage",
        embedded,
        instructions="You route requests. Hand unit conversions to the units agent.",
    )
    units = Agent(
        "units",
        embedded,
        [convert_units],
        description="Converts quantities between units.",
        instructions="You convert units with the convert_units tool.",
    )
    result = asyncio.run(Handoff([triage, units]).run("How many km are 26.2 miles?"))
    assert result.status == "ok", result.error
    assert [s.name for s in result.steps] == ["triage→units"]
    assert "42.1" in (result.answer or "")


def test_the_adapter_extracts_arguments_under_the_grammar(embedded: LocalModel) -> None:
    arguments = asyncio.run(
        Adapter(embedded).fit(
            "The marathon is 26.2 miles; I want it in kilometres.",
            convert_units.schema,
            target="convert_units",
        )
    )
    assert arguments["value"] == 26.2
    assert arguments["from_unit"].startswith("mi") and arguments["to_unit"].startswith("k")


def test_an_agent_recalls_a_note_from_an_earlier_instance(
    embedded: LocalModel, tmp_path: Path
) -> None:
    Memory(tmp_path / "m").remember("The user's favourite city is Lisbon.")
    agent = Agent("host", embedded, memory=Memory(tmp_path / "m"), recall=1)
    result = asyncio.run(agent.run("Which city do I like best?"))
    assert result.status == "ok", result.error
    assert "Lisbon" in (result.answer or "")
