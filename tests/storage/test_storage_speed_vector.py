"""The vector index's shortcuts give what the general computation gives: top k by one
sort of the allowed rows (per layer too), masks kept per filter until the rows change,
string filters by lookup table, and the change-log look skipped when nothing changed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from zenbrain.model import Layer
from zenbrain.storage import vector_index
from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore
from zenbrain.storage.vector_index import PartitionIndex, Row

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_helpers import DIM, MODEL, P1, make_item, put, unit_rows

LAYERS = (Layer.SEMANTIC, Layer.EPISODIC, Layer.WORKING, Layer.PROCEDURAL)


def reference_top(ids: list[str], sims: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The general top k: the k best rows by partition, ties by row, finite scores only."""
    valid = int(np.isfinite(sims).sum())
    k = min(k, valid)
    if k <= 0:
        return []
    if k < len(sims):
        neg = -sims
        kth = np.partition(neg, k - 1)[k - 1]
        above = np.flatnonzero(neg < kth)
        at = np.flatnonzero(neg == kth)[: k - len(above)]
        idx = np.union1d(above, at)
    else:
        idx = np.arange(len(sims))
    idx = idx[np.argsort(-sims[idx], kind="stable")]
    return [(ids[i], float(sims[i])) for i in idx if np.isfinite(sims[i])]


def reference_search(idx: PartitionIndex, query: np.ndarray, k: int, mask: np.ndarray, per_layer: bool):
    n = idx.n
    if n == 0 or k <= 0:
        return []
    sims = np.where(mask, idx._vecs[:n] @ np.asarray(query, dtype=np.float32), -np.inf)
    if not per_layer:
        return reference_top(idx.ids, sims, k)
    out = []
    for code in np.unique(idx._layer[:n][mask]):
        out.extend(reference_top(idx.ids, np.where(idx._layer[:n] == code, sims, -np.inf), k))
    return out


def random_index(rng: np.random.Generator, n: int, dim: int = 8, *, ties: bool = True) -> PartitionIndex:
    vecs = unit_rows(rng, n, dim)
    if ties and n > 4:
        # Duplicate rows and coarse values give many equal scores.
        vecs = np.round(vecs * 2) / 2
        vecs[rng.integers(0, n, n // 4)] = vecs[0]
    idx = PartitionIndex(dim)
    for i in range(n):
        layer = LAYERS[int(rng.integers(0, len(LAYERS)))]
        idx.upsert(Row(f"m{i}", vecs[i], layer, f"c{i % 3}", None, bool(i % 7 == 0), "fact", float(i)))
    return idx


@pytest.mark.parametrize("seed", range(40))
def test_search_equals_general_top_k(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 5, 30, 300]))
    idx = random_index(rng, n)
    for _ in range(6):
        mask = rng.random(n) < rng.choice([0.0, 0.3, 1.0])
        q = np.round(unit_rows(rng, 1, idx.dim)[0] * 2) / 2
        for k in (0, 1, 3, 10, n + 2):
            for per_layer in (False, True):
                assert idx.search(q, k, mask, per_layer=per_layer) == reference_search(idx, q, k, mask, per_layer)


@pytest.mark.parametrize("bad", [np.nan, 3e38, -3e38])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_search_with_non_finite_scores_equals_general_top_k(bad):
    """NaN scores, and scores overflowing to +inf or -inf."""
    rng = np.random.default_rng(3)
    idx = random_index(rng, 50)
    q = np.abs(unit_rows(rng, 1, idx.dim)[0])
    idx._vecs[[4, 9, 30]] = bad
    mask = np.ones(50, dtype=bool)
    for k in (1, 5, 48, 60):
        for per_layer in (False, True):
            assert idx.search(q, k, mask, per_layer=per_layer) == reference_search(idx, q, k, mask, per_layer)


