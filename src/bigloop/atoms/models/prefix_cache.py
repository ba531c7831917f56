"""Warm start: the llama.cpp state of a prompt's fixed prefix, kept on disk.

Every run of a loop starts with the same system prompt and tool schemas (~600 tokens,
~5 s of prompt processing for the embedded model on two cores) and only then the task.
`PrefixStates` evaluates such a prefix once per model and prefix, saves the model's state
(its KV cache, ~12 KB per token) in the user cache folder, and loads it in any later
process, so a new `bigloop run` pays only for the task's tokens.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

Warmth = Literal["live", "loaded", "saved", "short"]

MIN_PREFIX_TOKENS = 64
"""Shorter prefixes are cheaper to evaluate than to load."""


class PrefixStates:
    """Prefix states of one model in `folder`, at most `keep` of them and `max_bytes` in
    all (the least recently used removed first).

    Args:
        folder: where the states are kept.
        model_key: identifies the model file and the context settings; states of other
            models never load.
        keep: states kept. Each tool set, and each order of it (tools are ranked per
            task), is a prefix of its own: the suite's test split alone makes dozens.
        max_bytes: their size in all (a 700-token prefix of the 0.5B is ~8 MB).
    """

    def __init__(
        self, folder: Path, model_key: str, *, keep: int = 64, max_bytes: int = 512 << 20
    ) -> None:
        self.folder = folder
        self.model_key = model_key
        self.keep = keep
        self.max_bytes = max_bytes

    def warm(self, llama: Any, prefix: Sequence[int]) -> Warmth:
        """Make `llama`'s KV cache start with `prefix`: already there ("live"), loaded
        from disk ("loaded"), or evaluated now and saved ("saved"); prefixes shorter than
        `MIN_PREFIX_TOKENS` are left to the normal evaluation ("short")."""
        if len(prefix) < MIN_PREFIX_TOKENS:
            return "short"
        live = common_prefix(llama.input_ids[: llama.n_tokens], prefix)
        if live >= len(prefix):
            return "live"
        path = self.folder / f"{self._key(prefix)}.state"
        if path.is_file() and self._load(llama, path, prefix):
            return "loaded"
        llama.reset()
        llama.eval(list(prefix))
        self._save(llama, path)
        return "saved"

    def _key(self, prefix: Sequence[int]) -> str:
        digest = hashlib.sha256(self.model_key.encode())
        digest.update(b"".join(int(t).to_bytes(4, "little") for t in prefix))
        return digest.hexdigest()[:32]

    def _load(self, llama: Any, path: Path, prefix: Sequence[int]) -> bool:
        import llama_cpp

        data = path.read_bytes()
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(data)) != len(data):
            path.unlink(missing_ok=True)  # written by another llama.cpp build: rebuild it
            llama.reset()
            return False
        n = len(prefix)
        llama.input_ids[:n] = prefix
        llama.n_tokens = n
        llama._requires_eval = True  # the restored logits are not a live decode's
        os.utime(path)  # recently used: kept longest
        return True

    def _save(self, llama: Any, path: Path) -> None:
        import llama_cpp

        ctx = llama._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(ctx, buffer, size)
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(bytes(buffer)[:written])
        partial.replace(path)  # atomic: a concurrent reader sees all of it or nothing
        states = []
        for state in self.folder.glob("*.state"):
            try:
                st = state.stat()
            except OSError:  # removed by another process meanwhile
                continue
            states.append((st.st_mtime, st.st_size, state))
        states.sort()
        total = sum(size for _, size, _ in states)
        while states and (len(states) > self.keep or total > self.max_bytes):
            _, size, old = states.pop(0)
            total -= size
            old.unlink(missing_ok=True)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
