"""This machine's speed for a local model, measured once and cached: the latency floor.

A run's **floor** is the time its model turns would take if each read only the tokens no
earlier turn had in the KV cache (the system prompt and tools of a warm start, the turns
before) and wrote what it wrote, at this machine's prompt and generation rates. The ratio
of a run's model seconds to its floor says how much of the time went to re-reading.

`Rates.measure` reads 256 tokens and writes 32 (a few seconds), once per model file,
thread count, llama.cpp build and CPU; later processes read the rates from the cache.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_PROBE_TEXT = (
    "The loop calls tools, reads their results and answers. Every turn reads its prompt "
    "and writes its reply; a turn that shares its start with the turn before reads only "
    "what is new. "
)
_READ = 256
_WRITE = 32


@dataclass(kw_only=True, frozen=True)
class Rates:
    """Tokens per second this machine reads (prompt) and writes (generation)."""

    prompt_tps: float
    generation_tps: float

    def floor(self, read: int, written: int) -> float:
        """Seconds to read `read` new prompt tokens and write `written` tokens."""
        return read / self.prompt_tps + written / self.generation_tps

    @staticmethod
    def measure(llama: Any) -> Rates:
        """Time reading `_READ` tokens and writing `_WRITE` on `llama` (its KV cache is
        cleared before and after)."""
        tokens = list(llama.tokenize(_PROBE_TEXT.encode() * 8, add_bos=False))[:_READ]
        llama.reset()
        start = time.perf_counter()
        llama.eval(tokens)
        read = time.perf_counter() - start
        start = time.perf_counter()
        for token in tokens[:_WRITE]:  # one token a decode, as generation goes
            llama.eval([token])
        write = time.perf_counter() - start
        llama.reset()
        return Rates(
            prompt_tps=len(tokens) / max(read, 1e-6), generation_tps=_WRITE / max(write, 1e-6)
        )


def cached(llama: Any, key: str, folder: Path) -> Rates:
    """The rates for `key` from `folder`'s cache, measured on `llama` when missing."""
    path = folder / "rates.json"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(entry := known.get(key), dict):
        try:
            return Rates(**entry)
        except TypeError:
            pass
    rates = Rates.measure(llama)
    known = known if isinstance(known, dict) else {}
    known[key] = asdict(rates)
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(known, indent=2))
    partial.replace(path)
    return rates
