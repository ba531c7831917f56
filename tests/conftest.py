from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_PROBE = """
from bigloop import LocalModel
from bigloop.atoms.models.base import Message, ModelSettings
import asyncio
model = LocalModel()
reply = asyncio.run(model.chat([Message(role="user", content="Say hi.")], [],
                               ModelSettings(max_tokens=4)))
print("ok", reply.usage.completion_tokens)
"""
PROBE_TIMEOUT = 900
"""Seconds the probe may take (joining the weights on a first run included)."""


def _real(item: pytest.Item) -> bool:
    return item.get_closest_marker("real") is not None or "tests/real/" in item.nodeid


def model_problem(probe: str = _PROBE) -> str | None:
    """Why the embedded model cannot run on this machine, or None when it can: it is loaded
    and asked for a few tokens in a child process, so a crash (SIGILL in a build for
    another CPU) fails the real-model tests with the fix instead of taking pytest down."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=PROBE_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return f"the embedded model did not answer within {PROBE_TIMEOUT} s"
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        return (
            f"llama.cpp crashed ({name}, signal {-done.returncode}) loading or running the "
            "embedded model: rebuild it for this machine with `make setup` (a portable build; "
            "`bigloop doctor` shows what it was built for)"
        )
    if done.returncode != 0 or not done.stdout.startswith("ok"):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return "the embedded model failed to run: " + " / ".join(tail)
    return None


PROBLEM = pytest.StashKey[str | None]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(_real(item) for item in items):
        config.stash[PROBLEM] = model_problem()


@pytest.fixture(autouse=True)
def _model_runs(request: pytest.FixtureRequest) -> None:
    """A real-model test fails at once, with the probe's message, where the model cannot run."""
    if _real(request.node) and (problem := request.config.stash.get(PROBLEM, None)):
        pytest.fail(problem, pytrace=False)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Traces of every test go to its own folder, never the user's."""
    monkeypatch.setenv("BIGLOOP_HOME", str(tmp_path / "home"))
    yield


@pytest.fixture
def sandbox() -> None:
    """Skip a test whose code runs in the kernel sandbox where this machine cannot set it
    up (the sandbox is never replaced by unconfined code)."""
    from bigloop.atoms.builtin.python_sandbox import sandbox_problem

    if (problem := sandbox_problem()) is not None:
        pytest.skip(f"no kernel boundary on this machine: {problem}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL server for the session (tests/postgres_server.py); skipped with
    the reason where it cannot start."""
    from tests import postgres_server as pg

    if (why := pg.problem()) is not None:
        pytest.skip(why)
    with pg.server() as url:
        yield url


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server."""
    from tests import postgres_server as pg

    return pg.fresh_database(postgres_server)
