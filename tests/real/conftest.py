from __future__ import annotations

import pytest

from bigloop import LocalModel
from tests.conftest import PROBLEM


@pytest.fixture(scope="session")
def embedded(request: pytest.FixtureRequest) -> LocalModel:
    """The embedded default model, loaded once for every real-model test (not where the
    probe saw it crash: session fixtures are set up before the per-test check)."""
    if problem := request.config.stash.get(PROBLEM, None):
        pytest.fail(problem, pytrace=False)
    model = LocalModel()
    model.llama()
    return model
