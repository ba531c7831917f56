from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Traces of every test go to its own folder, never the user's."""
    monkeypatch.setenv("BIGLOOP_HOME", str(tmp_path / "home"))
    yield
