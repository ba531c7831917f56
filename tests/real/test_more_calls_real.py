"""The embedded model makes one call where a request names several items; `MoreCalls`
makes it go on, and keeps only calls for items the user named."""

from __future__ import annotations

import pytest

from bigloop import LocalModel, Loop, tool

pytestmark = pytest.mark.real


@tool
def population(city: str) -> str:
    """The population of a city.

    Args:
        city: the city's name, e.g. "Lima".
    """
    return {"oslo": "709,000", "cairo": "10,100,000", "tokyo": "14,000,000"}.get(
        city.strip().lower(), "unknown"
    )


def calls(model: LocalModel, task: str, *, off: bool = False) -> list[str]:
    from bigloop.planners.react import ReactPlanner
    from bigloop.policies.more_calls import MoreCalls

    planner = ReactPlanner(stop_after_calls=True, more_calls=None if off else MoreCalls())
    result = Loop(model, [population], planner=planner).run_sync(task)
    return sorted(s.input["city"] for s in result.tool_steps)


def test_one_call_per_named_city(embedded: LocalModel) -> None:
    task = "What are the populations of Oslo, Cairo and Tokyo?"
    assert calls(embedded, task) == ["Cairo", "Oslo", "Tokyo"]


def test_a_single_item_request_stays_one_call(embedded: LocalModel) -> None:
    assert calls(embedded, "What is the population of Cairo?") == ["Cairo"]


def test_turns_after_a_continued_reply_stay_sound(embedded: LocalModel) -> None:
    """A continued reply must leave the model's cache fit for the next turn (it answered
    '><the answer>' when the cache was reused)."""
    from bigloop.atoms.builtin import default_tools

    result = Loop(embedded, default_tools()).run_sync("What is (45 + 12) / 3?")
    assert "19" in (result.answer or ""), result.answer
