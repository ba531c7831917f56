"""The trace viewer's JSON API and pages, through starlette's TestClient, on runs the
real loop recorded with scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from bigloop import Loop, ScriptedModel, TraceStore, tool
from bigloop.protocols.guard import allowed_hosts_for
from bigloop.ui import create_app
from bigloop.ui.server import STATIC
from tests.ui.runs import (
    XSS,
    add_live_step,
    answer,
    calls,
    graph_run,
    react_run,
    start_live_run,
)


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path / "traces.db")


@pytest.fixture
def client(store: TraceStore) -> TestClient:
    return TestClient(create_app(store), base_url="http://127.0.0.1:8765")


def test_run_list_has_what_the_table_shows(store: TraceStore, client: TestClient) -> None:
    react = react_run(store)
    graph = graph_run(store)
    runs = client.get("/api/runs").json()["runs"]
    assert [r["run_id"] for r in runs] == [graph, react]  # newest first
    row = runs[1]
    summary = store.run(react)
    assert row["task"] == "Read the home page and the missing page."
    assert row["status"] == "ok" and row["model"] == "scripted" and row["planner"] == "react"
    assert row["steps"] == 8 and row["tool_calls"] == 4
    assert row["tokens"] == summary.prompt_tokens + summary.completion_tokens > 0
    assert row["seconds"] == pytest.approx(summary.ended_at - summary.started_at)  # type: ignore[operator]
    assert row["cost"] == summary.cost == 0.0  # a scripted model's card costs nothing
    assert client.get("/api/runs?limit=1").json()["runs"][0]["run_id"] == graph


def test_a_run_shows_calls_results_errors_and_repairs(
    store: TraceStore, client: TestClient
) -> None:
    run_id = react_run(store)
    data = client.get(f"/api/runs/{run_id[:6]}").json()  # a prefix is enough
    assert data["run"]["run_id"] == run_id and data["run"]["answer"] == "The home page says hello."
    assert data["plan"] is None
    steps = data["steps"]
    assert [(s["kind"], s["name"], s["error"]) for s in steps] == [
        ("model", "scripted", None),
        ("tool", "lookup", None),
        ("tool", "lookup", "tool_error"),
        ("model", "scripted", None),
        ("tool", "teleport", "unknown_tool"),
        ("model", "scripted", None),
        ("tool", "repeat", None),
        ("model", "scripted", None),
    ]
    assert steps[0]["calls"] == [
        {"id": "call_1", "name": "lookup", "arguments": {"name": "home"}},
        {"id": "call_2", "name": "lookup", "arguments": {"name": "missing"}},
    ]
    assert steps[1]["call_id"] == "call_1" and steps[1]["input"] == {"name": "home"}
    assert steps[1]["output"] == f"page home: {XSS}"  # data stays data; the page escapes it
    assert steps[2]["output"] == "Error: Tool 'lookup' failed: KeyError: 'missing'"
    assert steps[4]["repairs"] == [
        "the model called a tool that does not exist; the error went back to it"
    ]
    assert steps[6]["repairs"] == [
        'arguments adapted by the call checks: {"text": "ab", "times": "3"} → '
        '{"text": "ab", "times": 3}'
    ]
    assert all(s["offset"] >= 0 for s in steps)
    assert [s["index"] for s in client.get(f"/api/runs/{run_id}?since=6").json()["steps"]] == [6, 7]


def test_a_denied_call_is_shown_as_refused(store: TraceStore, client: TestClient) -> None:
    @tool(effect="irreversible")
    def wipe(folder: str) -> str:
        """Delete a folder for good."""
        raise AssertionError("a denied call is never made")

    model = ScriptedModel([calls(("wipe", {"folder": "inbox"})), answer("It needs approval.")])
    run_id = Loop(model, [wipe], store=store, approve=None).run_sync("Wipe my inbox.").run_id
    steps = client.get(f"/api/runs/{run_id}").json()["steps"]
    assert [(s["kind"], s["error"]) for s in steps] == [
        ("model", None),
        ("tool", "denied"),
        ("model", None),
    ]
    assert steps[1]["repairs"] == [
        "the call cannot be undone and was not approved, so it was not made; the denial went "
        "back to the model"
    ]


def test_the_plan_graph_of_a_graph_run(store: TraceStore, client: TestClient) -> None:
    data = client.get(f"/api/runs/{graph_run(store)}").json()
    assert data["run"]["planner"] == "graph"
    assert data["steps"][0]["role"] == "plan" and data["steps"][-1]["role"] == "join"
    plan = data["plan"]
    assert [(n["id"], n["tool"], n["deps"], n["status"], n["step"]) for n in plan["nodes"]] == [
        (1, "add_later", [], "done", 1),
        (2, "add_later", [], "done", 2),
        (3, "add_later", [1, 2], "done", 3),
    ]
    assert plan["edges"] == [{"from": 1, "to": 3}, {"from": 2, "to": 3}]


def test_routing_decisions_and_questions_are_shown(store: TraceStore, client: TestClient) -> None:
    from bigloop.trace.records import Step

    store.start_run("routed000001", "Which model?", "cascade", {})
    route = {"order": ["cheap", "strong"], "rejected": {"remote": "privacy"}}
    store.add_step(
        Step(
            run_id="routed000001",
            index=0,
            kind="model",
            name="cascade",
            input={"messages": 1, "tools": 0, "route": route, "answered_by": "strong"},
            output="Need the city",
        )
    )
    store.add_step(
        Step(
            run_id="routed000001",
            index=1,
            kind="ask",
            name="weather",
            input={"city": None},
            output="Not called: waiting for the user's answer to: Which city?",
            error="unanswered",
        )
    )
    store.finish_run("routed000001", "input_required", None, "Which city?")
    data = client.get("/api/runs/routed000001").json()
    assert data["run"]["question"] == "Which city?"
    model, ask = data["steps"]
    assert model["route"] == route and model["answered_by"] == "strong"
    assert ask["question"] == "Not called: waiting for the user's answer to: Which city?"


def test_a_run_in_progress_is_polled_for_new_steps(store: TraceStore, client: TestClient) -> None:
    run_id = start_live_run(store)
    first = client.get(f"/api/runs/{run_id}").json()
    assert first["run"]["status"] == "running" and len(first["steps"]) == 1
    assert first["run"]["ended_at"] is None and first["run"]["seconds"] >= 0
    add_live_step(store, run_id, 1)
    add_live_step(store, run_id, 2)
    later = client.get(f"/api/runs/{run_id}?since=1").json()
    assert [s["index"] for s in later["steps"]] == [1, 2]
    store.finish_run(run_id, "ok", "done", None)
    done = client.get(f"/api/runs/{run_id}?since=3").json()
    assert done["steps"] == [] and done["run"]["status"] == "ok"


def test_the_conversation_before_a_model_turn(store: TraceStore, client: TestClient) -> None:
    run_id = react_run(store)
    messages = client.get(f"/api/runs/{run_id}/steps/3/conversation").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[0]["content"] == "Read the home page and the missing page."
    assert messages[2]["content"] == f"page home: {XSS}"


def test_unknown_runs_are_404_with_the_reason(client: TestClient) -> None:
    response = client.get("/api/runs/nope")
    assert response.status_code == 404
    assert "No run matches id 'nope'" in response.json()["error"]
    assert client.get("/api/runs/nope/steps/0/conversation").status_code == 404


def test_pages_come_with_a_strict_content_security_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/static/app.js"' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    script = client.get("/static/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert client.get("/static/style.css").status_code == 200


def test_the_front_end_never_parses_trace_text_as_html() -> None:
    code = (STATIC / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in code


def test_requests_for_another_host_are_refused(store: TraceStore) -> None:
    """A web page elsewhere cannot read the traces by pointing its own name at 127.0.0.1
    (DNS rebinding): only loopback names are served by default."""
    rebound = TestClient(create_app(store), base_url="http://attacker.example:8765")
    assert rebound.get("/api/runs").status_code == 400
    assert allowed_hosts_for("0.0.0.0") == ["*"]
    assert "example.lan" in allowed_hosts_for("example.lan")


def test_with_a_token_the_api_needs_it_and_the_page_does_not(store: TraceStore) -> None:
    """Issue 26: the viewer beyond loopback needs a token. The page and its static files
    hold no trace data and load without it; the page sends the token from its URL's
    fragment (#token=...) with every API request."""
    guarded = TestClient(create_app(store, token="s3cret-token"), base_url="http://127.0.0.1:8765")
    assert guarded.get("/").status_code == 200
    assert guarded.get("/static/app.js").status_code == 200
    assert guarded.get("/api/runs").status_code == 401
    authorised = {"Authorization": "Bearer s3cret-token"}
    assert guarded.get("/api/runs", headers=authorised).status_code == 200
    code = (STATIC / "app.js").read_text()
    assert 'get("token")' in code and '"Bearer " + TOKEN' in code
