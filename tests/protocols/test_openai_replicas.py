"""`bigloop serve openai` recording its completions in a trace store, and the same server
as Ray Serve replicas (`--ray local --replicas 2`): a real Ray cluster on this machine,
the embedded model in each replica, one trace file shared by both."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from bigloop.protocols.openai_server import create_app
from bigloop.trace.store import TraceStore
from tests import loopback
from tests.protocols.test_openai_server import ASK, WEATHER, function_call, weather_model


def test_each_completion_is_recorded_as_a_run_of_one_model_step(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "served.db")
    app = create_app(weather_model([]), store=store, replica="host-a:1")
    with (
        loopback.serving(lambda _: app, lifespan="off") as url,
        openai.OpenAI(base_url=f"{url}v1", api_key="unused", max_retries=0) as sdk,
    ):
        completion = sdk.chat.completions.create(
            model="weather", messages=[{"role": "user", "content": ASK.content}], tools=[WEATHER]
        )
    call = function_call(completion.choices[0].message)
    [run] = store.runs()
    assert (run.run_id, run.task, run.status) == (completion.id, ASK.content, "ok")
    assert run.config == {"served": "openai", "replica": "host-a:1", "tools": ["get_weather"]}
    [step] = store.steps(run.run_id)
    assert step.kind == "model" and step.message is not None
    [recorded] = step.message.tool_calls
    assert (recorded.id, recorded.name) == (call.id, "get_weather")
    assert recorded.arguments == json.loads(call.function.arguments) == {"city": "Paris"}


def test_without_a_store_nothing_is_recorded(tmp_path: Path) -> None:
    app = create_app(weather_model([]))
    with loopback.serving(lambda _: app, lifespan="off") as url:
        body = {"model": "w", "messages": [{"role": "user", "content": "Hi"}]}
        assert httpx.post(f"{url}v1/chat/completions", json=body).status_code == 200
    assert not (tmp_path / "home" / "traces.db").exists()


CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}
TOKEN = "replica-test-token"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Two replicas of the embedded model on a local Ray cluster, sharing one trace file."""
    pytest.importorskip("ray.serve", reason="the 'serve-ray' extra is not installed")
    import ray

    from bigloop.protocols.guard import allowed_hosts_for
    from bigloop.protocols.openai_replicas import ReplicaSpec, start_replicas, stop_replicas

    # no token authentication: a local cluster would otherwise leave a token in ~/.ray,
    # and Ray then turns token authentication on for every cluster started later
    mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    db = tmp_path_factory.mktemp("replicas") / "traces.db"
    TraceStore(db).close()  # the layout, before two processes race to create it
    port = loopback.free_port()
    spec = ReplicaSpec(
        allowed_hosts=tuple(allowed_hosts_for("127.0.0.1")),
        token=TOKEN,
        trace_db=str(db),
        threads=1,
    )
    start_replicas(spec, address="local", host="127.0.0.1", port=port, replicas=2)
    try:
        yield f"http://127.0.0.1:{port}/v1", db
    finally:
        stop_replicas()
        ray.shutdown()
        if mode is None:
            del os.environ["RAY_AUTH_MODE"]
        else:
            os.environ["RAY_AUTH_MODE"] = mode


async def _ask_at_once(url: str, texts: list[str]) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=300, headers=headers) as http:
        bodies: list[dict[str, Any]] = [
            {
                "model": "embedded",
                "messages": [{"role": "user", "content": t}],
                "tools": [CALCULATOR],
            }
            for t in texts
        ]
        return await asyncio.gather(*(http.post(f"{url}/chat/completions", json=b) for b in bodies))


@pytest.mark.real
@pytest.mark.filterwarnings("ignore")  # Ray's own deprecation warnings in its workers' client
def test_ray_replicas_answer_through_the_guard_and_share_one_store(
    replicas: tuple[str, Path],
) -> None:
    url, db = replicas
    assert httpx.get(f"{url}/models").status_code == 401  # no token
    wrong_host = {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}
    assert httpx.get(f"{url}/models", headers=wrong_host).status_code == 400
    texts = [f"What is {a} times {a + 7}?" for a in (12, 17, 23, 31)]
    answers = asyncio.run(_ask_at_once(url, texts))
    assert [r.status_code for r in answers] == [200] * 4
    for r in answers:
        message = r.json()["choices"][0]["message"]
        assert message["tool_calls"] or message["content"]
    store = TraceStore(db, create=False)
    runs = {r.run_id: r for r in store.runs()}
    assert set(runs) == {r.json()["id"] for r in answers}
    assert {r.task for r in runs.values()} == set(texts)
    assert len({r.config["replica"] for r in runs.values()}) == 2  # both replicas answered
