"""The SQLite store keeps a partition's edges in memory for edges_among: every answer must
be exactly what reading the edges table returns, whoever wrote it and however."""

from __future__ import annotations

import numpy as np
import pytest
from item_cache_helpers import Boom, open_store
from storage_helpers import P1, P2, T0, make_item, put

from zenbrain.model import Edge

IDS = [f"m{i}" for i in range(6)]


@pytest.fixture
def loc(tmp_path):
    return str(tmp_path / "edges.db")


def _sql_among(store, part, ids):
    """edges_among as the file answers it (the cache bypassed), in the store's own connection."""
    size, store._item_cache_size = store._item_cache_size, 0
    try:
        return store.edges_among(part, ids)
    finally:
        store._item_cache_size = size


def _sql_edges(store, part):
    """edges(part) as the file answers it, in the store's own connection."""
    size, store._item_cache_size = store._item_cache_size, 0
    try:
        return store.edges(part)
    finally:
        store._item_cache_size = size


def _check(store, subsets):
    for part in (P1, P2):
        # A partition's edges from the cache: the same rows in the same (primary key) order.
        assert repr(store.edges(part)) == repr(_sql_edges(store, part)), part
        for ids in subsets:
            got = store.edges_among(part, ids)
            assert repr(got) == repr(_sql_among(store, part, ids)), (part, ids)


SUBSETS = [IDS, IDS[:3], IDS[2:], ["m5", "m0", "nope"], []]


def _seed(store):
    put(store, [make_item(P1, f"memory {i}", id=mid) for i, mid in enumerate(IDS)])  # edges of P2 have none
    with store.transaction() as tx:
        for part in (P1, P2):
            tx.put_edges(part, [Edge(a, b, "co_recall", 0.5, 1.0, 1, T0) for a in IDS for b in IDS if a < b])


def _random_edge(rng):
    a, b = (IDS[int(j)] for j in rng.choice(len(IDS), 2, replace=False))
    w = [0.25, -0.0, 1, np.float64(0.75), 1e300, 0.0][int(rng.integers(6))]
    return Edge(a, b, ["co_recall", "similar"][int(rng.integers(2))], w, float(rng.random()), int(rng.integers(5)),
                [T0, int(T0), T0 + 0.5][int(rng.integers(3))])


def _random_write(rng, tx):
    op = int(rng.integers(5))
    part = P1 if rng.random() < 0.8 else P2
    if op == 0 or op == 1:
        tx.put_edges(part, [_random_edge(rng) for _ in range(int(rng.integers(1, 4)))])
    elif op == 2:
        e = _random_edge(rng)
        tx.delete_edges(part, [(e.src, e.dst, e.relation), ("x", "y", "z")])
    elif op == 3:
        mid = IDS[int(rng.integers(len(IDS)))]
        tx.delete_memory(part, mid)  # its edges go with it
        if part == P1:
            tx.put_memory(make_item(part, f"again {rng.random()}", id=mid))
    else:
        tx.update_columns(part, IDS[:2], strength=[0.1, 0.2])  # not an edge write


@pytest.mark.parametrize("where", ["file", "memory"])
def test_random_edge_writes_from_everywhere_never_show_a_stale_edge(loc, where):
    rng = np.random.default_rng(7)
    store = open_store(loc if where == "file" else ":memory:")
    other = open_store(loc) if where == "file" else store
    try:
        _seed(store)
        _check(store, SUBSETS)
        for step in range(150):
            kind = rng.random()
            if kind < 0.45:
                with store.transaction() as tx:
                    for _ in range(int(rng.integers(1, 4))):
                        _random_write(rng, tx)
                        if rng.random() < 0.3:
                            _check(store, SUBSETS[:2])  # inside the transaction
            elif kind < 0.6:
                with pytest.raises(Boom), store.transaction() as tx:
                    _random_write(rng, tx)
                    _check(store, SUBSETS[:1])
                    raise Boom()
            elif kind < 0.75:
                with other.transaction() as tx:
                    _random_write(rng, tx)
            elif kind < 0.85:
                store.raw_connection().execute(
                    "UPDATE edges SET weight=? WHERE src=?", (float(rng.random()), IDS[step % len(IDS)]))
            else:
                try:  # a write that fails half way inside a transaction the caller keeps
                    with store.transaction() as tx:
                        try:
                            tx.put_edges(P1, [_random_edge(rng), Edge("m0", "m1", "bad", float("nan"), 1.0, 1, T0)])
                        except Exception:  # noqa: BLE001, S110 - any failure: the state after it is checked
                            pass
                        _check(store, SUBSETS[:1])
                except Exception:  # noqa: BLE001, S110 - any failure: the state after it is checked
                    pass
            _check(store, SUBSETS)
    finally:
        for s in {id(x): x for x in (store, other)}.values():
            s.close()


def test_values_that_read_back_otherwise_are_not_cached_as_written(loc):
    store = open_store(loc)
    try:
        _seed(store)
        _check(store, SUBSETS)  # cached
        with store.transaction() as tx:
            tx.put_edges(P1, [Edge("m0", "m1", "co_recall", -0.0, 2, np.int64(3), int(T0)),
                              Edge("m1", "m2", "new", np.float32(0.1), 1.0, True, T0)])
            _check(store, SUBSETS)
        _check(store, SUBSETS)
        w = [e.weight for e in store.edges_among(P1, ["m0", "m1"]) if e.relation == "co_recall" and e.src == "m0"]
        assert repr(w) == "[0.0]"
    finally:
        store.close()


def test_a_large_partition_and_many_partitions(loc, monkeypatch):
    store = open_store(loc)
    try:
        _seed(store)
        monkeypatch.setattr(store, "EDGE_CACHE_MAX_EDGES", 5)
        _check(store, SUBSETS)
        assert P1 in store._edge_big and not store._edge_adj
        monkeypatch.setattr(store, "EDGE_CACHE_MAX_EDGES", 1000)
        monkeypatch.setattr(store, "EDGE_CACHE_PARTITIONS", 1)
        store._edge_big.clear()
        _check(store, SUBSETS)
        assert len(store._edge_adj) == 1
        with store.transaction() as tx:
            tx.put_edges(P2, [Edge("m0", "m5", "x", 1.0, 1.0, 1, T0)])
            tx.put_edges(P1, [Edge("m0", "m5", "x", 1.0, 1.0, 1, T0)])
        assert len(store._edge_adj) == 1
        _check(store, SUBSETS)
    finally:
        store.close()


def test_a_cache_switched_off_reads_the_file(loc):
    store = open_store(loc, item_cache_size=0)
    try:
        _seed(store)
        assert store.edges_among(P1, IDS) == _sql_among(store, P1, IDS)
        assert not store._edge_adj
    finally:
        store.close()
