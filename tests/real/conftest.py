from __future__ import annotations

import pytest

from bigloop import LocalModel


@pytest.fixture(scope="session")
def embedded() -> LocalModel:
    """The embedded default model, loaded once for every real-model test."""
    model = LocalModel()
    model.llama()
    return model