def test_large_selection_uses_general_path_and_agrees(monkeypatch):
    monkeypatch.setattr(vector_index, "_SMALL", 10)
    rng = np.random.default_rng(5)
    idx = random_index(rng, 200)
    mask = rng.random(200) < 0.8
    q = unit_rows(rng, 1, idx.dim)[0]
    for per_layer in (False, True):
        assert idx.search(q, 7, mask, per_layer=per_layer) == reference_search(idx, q, 7, mask, per_layer)


def test_string_filters_by_table_equal_isin():
    rng = np.random.default_rng(8)
    idx = random_index(rng, 120)
    for contexts in (frozenset(), frozenset({"c0"}), frozenset({"c1", "c2", "nowhere"})):
        m = idx.mask(layers=None, contexts=contexts, session_id=None, include_archived=True, all_sessions=True)
        want = np.isin(idx._ctx[: idx.n], [idx.codes[c] for c in contexts if c in idx.codes])
        assert np.array_equal(m, want & idx._alive[: idx.n])
    m = idx.mask(layers=None, contexts=None, session_id=None, include_archived=True, all_sessions=True,
                 kinds=frozenset({"fact", "other"}))
    assert m.sum() == idx.n


def test_cached_mask_follows_every_change():
    rng = np.random.default_rng(2)
    idx = random_index(rng, 40)
    args = dict(layers=None, contexts=frozenset({"c1"}), session_id=None, include_archived=False)
    first = idx.cached_mask("f", **args)
    assert idx.cached_mask("f", **args) is first
    assert not first.flags.writeable
    idx.upsert(Row("m1", unit_rows(rng, 1, idx.dim)[0], Layer.SEMANTIC, "c2", None, False, "fact", 1.0))
    second = idx.cached_mask("f", **args)
    assert np.array_equal(second, idx.mask(**args)) and not np.array_equal(first, second)
    idx.remove("m4")
    assert np.array_equal(idx.cached_mask("f", **args), idx.mask(**args))
    # An unhashable key is never kept.
    assert np.array_equal(idx.cached_mask({"f"}, **args), idx.mask(**args))


def test_store_search_sees_writes_between_equal_searches():
    """The same filter searched before and after writes (in-memory store: the change log
    is skipped only when the connection changed nothing)."""
    rng = np.random.default_rng(4)
    store = SQLiteStore(":memory:", embedder_name=MODEL, dim=DIM)
    items = [make_item(P1, content=f"fact {i}", layer=LAYERS[i % 2]) for i in range(30)]
    vecs = unit_rows(rng, 30, DIM)
    put(store, items, vecs)
    q = vecs[3]
    flt = Filter(contexts=frozenset({"default"}))
    before = store.vector_search(P1, q, 5, flt, per_layer=True)
    assert store.vector_search(P1, q, 5, Filter(contexts=frozenset({"default"})), per_layer=True) == before
    with store.transaction() as tx:
        tx.update_columns(P1, [items[3].id], archived=[True])
    after = store.vector_search(P1, q, 5, flt, per_layer=True)
    assert items[3].id in [m for m, _ in before] and items[3].id not in [m for m, _ in after]
    with store.transaction() as tx:
        tx.update_columns(P1, [items[3].id], archived=[False])
    assert store.vector_search(P1, q, 5, flt, per_layer=True) == before


def test_in_memory_store_search_sees_a_raw_write_to_the_change_log():
    rng = np.random.default_rng(6)
    store = SQLiteStore(":memory:", embedder_name=MODEL, dim=DIM)
    items = [make_item(P1, content=f"fact {i}") for i in range(10)]
    vecs = unit_rows(rng, 10, DIM)
    put(store, items, vecs)
    assert store.vector_search(P1, vecs[2], 1) == [(items[2].id, pytest.approx(1.0, abs=1e-6))]
    assert store.vector_search(P1, vecs[2], 1)[0][0] == items[2].id  # nothing changed: no look at the log
    db = store.raw_connection()
    db.execute("DELETE FROM memories WHERE id=?", (items[2].id,))
    db.execute("INSERT INTO changes (user_id, agent_id, memory_id) VALUES (?,?,?)", (*P1, items[2].id))
    assert items[2].id not in [m for m, _ in store.vector_search(P1, vecs[2], 3)]
