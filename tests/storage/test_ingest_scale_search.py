"""Searching the vector index for many queries at once (a store's batch of new facts)
returns what searching for each query alone returns: the same ids in the same order,
and the same scores."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from zenbrain.errors import ValidationError
from zenbrain.model import Layer
from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore
from zenbrain.storage.vector_index import LAYER_CODES, PartitionIndex, Row

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_helpers import DIM, MODEL, P1, make_item, put, unit_rows

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # optional: only the bit-for-bit check needs it
    threadpool_limits = None


def seeded_index(n: int, dim: int = 48, seed: int = 0) -> tuple[PartitionIndex, np.ndarray]:
    """n unit rows, every third episodic, with a few exact duplicates (tied scores)."""
    rng = np.random.default_rng(seed)
    vecs = unit_rows(rng, n, dim)
    if n > 8:
        vecs[n // 2] = vecs[n // 3]
        vecs[n - 1] = vecs[n // 3]
    idx = PartitionIndex(dim)
    for i in range(n):
        layer = Layer.EPISODIC if i % 3 == 0 else Layer.SEMANTIC
        idx.upsert(Row(f"m{i}", vecs[i], layer, "ctx", None, False, "fact", float(i)))
    return idx, vecs


def queries_for(vecs: np.ndarray, m: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    near = vecs[rng.integers(0, len(vecs), m)] + 0.4 * rng.standard_normal((m, vecs.shape[1])).astype(np.float32)
    return np.vstack([near, vecs[[len(vecs) // 3, 0]]])  # two queries equal to stored rows


def assert_same(many: list, alone: list) -> None:
    assert len(many) == len(alone)
    for got, want in zip(many, alone):
        assert [mid for mid, _ in got] == [mid for mid, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 300, 1001, 5000])
@pytest.mark.parametrize("k", [1, 10, 400])
def test_search_many_returns_each_query_searched_alone(n, k):
    idx, vecs = seeded_index(n)
    queries = queries_for(vecs, 30)
    semantic = idx._layer[: idx.n] == LAYER_CODES[Layer.SEMANTIC]
    for mask in (np.ones(n, dtype=bool), semantic, np.zeros(n, dtype=bool)):
        many = idx.search_many(queries, k, mask)
        alone = [idx.search(q, k, mask) for q in queries]
        assert_same(many, alone)


@pytest.mark.skipif(threadpool_limits is None, reason="threadpoolctl is not installed")
@pytest.mark.parametrize("dim", [48, 384])
def test_with_one_blas_thread_the_scores_are_a_lone_search_s_to_the_bit(dim):
    """A multi-threaded BLAS may sum a few rows (where it splits the work) in another order."""
    with threadpool_limits(1):
        for n in (1, 2, 63, 64, 65, 129, 1000, 4097):
            idx, vecs = seeded_index(n, dim=dim, seed=n)
            queries = queries_for(vecs, 12)
            mask = np.ones(n, dtype=bool)
            assert idx.search_many(queries, 10, mask) == [idx.search(q, 10, mask) for q in queries]


def test_a_matrix_query_is_a_batch_of_searches():
    idx, vecs = seeded_index(200)
    queries = queries_for(vecs, 5)
    mask = np.ones(200, dtype=bool)
    assert_same(idx.search(queries, 7, mask), [idx.search(q, 7, mask) for q in queries])
    with pytest.raises(ValueError):
        idx.search(queries, 7, mask, per_layer=True)


def test_search_many_of_an_empty_index_or_no_queries():
    idx = PartitionIndex(8)
    assert idx.search_many(np.ones((3, 8), dtype=np.float32), 5, np.zeros(0, dtype=bool)) == [[], [], []]
    idx, _ = seeded_index(20, dim=8)
    assert idx.search_many(np.zeros((0, 8), dtype=np.float32), 5, np.ones(20, dtype=bool)) == []
    assert idx.search_many(np.ones((2, 8), dtype=np.float32), 0, np.ones(20, dtype=bool)) == [[], []]


def test_search_many_after_removals_and_with_rows_of_any_length():
    idx, vecs = seeded_index(700)
    for i in range(0, 700, 7):
        idx.remove(f"m{i}")
    idx.upsert(Row("long", 5.0 * vecs[3], Layer.SEMANTIC, "ctx", None, False, "fact", 0.0))
    mask = idx._alive[: idx.n].copy()
    queries = queries_for(vecs, 20) * 3.0
    assert_same(idx.search_many(queries, 10, mask), [idx.search(q, 10, mask) for q in queries])


def test_a_row_that_is_not_finite_is_ranked_as_a_lone_search_ranks_it():
    idx, vecs = seeded_index(100)
    idx.upsert(Row("bad", np.full(48, np.nan, dtype=np.float32), Layer.SEMANTIC, "ctx", None, False, "fact", 0.0))
    mask = idx._alive[: idx.n].copy()
    queries = queries_for(vecs, 4)
    assert_same(idx.search_many(queries, 10, mask), [idx.search(q, 10, mask) for q in queries])


def test_store_vector_search_many_equals_one_search_per_query(tmp_path):
    store = SQLiteStore(str(tmp_path / "s.db"), embedder_name=MODEL, dim=DIM)
    rng = np.random.default_rng(5)
    items = [make_item(P1, f"fact {i}", layer=Layer.SEMANTIC if i % 4 else Layer.EPISODIC) for i in range(400)]
    put(store, items, unit_rows(rng, 400))
    queries = unit_rows(rng, 25)
    flt = Filter(layers=frozenset({Layer.SEMANTIC}), contexts=frozenset({"default"}))
    many = store.vector_search_many(P1, queries, 10, flt)
    assert_same(many, [store.vector_search(P1, q, 10, flt) for q in queries])
    assert all(len(r) == 10 for r in many)
    assert store.vector_search_many(P1, queries[:0], 10, flt) == []
    with pytest.raises(ValidationError):
        store.vector_search_many(P1, queries[0], 10, flt)
    store.close()


@pytest.mark.skipif(threadpool_limits is None, reason="threadpoolctl is not installed")
def test_tied_scores_rank_by_row_whatever_the_partitioning():
    """Ten copies of one row among others: the k best take the first copies, in row order.
    (One BLAS thread: a multi-threaded one may score copies a rounding apart.)"""
    with threadpool_limits(1):
        _tied_copies()


def _tied_copies() -> None:
    idx, vecs = seeded_index(3000, seed=7)
    copies = [5, 17, 400, 401, 999, 1500, 2047, 2048, 2500, 2999]
    for i in copies:
        idx.upsert(Row(f"m{i}", vecs[5], Layer.SEMANTIC, "ctx", None, False, "fact", 0.0))
    mask = np.ones(idx.n, dtype=bool)
    for k in (3, 10, 12):
        alone = idx.search(vecs[5], k, mask)
        assert [mid for mid, _ in alone][: min(k, 10)] == [f"m{i}" for i in copies][: min(k, 10)]
        assert idx.search_many(vecs[[5, 5]], k, mask) == [alone, alone]


def test_the_index_keeps_every_row_as_it_grows():
    idx, vecs = seeded_index(5000, dim=16, seed=3)  # grows from 1024 rows three times
    assert idx._vecs.shape[0] >= 5000
    assert np.array_equal(idx._vecs[:5000], vecs)
    assert [idx.vector(f"m{i}") is not None for i in (0, 1023, 1024, 4999)] == [True] * 4
    assert not idx._alive[5000:].any()


@pytest.mark.skipif(threadpool_limits is None, reason="threadpoolctl is not installed")
def test_with_one_blas_thread_windows_score_every_row_as_a_lone_search():
    with threadpool_limits(1):
        for n in (1, 64, 65, 1000, 4097):
            idx, vecs = seeded_index(n, dim=384, seed=n)
            assert idx._windows_agree(queries_for(vecs, 2))


def test_close_scores_send_a_query_to_a_lone_search_when_windows_may_disagree(monkeypatch):
    """Rows at exactly equal and at nearly equal scores (a copy scaled by 1 + 1e-7)."""
    idx, vecs = seeded_index(2000, seed=9)
    for i, f in ((700, 1.0), (701, 1.0 + 1e-7), (1300, 1.0 - 1e-7)):
        idx.upsert(Row(f"m{i}", vecs[11] * np.float32(f), Layer.SEMANTIC, "ctx", None, False, "fact", 0.0))
    queries = np.vstack([queries_for(vecs, 20), vecs[[11]]])
    mask = np.ones(idx.n, dtype=bool)
    alone = [idx.search(q, 10, mask) for q in queries]
    calls = []
    search = PartitionIndex.search
    monkeypatch.setattr(PartitionIndex, "search", lambda self, *a, **kw: calls.append(1) or search(self, *a, **kw))
    for agree in (True, False):
        monkeypatch.setattr(PartitionIndex, "_windows_agree", lambda self, probes, agree=agree: agree)
        calls.clear()
        assert_same(idx.search_many(queries, 10, mask), alone)
        assert (len(calls) > 0) is (not agree)


def test_layer_mask_by_lookup_table_equals_isin():
    from zenbrain.storage.vector_index import _layer_table

    rng = np.random.default_rng(11)
    codes = rng.integers(0, len(LAYER_CODES), size=1000).astype(np.int8)
    layers = list(LAYER_CODES)
    for r in range(len(layers) + 1):
        chosen = [layers[i] for i in rng.choice(len(layers), size=r, replace=False)]
        want = np.isin(codes, np.array([LAYER_CODES[x] for x in chosen], dtype=np.int8))
        assert np.array_equal(_layer_table(chosen)[codes], want)
