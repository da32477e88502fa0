"""put_edges checks whole columns at once: the check agrees with checking every value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zenbrain.storage.sqlite import _as_int, _as_real, _as_text, _reads_back, _Unsure

SAMPLES = {
    _as_real: [0.5, -0.0, 0.0, float("nan"), float("inf"), -float("inf"), 1e308, 1e308, -1e-300, 3.0],
    _as_text: ["a", "", "b", 1, None, b"x"],
    _as_int: [0, 1, -5, 2**40, True, 1.0],
}


def value_by_value(values, check) -> bool:
    try:
        for v in values:
            out = check(v)
            if out is not v and not (type(out) is float and type(v) is float and out == v):
                return False
    except _Unsure:
        return False
    return True


@pytest.mark.parametrize("check", list(SAMPLES))
def test_column_check_equals_value_by_value(check):
    rng = np.random.default_rng(0)
    pool = SAMPLES[check]
    for _ in range(400):
        values = [pool[i] for i in rng.integers(0, len(pool), int(rng.integers(0, 6)))]
        assert _reads_back(values, check) is value_by_value(values, check), values


def test_overflowing_sum_falls_back_to_values():
    assert _reads_back([1e308, 1e308], _as_real)
    assert math.isinf(sum([1e308, 1e308]))


def test_partition_edges_from_the_cache_in_primary_key_order():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from storage_helpers import DIM, MODEL, P1

    from zenbrain.model import Edge
    from zenbrain.storage.sqlite import SQLiteStore

    names = ["a", "B", "z", "é", "ÿ", "Ω", "中", "\U0001f600", "a\x00b", "", "ab", "a b"]
    rng = np.random.default_rng(3)
    edges = [Edge(str(rng.choice(names)), str(rng.choice(names)), str(rng.choice(["r", "R", "é"])), float(i), 1.0, i, 0.0)
             for i in range(200)]
    store = SQLiteStore(":memory:", embedder_name=MODEL, dim=DIM)
    with store.transaction() as tx:
        tx.put_edges(P1, edges)
    store.edges_among(P1, names)  # the partition's adjacency is now cached
    assert P1 in store._edge_adj
    cached = store.edges(P1)
    store._item_cache_size = 0
    assert repr(cached) == repr(store.edges(P1))


def test_put_back_leaves_what_remembering_one_by_one_leaves():
    from zenbrain.storage.sqlite import SQLiteStore

    rng = np.random.default_rng(9)
    for _ in range(200):
        size = int(rng.integers(0, 6))
        a = SQLiteStore(":memory:", embedder_name="m", dim=4, item_cache_size=size)
        b = SQLiteStore(":memory:", embedder_name="m", dim=4, item_cache_size=size)
        old = [object() for _ in range(size)]
        for store in (a, b):
            for i in range(size):
                store._items[f"old{i}"] = old[i]
        entries = {f"k{int(j)}": (None if rng.random() < 0.3 else object()) for j in rng.integers(0, 8, int(rng.integers(0, 8)))}
        a._put_back(entries)
        for mid, e in entries.items():
            if e is not None:
                b._remember(mid, e)
        assert list(a._items.items()) == list(b._items.items())
