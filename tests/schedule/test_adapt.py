"""Semantic adapters: a value that fits goes through; one that does not is extracted by a
model under the target's schema, validated, and traced as an "adapt" step."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bigloop import (
    FunctionModel,
    InvalidArguments,
    Message,
    ModelSettings,
    Step,
    ToolSpec,
    Workflow,
    tool,
)
from bigloop.policies.adapt import Adapter, adapted, fits
from bigloop.workflow import Do


@tool
def to_km(distance: float, unit: str) -> str:
    """Convert a distance to kilometres.

    Args:
        distance: how far.
        unit: "miles" or "feet".
    """
    factor = {"miles": 1.609344, "feet": 0.0003048}[unit]
    return f"{distance * factor:.2f} km"


@tool
def describe_trip(city: str) -> str:
    """Describe a trip to a city."""
    return f"The ride from the airport to {city} is 12 miles long."


def no_model(messages: list[Message], tools: list[ToolSpec]) -> str:
    raise AssertionError("the adapter called the model for a value that fits")


def extractor(replies: list[str], seen: list[ModelSettings]) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(settings)
        return replies[len(seen) - 1]

    return FunctionModel(reply, name="extractor")


def test_a_value_that_fits_needs_no_model_call() -> None:
    adapter = Adapter(FunctionModel(no_model))
    steps: list[Step] = []

    async def fit(value: Any) -> dict[str, Any]:
        return await adapter.fit(value, to_km.schema, target="to_km", on_step=steps.append)

    assert asyncio.run(fit({"distance": 3, "unit": "miles"})) == {"distance": 3.0, "unit": "miles"}
    assert asyncio.run(fit('{"distance": "3", "unit": "miles"}')) == {
        "distance": 3.0,
        "unit": "miles",
    }
    assert steps == []


def test_text_for_a_single_string_parameter_is_that_parameter() -> None:
    schema = {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}
    assert fits("convert 3 miles", schema) == {"task": "convert 3 miles"}
    assert fits("convert 3 miles", to_km.schema) is None


def test_text_that_does_not_fit_is_extracted_once_under_the_schema() -> None:
    seen: list[ModelSettings] = []
    model = extractor(['{"distance": 12, "unit": "miles"}'], seen)
    steps: list[Step] = []
    text = "The ride from the airport is 12 miles long."
    arguments = asyncio.run(
        Adapter(model).fit(
            text, to_km.schema, target="to_km", source="guide", run_id="r1", on_step=steps.append
        )
    )
    assert arguments == {"distance": 12.0, "unit": "miles"}
    assert len(seen) == 1
    schema = seen[0].response_schema
    assert schema is not None and schema["required"] == ["distance", "unit"]
    assert [(s.kind, s.name, s.input, s.output, s.error) for s in steps] == [
        ("adapt", "guide→to_km", {"text": text}, {"distance": 12.0, "unit": "miles"}, None)
    ]
    assert steps[0].run_id == "r1"


def test_an_extraction_that_does_not_validate_is_a_clear_error() -> None:
    seen: list[ModelSettings] = []
    model = extractor(['{"distance": "far", "unit": "miles"}'], seen)
    steps: list[Step] = []
    with pytest.raises(InvalidArguments, match=r"input for 'to_km'.*distance") as caught:
        asyncio.run(
            Adapter(model).fit("it is far", to_km.schema, target="to_km", on_step=steps.append)
        )
    assert "it is far" in str(caught.value)
    assert len(seen) == 1
    assert [(s.kind, s.error) for s in steps] == [("adapt", "invalid_extraction")]


def test_an_extraction_that_is_not_json_is_a_clear_error() -> None:
    model = extractor(["twelve miles"], [])
    with pytest.raises(InvalidArguments, match="not JSON"):
        asyncio.run(Adapter(model).fit("12 miles", to_km.schema, target="to_km"))


def test_a_workflow_step_fed_free_text_gets_it_adapted() -> None:
    seen: list[ModelSettings] = []

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(settings)
        assert "12 miles" in messages[-1].content
        return json.dumps({"distance": 12, "unit": "miles"})

    steps: list[Step] = []
    convert = adapted(to_km, Adapter(FunctionModel(reply)), source="describe", on_step=steps.append)
    flow = Workflow(
        "trip_km",
        "How far the ride to a city is, in km.",
        inputs={"city": str},
        steps=[
            Do("describe", describe_trip, city="$city"),
            Do("km", convert, input="$describe"),
        ],
        output="km",
    )
    assert asyncio.run(flow.run(city="Oslo"))["km"] == "19.31 km"
    assert [(s.kind, s.name) for s in steps] == [("adapt", "describe→to_km")]
    assert len(seen) == 1


def test_an_adapted_tool_passes_arguments_that_fit_straight_through() -> None:
    convert = adapted(to_km, Adapter(FunctionModel(no_model)))
    assert asyncio.run(convert.call({"distance": 1, "unit": "miles"})) == "1.61 km"
    assert convert.name == "to_km" and convert.effect == to_km.effect
