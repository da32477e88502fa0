"""Reference retrieval systems: BM25, dense cosine, their RRF fusion, and no memory.

All implement ``RetrievalSystem`` from ``bench.base``. Results are deterministic: ties in
score are broken by insertion order.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..providers.base import Embedder, embed_queries, normalize_rows
from .base import Doc

__all__ = [
    "BM25System",
    "DenseSystem",
    "HybridRRFSystem",
    "NoMemorySystem",
    "bm25_tokenize",
    "top_k_indices",
]


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; equal scores keep index order."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        # Everything strictly above the k-th value, plus enough of the ties at it.
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -scores[cand]))
    return cand[order][:k]


# --------------------------------------------------------------------------- BM25

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def _load_stopwords(name: str | Sequence[str] | None) -> frozenset[str]:
    if name is None:
        return frozenset()
    if not isinstance(name, str):
        return frozenset(w.lower() for w in name)
    from bm25s import stopwords as sw

    table = {
        "en": sw.STOPWORDS_EN,
        "english": sw.STOPWORDS_EN,
        "en_plus": sw.STOPWORDS_EN_PLUS,
    }
    if name not in table:
        raise ValueError(f"unknown stopword list {name!r}; use 'en', 'en_plus', a list, or None")
    return frozenset(table[name])


def _load_stemmer(stem: bool):  # -> Callable[[list[str]], list[str]] | None
    if not stem:
        return None
    try:
        import Stemmer  # PyStemmer
    except ImportError:
        return None
    stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWords


def bm25_tokenize(text: str, stopwords: frozenset[str], stem_words=None) -> list[str]:
    """Lowercase word tokens (2+ characters), stopwords removed, optionally stemmed."""
    words = [w for w in _TOKEN.findall(text.lower()) if w not in stopwords]
    if stem_words is not None and words:
        words = stem_words(words)
    return words


class BM25System:
    """Okapi BM25 over ``bm25s`` (Lucene variant by default).

    Tokens: lowercase words of two or more characters, English stopwords removed, Snowball
    English stemming when PyStemmer is installed. The index is rebuilt lazily on the
    first search after ``add``. Documents that share no term with the query are not returned.
    """

    def __init__(
        self,
        name: str = "bm25",
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | Sequence[str] | None = "en",
        stem: bool = True,
    ) -> None:
        self.name = name
        self.k1 = k1
        self.b = b
        self.method = method
        self._stopwords = _load_stopwords(stopwords)
        self._stem = _load_stemmer(stem)
        self.stemmed = self._stem is not None
        self._ids: list[str] = []
        self._tokens: list[list[str]] = []
        self._vocab: set[str] = set()
        self._index = None
        self._dirty = False

    def tokenize(self, text: str) -> list[str]:
        return bm25_tokenize(text, self._stopwords, self._stem)

    def reset(self) -> None:
        self._ids = []
        self._tokens = []
        self._vocab = set()
        self._index = None
        self._dirty = False

    def add(self, docs: Sequence[Doc]) -> None:
        for d in docs:
            toks = self.tokenize(d.text)
            self._ids.append(d.id)
            self._tokens.append(toks)
            self._vocab.update(toks)
        if docs:
            self._dirty = True

    def _build(self) -> Any:
        """The BM25 index of the stored docs, built anew and kept (bm25s ships no types)."""
        import bm25s

        index = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        index.index(self._tokens, show_progress=False)
        self._index = index
        self._dirty = False
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every stored doc for ``query`` (insertion order)."""
        if not self._ids:
            return np.zeros(0, dtype=np.float32)
        index = self._index
        if self._dirty or index is None:
            index = self._build()
        q = [t for t in self.tokenize(query) if t in self._vocab]
        if not q:
            return np.zeros(len(self._ids), dtype=np.float32)
        return np.asarray(index.get_scores(q), dtype=np.float32)

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        s = self.scores(query)
        if s.size == 0 or k <= 0:
            return []
        idx = top_k_indices(s, k)
        return [self._ids[i] for i in idx if s[i] > 0]

    def close(self) -> None:
        self.reset()


