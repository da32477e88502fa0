"""Synthetic workloads for the real-system experiments, and an embedder that serves them.

The paper's synthetic protocol draws 32-d fact vectors with components U(-1, 1),
L2-normalised, and queries as the normalised mean of 1-3 distinct relevant facts plus
U(-0.1, 0.1) noise per dimension. We draw the same distributions with numpy's
``default_rng(seed)`` (not the authors' Mulberry32 stream: the real system consumes
no random numbers in that order, so bit-identical data would buy nothing).

Texts. The coordinator stores and recalls *texts*; :class:`SyntheticEmbedder` maps each
known text to its vector. A fact's text is a unique id token (``fx0042``) and, for the
share of facts drawn as emotional, two or three affect words from a fixed pool. The
real emotional tagger (``mechanisms.emotional``) reads those words and assigns arousal
and valence, so emotion enters the run through the library's own tagger instead of a
number we set. Query texts are unique id tokens of another prefix (``qx0007``): no
query shares a word with a fact, so the BM25 half of hybrid recall finds nothing and
ranking is decided by the dense vectors (as in the paper, where it is cosine).

Ground truth is the set of facts a query was generated from; it is fixed before the
system sees anything and never depends on what is measured.

Texts the embedder has not been given (the extractive schemas that dual-process
consolidation writes, ``"Recurring pattern across 3 episodes: fx0042."``) are embedded
as the normalised mean of the vectors of the known id tokens they contain (an extractive
schema reads like the episodes it quotes), or, with no known token, as a unit vector
seeded by a hash of the text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "AFFECT_WORDS",
    "DIM",
    "SyntheticEmbedder",
    "Workload",
    "fact_text",
    "make_workload",
    "query_text",
    "unit_rows",
]

DIM = 32
# Affect words the emotional tagger recognises (arousal close to 1); two or three per emotional fact.
AFFECT_WORDS: tuple[str, ...] = (
    "terrified", "furious", "panic", "thrilled", "ecstatic", "amazing", "devastated", "heartbroken",
    "tragedy", "outraged", "horrified", "overjoyed", "wedding", "funeral", "disaster", "triumph",
)
_TOKEN = re.compile(r"[A-Za-z0-9]+")


def unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def fact_text(i: int) -> str:
    return f"fx{i:05d}"


def query_text(i: int) -> str:
    return f"qx{i:05d}"


@dataclass(frozen=True)
class Workload:
    """Facts, queries and their ground truth for one seed."""

    seed: int
    fact_vecs: np.ndarray  # (F, DIM) unit rows
    query_vecs: np.ndarray  # (Q, DIM) unit rows
    relevant: tuple[tuple[int, ...], ...]  # per query: indices of its relevant facts (1-3, distinct)
    emotional: np.ndarray  # (F,) bool: the fact's text carries affect words
    fact_texts: tuple[str, ...]
    query_texts: tuple[str, ...]
    importance: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (F,) U(0, 1), for the archetype test

    @property
    def n_facts(self) -> int:
        return len(self.fact_texts)

    @property
    def n_queries(self) -> int:
        return len(self.query_texts)

    def table(self) -> dict[str, np.ndarray]:
        out = dict(zip(self.fact_texts, self.fact_vecs))
        out.update(zip(self.query_texts, self.query_vecs))
        return out


def make_workload(
    seed: int, n_facts: int, n_queries: int, *, emotional_share: float = 0.2, noise: float = 0.1, max_relevant: int = 3
) -> Workload:
    """The paper's synthetic distributions, drawn with ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    facts = unit_rows(rng.uniform(-1.0, 1.0, size=(n_facts, DIM)))
    rel: list[tuple[int, ...]] = []
    queries = np.zeros((n_queries, DIM))
    for q in range(n_queries):
        k = 1 + int(rng.integers(max_relevant))
        idx = tuple(int(i) for i in rng.choice(n_facts, size=k, replace=False))
        rel.append(idx)
        queries[q] = facts[list(idx)].mean(axis=0) + rng.uniform(-noise, noise, size=DIM)
    queries = unit_rows(queries)
    emotional = rng.random(n_facts) < emotional_share
    importance = rng.random(n_facts)
    texts = []
    for i in range(n_facts):
        t = fact_text(i)
        if emotional[i]:
            words = rng.choice(len(AFFECT_WORDS), size=2 + int(rng.integers(2)), replace=False)
            t = t + " " + " ".join(AFFECT_WORDS[w] for w in words)
        texts.append(t)
    return Workload(
        seed=seed,
        fact_vecs=facts,
        query_vecs=queries,
        relevant=tuple(rel),
        emotional=emotional,
        fact_texts=tuple(texts),
        query_texts=tuple(query_text(q) for q in range(n_queries)),
        importance=importance,
    )


class SyntheticEmbedder:
    """An :class:`~zenbrain.providers.base.Embedder` over a fixed text -> vector table.

    Unknown texts: mean of the vectors of known single-token texts they contain (the id
    tokens), normalised; else a unit vector seeded by the text's SHA-256.
    """

    def __init__(self, table: dict[str, np.ndarray], dim: int = DIM, name: str = "synthetic") -> None:
        self.dim = int(dim)
        self.name = f"{name}-{self.dim}"
        self._table = {t: np.asarray(v, dtype=np.float32) for t, v in table.items()}
        self._by_token: dict[str, np.ndarray] = {}
        for t, v in self._table.items():
            head = t.split(" ", 1)[0]
            self._by_token.setdefault(head, v)

    def _unknown(self, text: str) -> np.ndarray:
        hits = [self._by_token[w] for w in _TOKEN.findall(text) if w in self._by_token]
        if hits:
            v = np.mean(hits, axis=0)
        else:
            h = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            v = np.random.default_rng(h).normal(size=self.dim)
        n = float(np.linalg.norm(v))
        return (v / n if n > 0 else v).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            v = self._table.get(t)
            out[i] = v if v is not None else self._unknown(t)
        return out
