"""Warm start on the embedded model: the fixed prompt prefix is evaluated once, saved,
and loaded instead of evaluated again; the reply does not change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bigloop import LocalModel, Message, ModelSettings, ToolSpec
from bigloop.atoms.builtin import default_tools

pytestmark = pytest.mark.real


def test_prefix_state_is_saved_then_loaded_with_the_same_reply(tmp_path: Path) -> None:
    model = LocalModel(prefix_cache=tmp_path)
    specs = [
        ToolSpec(name=t.name, description=t.description, parameters=t.schema)
        for t in default_tools()
    ]
    settings = ModelSettings(max_tokens=64)

    def ask(task: str) -> tuple[str, int, str | None]:
        reply = asyncio.run(model.chat([Message(role="user", content=task)], specs, settings))
        return reply.raw, reply.usage.prompt_tokens, model.last_warmth

    model.llama().reset()  # as in a new process: nothing evaluated yet
    cold, tokens, how = ask("What is 6 * 7?")
    assert how == "saved" and len(list(tmp_path.glob("*.state"))) == 1
    model.llama().reset()
    warm, _, how = ask("What is 6 * 7?")
    assert how == "loaded" and warm == cold
    _, _, how = ask("Convert 3 miles to km.")
    assert how == "live"  # same tools: the prefix is still in the KV cache
    assert tokens > 300  # the prefix is most of the prompt
