"""One model turn's calls: each is recorded as soon as it completes (a kill between two
completions loses nothing), the model sees the results in the order it asked, at most
`Budget.max_calls_per_turn` calls are made, and error text shown to the model is capped."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from bigloop import Budget, FunctionModel, Loop, Message, ScriptedModel, ToolSpec, TraceStore, tool
from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.tool import Tool
from bigloop.trace.records import Step

ROOT = Path(__file__).parents[2]


def _log(ledger: Path, line: str) -> None:
    with ledger.open("a") as f:
        f.write(line + "\n")


def fetch_and_charge(db: Path, ledger: Path, *, slow: bool) -> Loop:
    """A turn of two calls: `fetch` (slow when `slow`) and then `charge`, which is not
    idempotent and completes at once."""

    @tool
    async def fetch(item: str) -> str:
        """Fetch an item's details."""
        if slow:
            await asyncio.sleep(60)
        return f"{item}: in stock"

    @tool(idempotent=False, effect="write")
    async def charge(item: str) -> str:
        """Charge the customer for an item (must happen once)."""
        _log(ledger, f"charge {item}")
        return f"charged {item}, receipt 42"

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if any(m.role == "tool" for m in messages):
            return json.dumps({"answer": "done"})
        calls = [
            {"name": "fetch", "arguments": {"item": "book"}},
            {"name": "charge", "arguments": {"item": "book"}},
        ]
        return json.dumps({"tool_calls": calls})

    return Loop(FunctionModel(reply), [fetch, charge], store=TraceStore(db))


def _recorded(db: Path, name: str) -> bool:
    with closing(sqlite3.connect(db)) as conn:
        return bool(
            conn.execute("SELECT COUNT(*) FROM steps WHERE name = ?", (name,)).fetchone()[0]
        )


def child(db: str, ledger: str) -> None:
    """The process that is killed: runs the turn with a `fetch` that never ends."""
    asyncio.run(fetch_and_charge(Path(db), Path(ledger), slow=True).run("Buy the book."))


def test_a_kill_after_one_call_completed_keeps_its_result(tmp_path: Path) -> None:
    db, ledger = tmp_path / "t.db", tmp_path / "ledger.txt"
    code = (
        f"from tests.schedule.test_robust_calls import child; child({str(db)!r}, {str(ledger)!r})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not (ledger.exists() and "charge" in ledger.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, "charge never ran"
            time.sleep(0.02)
        deadline = time.monotonic() + 5  # `fetch` still runs: the kill lands once `charge`
        while time.monotonic() < deadline and not _recorded(db, "charge"):  # is recorded
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with closing(sqlite3.connect(db)) as conn:
        (run_id,) = conn.execute("SELECT run_id FROM runs").fetchone()

    result = asyncio.run(fetch_and_charge(db, ledger, slow=False).resume(run_id))

    assert result.status == "ok", result.error
    assert ledger.read_text().splitlines() == ["charge book"], "charged once"
    replies = [(m.name, m.content) for m in result.messages if m.role == "tool"]
    assert replies == [
        ("fetch", "book: in stock"),
        ("charge", "charged book, receipt 42"),
    ], "the real result of the completed call, not 'outcome unknown'; in call order"


def test_steps_are_recorded_as_calls_complete_and_shown_in_call_order(tmp_path: Path) -> None:
    finished: list[str] = []

    def after(name: str, seconds: float) -> Tool:
        async def run(x: int) -> str:
            await asyncio.sleep(seconds)
            finished.append(name)
            return f"{name} {x}"

        run.__name__, run.__doc__ = name, f"Tool {name}."
        return tool(run)

    tools = [after("a", 0.4), after("b", 0.2), after("c", 0.0)]  # c completes first, a last
    three = json.dumps(
        {"tool_calls": [{"name": n, "arguments": {"x": i}} for i, n in enumerate("abc")]}
    )
    seen: list[list[str]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append([m.content for m in messages if m.role == "tool"])
        if len(seen) == 2:
            raise ModelUnavailable("the model went away")
        return three if len(seen) == 1 else json.dumps({"answer": "done"})

    recorded: list[tuple[str, list[str]]] = []

    def on_step(step: Step) -> None:
        if step.kind == "tool":
            recorded.append((step.name, list(finished)))

    store = TraceStore(tmp_path / "t.db")
    first = Loop(FunctionModel(reply), tools, store=store).run_sync("a, b and c", on_step=on_step)
    assert first.status == "failed"
    assert recorded == [("c", ["c"]), ("b", ["c", "b"]), ("a", ["c", "b", "a"])], (
        "each call is recorded as soon as it completes"
    )
    assert [s.name for s in store.steps(first.run_id) if s.kind == "tool"] == ["c", "b", "a"]
    assert seen[1] == ["a 0", "b 1", "c 2"], "the model sees the results in call order"

    # A resume rebuilds the same conversation from the steps stored in completion order.
    result = asyncio.run(Loop(FunctionModel(reply), tools, store=store).resume(first.run_id))
    assert result.status == "ok"
    assert seen[2] == ["a 0", "b 1", "c 2"]


def test_calls_beyond_the_per_turn_cap_are_not_made_and_the_model_is_told() -> None:
    made: list[int] = []

    @tool
    async def count(i: int) -> str:
        """Count one."""
        made.append(i)
        return str(i)

    many = json.dumps(
        {"tool_calls": [{"name": "count", "arguments": {"i": i}} for i in range(5000)]}
    )
    seen: list[list[Message]] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        return many if len(seen) == 1 else json.dumps({"answer": "counted"})

    result = Loop(FunctionModel(reply), [count]).run_sync("count to 5000")

    assert result.status == "ok"
    assert made == list(range(16)), "the default cap is 16 calls per turn"
    assert len(result.tool_steps) == 16
    assert result.steps[0].input["calls_not_made"] == 4984
    second = seen[1]
    assert len(second[-18].tool_calls) == 16, "the conversation keeps the calls made"
    assert [m.role for m in second[-17:]] == ["tool"] * 16 + ["user"]
    assert "You asked for 5000 calls in one turn; only the first 16 were made" in (
        second[-1].content
    )


def test_the_per_turn_cap_is_a_budget() -> None:
    made: list[int] = []

    @tool
    async def count(i: int) -> str:
        """Count one."""
        made.append(i)
        return str(i)

    three = json.dumps({"tool_calls": [{"name": "count", "arguments": {"i": i}} for i in range(3)]})
    model = ScriptedModel([three, json.dumps({"answer": "ok"})])
    Loop(model, [count], budget=Budget(max_calls_per_turn=2)).run_sync("count")
    assert made == [0, 1]
    with pytest.raises(UserError, match="max_calls_per_turn must be at least 1"):
        Budget(max_calls_per_turn=0)


def test_error_text_shown_to_the_model_is_capped() -> None:
    @tool
    def explode(x: int) -> str:
        """Fails loudly."""
        raise ValueError("x" * 100_000)

    seen: list[str] = []

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(messages[-1].content)
        if len(seen) == 1:
            return json.dumps({"name": "explode", "arguments": {"x": 1}})
        return json.dumps({"answer": "it failed"})

    result = Loop(FunctionModel(reply), [explode]).run_sync("explode 1")
    assert result.status == "ok"
    assert result.tool_steps[0].error == "tool_error"
    assert 1000 < len(seen[1]) < 2100, "cut at ERROR_CHARS (2000)"
    assert seen[1].endswith("characters]")
