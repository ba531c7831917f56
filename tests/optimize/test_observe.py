from __future__ import annotations

import json
from pathlib import Path

from bigloop import Loop, ScriptedModel, TraceStore, tool
from bigloop.optimize.observe import learn_cards, observe


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def test_cards_learn_reliability_and_latency_from_traces(tmp_path: Path) -> None:
    @tool
    def flaky(n: int) -> int:
        """Fails on odd numbers."""
        if n % 2:
            raise ValueError("odd")
        return n

    @tool
    def never_called() -> int:
        """Not in any trace."""
        return 0

    store = TraceStore(tmp_path / "t.db")
    for n in range(4):
        model = ScriptedModel(
            [json.dumps({"tool_calls": [{"name": "flaky", "arguments": {"n": n}}]}), answer("x")]
        )
        Loop(model, [flaky], store=store).run_sync(f"flaky {n}")
    seen = observe(store)
    assert (seen["flaky"].calls, seen["flaky"].success_rate) == (4, 0.5)
    assert (seen["scripted"].calls, seen["scripted"].success_rate) == (8, 1.0)
    card, untraced = learn_cards([flaky.card, never_called.card], store)
    assert card.reliability == 0.5
    assert card.latency_s == seen["flaky"].p50_s
    assert untraced == never_called.card


def test_a_denied_call_is_not_a_failure_of_the_tool(tmp_path: Path) -> None:
    @tool(effect="irreversible")
    def wipe(folder: str) -> str:
        """Delete a folder for good."""
        return "wiped"

    def call(folder: str) -> str:
        return json.dumps({"tool_calls": [{"name": "wipe", "arguments": {"folder": folder}}]})

    store = TraceStore(tmp_path / "t.db")
    Loop(ScriptedModel([call("a"), answer("no")]), [wipe], store=store, approve=None).run_sync(
        "Wipe a."
    )
    denied = observe(store)
    assert "wipe" not in denied  # denied by the gate: never called, so never failed
    approved = Loop(
        ScriptedModel([call("b"), answer("ok")]),
        [wipe],
        store=store,
        approve=lambda c, spec: True,
    )
    approved.run_sync("Wipe b.")
    assert [s.error for s in store.step_outcomes({"tool"})] == ["denied", None]
    seen = observe(store)
    assert (seen["wipe"].calls, seen["wipe"].success_rate) == (1, 1.0)
