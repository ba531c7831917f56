"""Agents as atoms: a card with skills, a tool another loop can call, a conversation kept
across runs, and long-term notes persisted and recalled across instances."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import (
    FunctionModel,
    Loop,
    Message,
    ScriptedModel,
    ToolSpec,
    TraceStore,
    UserError,
    tool,
)
from bigloop.registry import Registry
from bigloop.team import Agent, Memory


@tool
def to_km(miles: float) -> float:
    """Convert miles to kilometres."""
    return round(miles * 1.609344, 2)


@tool(effect="write")
def save_note(text: str) -> str:
    """Save a note."""
    return "saved"


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def test_an_agent_has_its_own_card_with_skills_from_its_tools() -> None:
    agent = Agent(
        "converter",
        ScriptedModel([]),
        [to_km, save_note],
        instructions="Converts distances.\nAlways answer in km.",
    )
    card = agent.card
    assert card.kind == "agent" and card.name == "converter"
    assert card.description == (
        "Converts distances. Skills: to_km (Convert miles to kilometres); save_note (Save a note)."
    )
    assert card.input_schema["required"] == ["task"]
    assert agent.skills == ["to_km: Convert miles to kilometres.", "save_note: Save a note."]
    registry = Registry()
    registry.add_cards(
        [agent.card, Agent("poet", ScriptedModel([]), description="Writes poems.").card]
    )
    registry.build(dense=False)
    assert registry.search("kilometres for 3 miles", k=1, mode="bm25")[0].card.name == "converter"


def test_an_agent_is_a_tool_a_loop_can_call() -> None:
    agent = Agent("converter", ScriptedModel([call("to_km", miles=3), answer("4.83 km")]), [to_km])
    outer = ScriptedModel([call("converter", task="3 miles in km"), answer("It is 4.83 km.")])
    result = Loop(outer, [agent.as_tool()]).run_sync("Ask the converter: 3 miles in km?")
    assert result.status == "ok" and result.answer == "It is 4.83 km."
    assert [(s.name, s.output) for s in result.tool_steps] == [("converter", "4.83 km")]
    assert [m.role for m in agent.conversation] == ["user", "assistant", "tool", "assistant"]
    assert agent.as_tool().idempotent
    assert Agent("writer", ScriptedModel([]), [save_note]).as_tool().effect == "write"


def test_the_conversation_is_kept_across_runs() -> None:
    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        return answer("Ada" if "name" in messages[-1].content else "Hello Ada.")

    agent = Agent("host", FunctionModel(reply), instructions="You are a friendly host.")
    agent.run_sync("Hi, I am Ada.")
    result = agent.run_sync("What is my name?")
    assert result.answer == "Ada"
    assert [(m.role, m.content) for m in seen[1]] == [
        ("system", "You are a friendly host."),
        ("user", "Hi, I am Ada."),
        ("assistant", "Hello Ada."),
        ("user", "What is my name?"),
    ]
    assert len(agent.conversation) == 4


def test_a_run_with_its_own_history_leaves_the_conversation_alone() -> None:
    agent = Agent("host", ScriptedModel([answer("one"), answer("two")]))
    agent.run_sync("first")
    result = asyncio.run(agent.run("second", history=[]))
    assert result.answer == "two"
    assert [m.content for m in agent.conversation] == ["first", "one"]


def test_the_conversation_keeps_the_last_exchanges_only() -> None:
    agent = Agent("host", ScriptedModel([answer(str(i)) for i in range(5)]), max_history=4)
    for i in range(5):
        agent.run_sync(f"turn {i}")
    assert [m.content for m in agent.conversation] == ["turn 3", "3", "turn 4", "4"]


def test_memory_is_persisted_and_recalled_across_agent_instances(tmp_path: Path) -> None:
    folder = tmp_path / "alice"
    first = Agent("alice", ScriptedModel([]), memory=Memory(folder, mode="bm25"))
    first.remember("The user's name is Ada and she prefers kilometres.")
    first.remember("The office is in Oslo.")
    first.remember("The office is in Oslo.")  # kept once

    seen: list[Message] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.extend(messages)
        return answer("kilometres")

    again = Agent(
        "alice",
        FunctionModel(reply),
        instructions="You help Ada.",
        memory=Memory(folder, mode="bm25"),
        recall=1,
    )
    assert len(again.memory or []) == 2
    assert again.recall("which units does the user prefer?", k=1) == [
        "The user's name is Ada and she prefers kilometres."
    ]
    again.run_sync("Which units do I prefer?")
    assert seen[0].role == "system"
    assert seen[0].content == (
        "You help Ada.\n\nNotes from earlier conversations that may help:\n"
        "- The user's name is Ada and she prefers kilometres."
    )


def test_memory_recall_uses_the_hybrid_search(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m")
    memory.remember("The user's cat is called Miso.")
    memory.remember("Invoices go to accounts@example.com.")
    reopened = Memory(tmp_path / "m")
    # No word in common with the note: the dense half of the search finds it.
    assert reopened.recall("what pet does she have", k=1) == ["The user's cat is called Miso."]
    reopened.remember("The user lives in Bergen.")
    assert len(Memory(tmp_path / "m")) == 3
    assert sorted(p.name for p in (tmp_path / "m").glob("index-*")) == ["index-3"]


def test_memory_tools_let_the_model_keep_notes(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m", mode="bm25")
    remember, recall = memory.tools()
    agent = Agent(
        "scribe",
        ScriptedModel([call("remember", note="Ada likes tea."), answer("Noted.")]),
        [remember, recall],
    )
    agent.run_sync("Remember that Ada likes tea.")
    assert memory.notes == ["Ada likes tea."]
    assert asyncio.run(recall.call({"query": "tea"})) == "- Ada likes tea."


def test_an_agent_run_is_traced_in_its_store(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    agent = Agent("host", ScriptedModel([answer("hi")]), store=store)
    result = agent.run_sync("hello")
    assert store.run(result.run_id).answer == "hi"


def test_misuse_fails_fast_with_the_fix() -> None:
    with pytest.raises(UserError, match="short identifier"):
        Agent("my agent", ScriptedModel([]))
    with pytest.raises(UserError, match="memory=Memory"):
        Agent("a", ScriptedModel([])).remember("x")
