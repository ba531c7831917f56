"""The top-first grammar check picks exactly what the whole-vocabulary check picks."""

from __future__ import annotations

import pytest

from bigloop import LocalModel
from bigloop.atoms.builtin import default_tools
from bigloop.atoms.models import local
from bigloop.atoms.models.base import Message, ModelSettings, ToolSpec
from bigloop.atoms.models.prompts import to_plain_chat

pytestmark = pytest.mark.real

TASKS = [
    "What is 17.5% of 2,480?",
    "How many days are there between 2024-01-15 and 2024-03-01?",
    "Add 45 days to 2024-02-10 and tell me the weekday.",
    "Hello! Who are you?",
]


def test_fast_and_full_grammar_checks_write_the_same_replies(
    embedded: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = [
        ToolSpec(name=t.name, description=t.description, parameters=t.schema)
        for t in default_tools()
    ]
    grammar = embedded.grammar_for(specs)
    settings = ModelSettings(max_tokens=128)
    for task in TASKS:
        chat = to_plain_chat([Message(role="user", content=task)], specs)
        replies = []
        for fast in (False, True):
            monkeypatch.setattr(local, "FAST_GRAMMAR", fast)
            text, _ = embedded.complete_chat(chat, settings=settings, grammar=grammar)
            replies.append(text)
        assert replies[0] == replies[1], task


def test_a_greedy_grammar_reply_reports_its_confidence(embedded: LocalModel) -> None:
    """The lowest probability of a decision's token among the allowed ones, in (0, 1]; an
    answer with no tool to choose from decides nothing (its wording is not a decision);
    a sampled reply (llama-cpp-python's own grammar sampler) reports none."""
    import asyncio

    specs = [
        ToolSpec(name=t.name, description=t.description, parameters=t.schema)
        for t in default_tools()
    ]
    asked = [Message(role="user", content=TASKS[0])]
    greedy = asyncio.run(embedded.chat(asked, specs, ModelSettings(max_tokens=128)))
    assert greedy.confidence is not None and 0 < greedy.confidence <= 1
    answered = asyncio.run(embedded.chat(asked, [], ModelSettings(max_tokens=64)))
    assert answered.text and answered.confidence == 1.0
    sampled = asyncio.run(
        embedded.chat(asked, specs, ModelSettings(max_tokens=128, temperature=0.7, seed=1))
    )
    assert sampled.confidence is None
