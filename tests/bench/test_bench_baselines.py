from __future__ import annotations

import numpy as np
import pytest

from zenbrain.bench.base import Doc, RetrievalSystem
from zenbrain.bench.baselines import (
    BM25System,
    DenseSystem,
    HybridRRFSystem,
    NoMemorySystem,
    bm25_tokenize,
    top_k_indices,
)
from zenbrain.providers.hashing import HashingEmbedder

CORPUS = [
    Doc("d1", "Alice adopted a golden retriever puppy named Biscuit."),
    Doc("d2", "Bob is learning to play the violin every evening."),
    Doc("d3", "The weather in Lisbon was sunny and warm."),
    Doc("d4", "Alice runs a marathon in Berlin next spring."),
    Doc("d5", ""),
]


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.name = "counting"
        self.dim = 64
        self.calls: list[int] = []

    def embed(self, texts):
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def test_top_k_indices_order_and_ties():
    s = np.array([0.1, 0.5, 0.5, 0.9, 0.5], dtype=np.float32)
    assert top_k_indices(s, 3).tolist() == [3, 1, 2]
    assert top_k_indices(s, 10).tolist() == [3, 1, 2, 4, 0]
    assert top_k_indices(s, 0).tolist() == []
    assert top_k_indices(np.zeros(0), 3).tolist() == []


def test_bm25_tokenize():
    assert bm25_tokenize("The Cats are RUNNING, a b!", frozenset({"the", "are"})) == ["cats", "running"]


def test_bm25_search_stemming_and_lazy_rebuild():
    bm = BM25System()
    assert isinstance(bm, RetrievalSystem)
    assert bm.search("anything", 3) == []
    bm.add(CORPUS)
    assert bm.search("violin lessons", 3) == ["d2"]
    if bm.stemmed:
        assert bm.search("running", 3) == ["d4"]  # runs / running share a stem
    assert bm.search("Alice", 5) == ["d1", "d4"] or bm.search("Alice", 5) == ["d4", "d1"]
    assert bm.search("the and of", 5) == []  # stopwords only
    assert bm.search("zebra", 5) == []
    bm.add([Doc("d6", "A zebra escaped from the zoo.")])
    assert bm.search("zebra", 5) == ["d6"]  # index rebuilt after add
    assert bm.search("violin", 0) == []
    bm.reset()
    assert bm.search("violin", 3) == []
    bm.close()


def test_bm25_options():
    bm = BM25System(stopwords=None, stem=False)
    bm.add(CORPUS)
    assert bm.search("running", 3) == []
    assert "the" in bm.tokenize("the violin")
    with pytest.raises(ValueError):
        BM25System(stopwords="klingon")
    custom = BM25System(stopwords=["violin"])
    custom.add(CORPUS)
    assert custom.search("violin", 3) == []


def test_dense_batches_and_caches():
    emb = CountingEmbedder()
    dense = DenseSystem(emb, query_cache_size=2)
    assert dense.name == "dense:counting"
    assert isinstance(dense, RetrievalSystem)
    assert dense.search("violin", 3) == []
    dense.add(CORPUS)
    assert emb.calls == [5]  # one call for the whole add
    assert dense.search(CORPUS[1].text, 1) == ["d2"]
    assert dense.search(CORPUS[1].text, 3)[0] == "d2"
    assert emb.calls == [5, 1]  # the second identical query is cached
    dense.search("q1", 1)
    dense.search("q2", 1)
    dense.search(CORPUS[1].text, 1)  # evicted by the LRU of size 2
    assert emb.calls == [5, 1, 1, 1, 1]
    dense.add([Doc("d6", "A zebra escaped from the zoo.")])
    assert dense.search("A zebra escaped from the zoo.", 1) == ["d6"]
    assert len(dense.search("anything", 100)) == 6
    s = dense.scores("zebra zoo")
    assert s.dtype == np.float32 and s.shape == (6,) and np.all(s <= 1.0001)
    dense.reset()
    assert dense.search("zebra", 3) == []
    dense.add([])
    assert emb.calls[-1] == 1  # empty add does not call the embedder


class FixedSystem:
    def __init__(self, name, ranking):
        self.name = name
        self.ranking = ranking
        self.added = 0

    def reset(self):
        self.added = 0

    def add(self, docs):
        self.added += len(docs)

    def search(self, query, k, *, query_time=None):
        return self.ranking[:k]

    def close(self):
        pass


def test_hybrid_rrf_fusion_by_hand():
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    hy = HybridRRFSystem(FixedSystem("b", ["a", "b", "c"]), FixedSystem("d", ["c", "a", "d"]), k=60, name="h")
    assert hy.search("q", 4) == ["a", "c", "b", "d"]
    assert hy.search("q", 2) == ["a", "c"]
    assert hy.search("q", 0) == []
    # equal fused scores keep first appearance (first component first)
    tie = HybridRRFSystem(FixedSystem("b", ["x"]), FixedSystem("d", ["y"]))
    assert tie.search("q", 2) == ["x", "y"]
    hy.add(CORPUS)
    assert hy.bm25.added == 5 and hy.dense.added == 5


def test_hybrid_real_components():
    hy = HybridRRFSystem(BM25System(), DenseSystem(HashingEmbedder(64)))
    assert isinstance(hy, RetrievalSystem)
    hy.add(CORPUS)
    assert hy.search("violin evening", 2)[0] == "d2"
    assert len(hy.search("violin", 5)) == 5
    hy.reset()
    assert hy.search("violin", 5) == []
    hy.close()


def test_no_memory():
    nm = NoMemorySystem()
    assert isinstance(nm, RetrievalSystem)
    nm.reset()
    nm.add(CORPUS)
    assert nm.search("violin", 5) == []
    nm.close()
