"""Whatever a model, a tool or a hook does, a run ends with a status (never "running", never
a traceback out of `Loop.run`), and its trace is written."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bigloop import (
    Budget,
    FunctionModel,
    Loop,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
    TraceStore,
    tool,
)
from bigloop.atoms.card import AtomCard
from bigloop.trace.records import RunResult, Step

ROOT = Path(__file__).parents[2]


@tool
def echo(text: str) -> str:
    """Repeat a text."""
    return text


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def run(tmp_path: Path, reply: Any, tools: list[Any] | None = None) -> tuple[RunResult, str]:
    """Run with a store; the result and the status the store recorded."""
    store = TraceStore(tmp_path / "t.db")
    result = Loop(FunctionModel(reply), tools or [echo], store=store).run_sync("echo hi")
    stored = store.run(result.run_id)
    store.steps(result.run_id)  # the trace reads back
    return result, stored.status


def test_a_model_that_raises_fails_the_run_with_the_error_and_its_place(tmp_path: Path) -> None:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise ValueError("the model's code has a bug")

    result, stored = run(tmp_path, reply)
    assert (result.status, stored) == ("failed", "failed")
    assert result.error is not None
    assert "unexpected error: ValueError: the model's code has a bug" in result.error
    assert "test_robust_drive.py" in result.error and "in reply" in result.error


def test_a_model_that_returns_none_fails_the_run_clearly(tmp_path: Path) -> None:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> Any:
        return None

    result, stored = run(tmp_path, reply)
    assert (result.status, stored) == ("failed", "failed")
    assert "A model's reply must be text or a ModelResponse, not NoneType" in (result.error or "")


def test_a_chat_model_that_returns_something_else_fails_the_run_clearly(tmp_path: Path) -> None:
    class Odd:
        name = "odd"
        card = AtomCard(name="odd", kind="model", description="returns a dict")

        async def chat(
            self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
        ) -> Any:
            return {"text": "hi"}

    store = TraceStore(tmp_path / "t.db")
    result = Loop(Odd(), [echo], store=store).run_sync("hi")  # type: ignore[arg-type]
    assert result.status == "failed" and store.run(result.run_id).status == "failed"
    assert "returned dict from chat(), not a ModelResponse" in (result.error or "")


def test_a_model_that_never_answers_is_stopped_by_the_step_time_limit(tmp_path: Path) -> None:
    async def never(messages: list[Message], tools: list[ToolSpec]) -> str:
        await asyncio.Event().wait()
        return answer("never")

    store = TraceStore(tmp_path / "t.db")
    loop = Loop(FunctionModel(never), [echo], store=store, budget=Budget(max_step_seconds=0.1))
    result = loop.run_sync("echo hi")
    assert (result.status, result.error) == (
        "budget_exceeded",
        "A model turn took longer than 0.1 s.",
    )
    assert store.run(result.run_id).status == "budget_exceeded"


def test_a_hook_that_raises_fails_the_run(tmp_path: Path) -> None:
    def on_step(step: Step) -> None:
        raise RuntimeError("the progress display broke")

    store = TraceStore(tmp_path / "t.db")
    model = FunctionModel(lambda m, t: answer("hi"))
    result = Loop(model, [echo], store=store).run_sync("hi", on_step=on_step)
    assert result.status == "failed" and store.run(result.run_id).status == "failed"
    assert "RuntimeError: the progress display broke" in (result.error or "")


def test_json_nested_100k_deep_is_an_unreadable_reply(tmp_path: Path) -> None:
    seen: list[str] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        return "[" * 100_000 + "]" * 100_000 if len(seen) == 1 else answer("flat now")

    result, stored = run(tmp_path, reply)
    assert (result.status, stored) == ("ok", "ok")
    assert "not valid JSON (it is nested too deeply)" in seen[1]


def test_an_integer_too_long_to_read_is_an_unreadable_reply(tmp_path: Path) -> None:
    seen: list[str] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        if len(seen) == 1:
            return '{"name": "echo", "arguments": {"text": ' + "7" * 5000 + "}}"
        return answer("short now")

    result, stored = run(tmp_path, reply)
    assert (result.status, stored) == ("ok", "ok")
    assert "a number in it has too many digits" in seen[1]


def test_an_integer_too_long_to_print_in_arguments_goes_back_to_the_model(tmp_path: Path) -> None:
    replies = iter(
        [
            ModelResponse(tool_calls=[ToolCall(id="1", name="echo", arguments={"text": 10**5000})]),
            answer("ok"),
        ]
    )
    result, stored = run(tmp_path, lambda m, t: next(replies))
    assert (result.status, stored) == ("ok", "ok")
    assert result.tool_steps[0].error == "invalid_arguments"
    assert "more than 4,000 digits" in str(result.tool_steps[0].output)


def test_arguments_nested_past_the_recursion_limit_go_back_to_the_model(tmp_path: Path) -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    replies = iter(
        [
            ModelResponse(tool_calls=[ToolCall(id="1", name="echo", arguments={"text": deep})]),
            answer("ok"),
        ]
    )
    result, stored = run(tmp_path, lambda m, t: next(replies))
    assert (result.status, stored) == ("ok", "ok")
    assert "nested more than 64 levels deep" in str(result.tool_steps[0].output)


def test_lone_surrogates_from_the_model_and_tools_are_written(tmp_path: Path) -> None:
    @tool
    def odd() -> str:
        """A tool whose result is not valid Unicode."""
        return "half a pair: \ud800"

    replies = iter(
        [
            json.dumps({"name": "echo", "arguments": {"text": "bad \ud800 text"}}),
            json.dumps({"name": "odd", "arguments": {}}),
            answer("done \udfff"),
        ]
    )
    result, stored = run(tmp_path, lambda m, t: next(replies), [echo, odd])
    assert (result.status, stored) == ("ok", "ok")
    assert result.answer == "done \ufffd"
    store = TraceStore(tmp_path / "t.db")
    steps = store.steps(result.run_id)
    assert steps[1].input == {"text": "bad \ufffd text"}
    for text in [str(s.output) for s in steps] + [m.content for m in result.messages]:
        text.encode("utf-8")  # valid: whether replaced here or escaped by the tool
    assert store.run(result.run_id).answer == "done \ufffd"


def test_a_tool_returning_an_integer_too_long_to_print_ends_with_a_status(tmp_path: Path) -> None:
    @tool
    def huge() -> int:
        """A very large number."""
        return 10**5000

    replies = iter([json.dumps({"name": "huge", "arguments": {}}), answer("big")])
    result, stored = run(tmp_path, lambda m, t: next(replies), [huge])
    assert result.status in ("ok", "failed") and stored == result.status


SYS_EXIT = """
import json, sys
from bigloop import Loop, ScriptedModel, tool

@tool
def leave(code: int) -> str:
    '''Leave.'''
    sys.exit(code)

@tool
async def leave_async(code: int) -> str:
    '''Leave, asynchronously.'''
    sys.exit(code)

model = ScriptedModel([
    json.dumps({"tool_calls": [{"name": "leave", "arguments": {"code": 3}},
                               {"name": "leave_async", "arguments": {"code": 4}}]}),
    json.dumps({"answer": "still here"}),
])
result = Loop(model, [leave, leave_async]).run_sync("leave")
print(json.dumps([result.status, [s.output for s in result.tool_steps]]))
"""


def test_a_tool_calling_sys_exit_is_a_tool_error() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SYS_EXIT], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    status, outputs = json.loads(out.stdout)
    assert status == "ok"
    assert all("SystemExit" in o for o in outputs)
