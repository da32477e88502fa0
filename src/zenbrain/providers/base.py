"""Provider protocols. One method each; implementations live beside this file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed width.

    ``name`` identifies model and settings: cached vectors are keyed by it, so two
    embedders with different names never share cache entries.
    """

    # Read-only in the protocol, so plain attributes and properties (wrappers) both conform.
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A chat-completion LLM: messages in, text out."""

    name: str

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms
