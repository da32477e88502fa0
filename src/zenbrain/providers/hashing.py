"""A fast deterministic embedder for tests and synthetic experiments.

Feature hashing of word unigrams and bigrams plus character trigrams into ``dim``
buckets with signed hashes (blake2b, so results are stable across processes and
Python versions). Texts that share words get similar vectors, which is enough for
tests of retrieval logic without loading a neural model.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

from .base import normalize_rows

_TOKEN = re.compile(r"[a-z0-9]+")


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashingEmbedder:
    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.name = f"hashing:{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _TOKEN.findall(text.lower())
            feats = list(words) + [f"{a}_{b}" for a, b in itertools.pairwise(words)]
            for w in words:
                padded = f"#{w}#"
                feats.extend(f"c:{padded[i:i + 3]}" for i in range(len(padded) - 2))
            for f in feats:
                idx, sign = _bucket(f, self.dim)
                out[row, idx] += sign * (0.5 if f.startswith("c:") else 1.0)
        return normalize_rows(out) if len(texts) else out
