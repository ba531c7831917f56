"""The planners on the embedded model (plumbing is tested with scripted models; accuracy
and speed are measured in bench/parallel.py)."""

from __future__ import annotations

import asyncio

import pytest

from bigloop import Clarify, LocalModel, Loop, SearchPlanner, tool
from bigloop.atoms.builtin import default_tools

pytestmark = pytest.mark.real


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Current weather in a city: the temperature in degrees Celsius (to compare how warm
    or cold cities are).

    Args:
        city: the city's name, e.g. "Rome".
    """
    await asyncio.sleep(0.5)
    return {"city": city, "temperature_c": {"Tokyo": 22, "Oslo": 6, "Cairo": 31}[city]}


def test_graph_plans_every_listed_city_and_runs_them_together(embedded: LocalModel) -> None:
    result = Loop(embedded, [get_weather], planner="graph").run_sync(
        "What is the temperature right now in Tokyo, Oslo and Cairo?"
    )
    assert result.status == "ok", result.error
    cities = sorted(s.input["city"] for s in result.tool_steps)
    assert cities == ["Cairo", "Oslo", "Tokyo"]
    plan = next(s for s in result.steps if s.kind == "model")
    plan_end = plan.started_at + plan.seconds
    first_call = min(s.started_at for s in result.tool_steps)
    assert first_call < plan_end  # streamed: a call started before the plan was finished


def test_search_planner_answers_on_the_embedded_model(embedded: LocalModel) -> None:
    result = Loop(embedded, default_tools(), planner=SearchPlanner(width=2, max_nodes=3)).run_sync(
        "What is (45 + 12) / 3?"
    )
    assert result.status == "ok", result.error
    assert "19" in (result.answer or "")


def test_auto_picks_graph_for_lists_and_react_otherwise(embedded: LocalModel) -> None:
    listed = Loop(embedded, [get_weather], planner="auto").run_sync(
        "Temperature in Tokyo and Oslo?"
    )
    assert listed.planner == "graph"
    single = Loop(embedded, default_tools(), planner="auto").run_sync("What is 6 * 7?")
    assert single.planner == "react" and "42" in (single.answer or "")


def test_clarify_does_not_ask_when_the_task_states_everything(embedded: LocalModel) -> None:
    result = Loop(embedded, default_tools(), clarify=Clarify()).run_sync(
        "How many days are there between 2024-01-15 and 2024-03-01?"
    )
    assert result.status == "ok" and "46" in (result.answer or "")
    assert not [s for s in result.steps if s.kind == "ask"]