# --------------------------------------------------------------------------- dense


class DenseSystem:
    """Cosine similarity over unit-length float32 embeddings (exact, numpy).

    One ``embed`` call per ``add``; queries go through ``embed_query`` where the embedder
    tells queries from stored texts (e5), and their vectors are kept in a small LRU cache.
    """

    def __init__(self, embedder: Embedder, name: str | None = None, *, query_cache_size: int = 4096) -> None:
        self.embedder = embedder
        self.name = name or f"dense:{embedder.name}"
        self._cache_size = query_cache_size
        self._qcache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._ids: list[str] = []
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def reset(self) -> None:
        self._ids = []
        self._blocks = []
        self._matrix = None

    def add(self, docs: Sequence[Doc]) -> None:
        if not docs:
            return
        vecs = normalize_rows(np.asarray(self.embedder.embed([d.text for d in docs]), dtype=np.float32))
        if vecs.shape[0] != len(docs):
            raise ValueError(f"embedder returned {vecs.shape[0]} vectors for {len(docs)} texts")
        self._blocks.append(vecs)
        self._ids.extend(d.id for d in docs)
        self._matrix = None

    def _query_vector(self, query: str) -> np.ndarray:
        v = self._qcache.get(query)
        if v is not None:
            self._qcache.move_to_end(query)
            return v
        v = normalize_rows(np.asarray(embed_queries(self.embedder, [query]), dtype=np.float32))[0]
        if self._cache_size > 0:
            self._qcache[query] = v
            if len(self._qcache) > self._cache_size:
                self._qcache.popitem(last=False)
        return v

    def scores(self, query: str) -> np.ndarray:
        """Cosine of every stored doc with ``query`` (insertion order)."""
        if not self._ids:
            return np.zeros(0, dtype=np.float32)
        if self._matrix is None:
            self._matrix = self._blocks[0] if len(self._blocks) == 1 else np.concatenate(self._blocks, axis=0)
            self._blocks = [self._matrix]
        return self._matrix @ self._query_vector(query)

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        s = self.scores(query)
        if s.size == 0 or k <= 0:
            return []
        return [self._ids[i] for i in top_k_indices(s, k)]

    def close(self) -> None:
        self.reset()
        self._qcache.clear()


# --------------------------------------------------------------------------- fusion


class HybridRRFSystem:
    """Reciprocal rank fusion of a BM25 and a dense system: score = sum 1/(k + rank).

    Each component contributes its top ``max(candidates, k_requested)`` ids; ranks are
    1-based. Equal fused scores are ordered by first appearance (BM25 list first).
    """

    def __init__(
        self,
        bm25: BM25System,
        dense: DenseSystem,
        k: int = 60,
        *,
        candidates: int = 50,
        name: str | None = None,
    ) -> None:
        self.bm25 = bm25
        self.dense = dense
        self.rrf_k = k
        self.candidates = candidates
        self.name = name or f"hybrid-rrf({bm25.name}+{dense.name})"

    def reset(self) -> None:
        self.bm25.reset()
        self.dense.reset()

    def add(self, docs: Sequence[Doc]) -> None:
        self.bm25.add(docs)
        self.dense.add(docs)

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        if k <= 0:
            return []
        depth = max(self.candidates, k)
        fused: dict[str, float] = {}
        for ranking in (
            self.bm25.search(query, depth, query_time=query_time),
            self.dense.search(query, depth, query_time=query_time),
        ):
            for rank, doc_id in enumerate(ranking, start=1):
                fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (self.rrf_k + rank)
        order = sorted(enumerate(fused.items()), key=lambda t: (-t[1][1], t[0]))
        return [doc_id for _, (doc_id, _) in order[:k]]

    def close(self) -> None:
        self.bm25.close()
        self.dense.close()


class NoMemorySystem:
    """Remembers nothing; every search returns an empty list (the floor of every metric)."""

    def __init__(self, name: str = "no-memory") -> None:
        self.name = name

    def reset(self) -> None:
        pass

    def add(self, docs: Sequence[Doc]) -> None:
        pass

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        return []

    def close(self) -> None:
        pass
