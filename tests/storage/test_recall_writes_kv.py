"""kv_get_many and kv_put_many: one statement for several kv_get / kv_put calls, with the
same result."""

from __future__ import annotations

import math

import numpy as np
from storage_helpers import P1, P2

VALUES = {
    "dict": {"a": [1, 2.5, "x"], "b": None},
    "list": [1, 2, 3],
    "num": 3.25,
    "text": "hello",
    "flag": True,
    "numpy": {"x": np.float64(0.5), "n": np.int64(7)},
    "nan": [float("nan"), 1.0],
    "empty": {},
    "zero": 0,
}


def _same(a, b) -> bool:
    """Equality that counts NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def test_kv_put_many_reads_as_one_kv_put_each(store):
    with store.transaction() as tx:
        tx.kv_put_many(P1, VALUES)
        tx.kv_put_many(P1, {})
        for k, v in VALUES.items():
            tx.kv_put(P2, k, v)
    for k in VALUES:
        assert _same(store.kv_get(P1, k), store.kv_get(P2, k)), k
    with store.transaction() as tx:
        tx.kv_put_many(P1, {"num": 4, "new": [None]})
    assert store.kv_get(P1, "num") == 4
    assert store.kv_get(P1, "new") == [None]
    assert store.kv_get(P2, "num") == 3.25
    assert store.kv_get(P2, "new") is None


def test_kv_put_many_rolls_back_with_its_transaction(store):
    try:
        with store.transaction() as tx:
            tx.kv_put_many(P1, {"a": 1, "b": 2})
            raise RuntimeError
    except RuntimeError:
        pass
    assert store.kv_get_many(P1, ["a", "b"]) == {}


def test_kv_get_many_equals_kv_get_of_each_key(store):
    with store.transaction() as tx:
        for k, v in VALUES.items():
            tx.kv_put(P1, k, v)
        tx.kv_put(P2, "only_p2", 1)
    keys = [*VALUES, "missing", "only_p2", "num", "dict"]  # unset, another partition's, repeated
    got = store.kv_get_many(P1, keys)
    assert set(got) == set(VALUES)
    for k in keys:
        if k in got:
            assert _same(got[k], store.kv_get(P1, k)), k
        else:
            assert store.kv_get(P1, k) is None
    assert store.kv_get_many(P1, []) == {}
    assert store.kv_get_many(P2, iter(["only_p2", "num"])) == {"only_p2": 1}
    got["dict"]["a"].append("changed")  # a read hands out new objects
    assert store.kv_get(P1, "dict") == VALUES["dict"]


def test_kv_get_many_of_many_keys(store):
    values = {f"k{i}": i for i in range(1203)}
    with store.transaction() as tx:
        tx.kv_put_many(P1, values)
    assert store.kv_get_many(P1, [*values, "nope"]) == values
    with store.transaction():  # inside a write, it sees the transaction's own writes
        assert store.kv_get_many(P1, values)["k1202"] == 1202
