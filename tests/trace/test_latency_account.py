"""A model turn's latency account is stored with its step, summed per run and shown."""

from __future__ import annotations

from pathlib import Path

from bigloop import FunctionModel, Loop, ModelResponse, ToolCall, TraceStore, tool
from bigloop import Message as ChatMessage
from bigloop.atoms.models.base import ToolSpec, Usage
from bigloop.report import floor_text, step_line, summary_line


@tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def reply(messages: list[ChatMessage], specs: list[ToolSpec]) -> ModelResponse:
    account = Usage(
        prompt_tokens=700,
        completion_tokens=30,
        seconds=2.0,
        prompt_evaluated=40,
        prompt_new=40,
        floor_seconds=1.0,
    )
    if any(m.role == "tool" for m in messages):
        return ModelResponse(text="5", usage=account)
    call = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})
    return ModelResponse(tool_calls=[call], usage=account)


def test_the_run_s_floor_is_the_sum_of_its_turns_and_is_shown(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    result = Loop(FunctionModel(reply), [add], store=store).run_sync("What is 2 + 3?")
    stored = store.result(result.run_id)
    for usage in (result.usage, stored.usage):
        assert (usage.prompt_evaluated, usage.prompt_new, usage.floor_seconds) == (80, 80, 2.0)
        assert usage.prompt_reused == 1320
    assert stored.usage.floor_ratio == stored.usage.seconds / 2.0
    model_steps = [s for s in stored.steps if s.kind == "model"]
    assert all(s.input["latency"]["floor_seconds"] == 1.0 for s in model_steps)
    assert "(read 40, reused 660; floor 1.0 s, 2.0x)" in step_line(model_steps[0])
    assert "read 80, reused 1320; floor 2.0 s" in summary_line(stored)


def test_a_backend_without_an_account_shows_none() -> None:
    assert floor_text(Usage(prompt_tokens=10, seconds=1.0)) == ""
    assert Usage.from_latency({"floor_seconds": "x", "runaway": True}).latency() == {}


def test_a_runaway_cut_is_shown() -> None:
    usage = Usage(prompt_tokens=10, prompt_evaluated=10, seconds=3.0, floor_seconds=1.0, runaway=1)
    assert floor_text(usage) == " (read 10, reused 0; floor 1.0 s, 3.0x; 1 runaway cut)"
