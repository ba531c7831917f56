from __future__ import annotations

from pathlib import Path

import pytest

from bigloop import AtomCard, UserError
from bigloop.atoms.builtin import default_tools
from bigloop.registry import Registry, card_text


def many_cards(n: int) -> list[AtomCard]:
    topics = ["weather", "stock", "flight", "hotel", "recipe", "movie", "invoice", "email"]
    return [
        AtomCard(
            name=f"{topics[i % len(topics)]}_tool_{i}",
            kind="tool",
            description=f"Look up {topics[i % len(topics)]} record number {i}.",
            input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
        )
        for i in range(n)
    ]


def test_card_text_reads_names_as_words() -> None:
    card = AtomCard(
        name="getWeather_now",
        kind="tool",
        description="Current weather.",
        input_schema={"properties": {"city_name": {"description": "a city"}}},
    )
    assert card_text(card) == "get Weather now. Current weather. city name a city"


def test_bm25_search_finds_the_tool() -> None:
    registry = Registry()
    registry.add_tools(default_tools())
    registry.build(dense=False)
    hits = registry.search("how many days are between two dates", k=2, mode="bm25")
    assert {h.card.name for h in hits} <= {"days_between", "add_days"}
    assert registry.tools_for(["days_between", "nope"])[0].name == "days_between"


def test_saved_registry_of_10k_tools_loads_and_searches(tmp_path: Path) -> None:
    """(Its load time is measured in bench/retrieval.py.)"""
    registry = Registry()
    registry.add_cards(many_cards(10_000))
    registry.build(dense=False)
    registry.save(tmp_path / "reg")
    loaded = Registry.load(tmp_path / "reg")
    assert len(loaded) == 10_000
    hits = loaded.search("invoice record number 4566", k=1, mode="bm25")
    assert hits[0].card.name == "invoice_tool_4566"


def test_loading_a_folder_that_is_no_registry_says_so(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is not a registry folder"):
        Registry.load(tmp_path)


def test_dense_search_without_a_dense_index_says_how_to_fix() -> None:
    registry = Registry()
    registry.add_cards(many_cards(3))
    registry.build(dense=False)
    with pytest.raises(UserError, match="no dense index"):
        registry.search("weather", mode="dense")


@pytest.mark.real
def test_hybrid_search_with_the_embedded_minilm_finds_synonyms(tmp_path: Path) -> None:
    registry = Registry()
    registry.add_tools(default_tools())
    registry.build()
    # No word in common with the tool's docs: only the dense half finds it.
    query = "what does my luggage weigh in metric"
    assert "convert_units" not in [h.card.name for h in registry.search(query, mode="bm25")]
    assert registry.search(query, k=1, mode="dense")[0].card.name == "convert_units"
    assert registry.search(query, k=1)[0].card.name == "convert_units"
    hybrid = registry.search("what's 17 percent of 230", k=2)
    assert hybrid[0].card.name == "calculator"
    registry.save(tmp_path / "reg")
    loaded = Registry.load(tmp_path / "reg")
    assert [h.card.name for h in loaded.search("what's 17 percent of 230", k=2)] == [
        h.card.name for h in hybrid
    ]


def test_loop_offers_the_registrys_top_tools_and_find_tools_adds_more() -> None:
    import json

    from bigloop import FunctionModel, Loop, Message, ToolSpec
    from bigloop.atoms.builtin import calculator

    registry = Registry()
    registry.add_tools(default_tools())
    registry.build(dense=False)
    offered: list[list[str]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        offered.append([t.name for t in tools])
        if len(offered) == 1:
            call = {"name": "find_tools", "arguments": {"query": "arithmetic expression"}}
            return json.dumps({"tool_calls": [call]})
        if len(offered) == 2:
            call = {"name": "calculator", "arguments": {"expression": "2+2"}}
            return json.dumps({"tool_calls": [call]})
        return json.dumps({"answer": "4"})

    loop = Loop(FunctionModel(reply), registry=registry, top_k=2)
    result = loop.run_sync("How many days are between 2024-01-01 and 2024-02-01?")
    assert offered[0][-1] == "find_tools" and len(offered[0]) == 3
    assert "days_between" in offered[0]
    assert "calculator" in offered[1] and "calculator" not in offered[0]
    assert result.answer == "4"
    assert calculator.name in loop.tools
