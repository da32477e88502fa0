"""The SQLite store keeps the stored text of recently read or written kv values: every
read must still return exactly what decoding the row gives, whoever wrote it and however,
and never an object another read or the cache shares."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from item_cache_helpers import Boom, open_store
from storage_helpers import P1, P2

from zenbrain.storage.sqlite import SQLiteStore

VALUES = {
    "neuro": {"tonic": {"DA": 0.5, "NE": 0.59}, "bursts": [], "updated_at": 1.0},
    "log": [{"at": 1.0, "used": 3}, {"at": 2.0, "used": 1}],
    "text": "abc",
    "big": 2**70,  # read back by json, not orjson
    "numpy": np.float64(0.25),
    "nan": float("nan"),
}


def uncached(store: SQLiteStore, part=P1) -> dict:
    rows = store.raw_connection().execute("SELECT key, value FROM kv WHERE user_id=? AND agent_id=?", part)
    import json

    return {k: json.loads(v) for k, v in rows}


def same(a, b) -> bool:
    return repr(a) == repr(b)


KEYS = [*VALUES, "missing"]


def check(store, part=P1):
    truth = uncached(store, part)
    assert same(store.kv_get_many(part, KEYS), {k: truth[k] for k in sorted(KEYS) if k in truth})
    for k in KEYS:
        assert same(store.kv_get(part, k, "default"), truth.get(k, "default"))


def test_reads_after_puts_match_the_rows(store):
    check(store)  # nothing set: cached as not set
    with store.transaction() as tx:
        tx.kv_put_many(P1, VALUES)
        check(store)  # inside the transaction: the store's own uncommitted rows
    check(store)
    with store.transaction() as tx:
        tx.kv_put(P1, "text", "changed")
        tx.kv_put_many(P1, {"log": [], "missing": {"now": "set"}})
    check(store)
    check(store, P2)
    with store.transaction() as tx:
        tx.kv_clear(P1)
    check(store)


def test_a_rolled_back_put_is_not_seen(store):
    with store.transaction() as tx:
        tx.kv_put_many(P1, VALUES)
    check(store)
    with pytest.raises(Boom), store.transaction() as tx:
        tx.kv_put(P1, "text", "rolled back")
        tx.kv_clear(P1)
        raise Boom
    check(store)
    assert store.kv_get(P1, "text") == "abc"


def test_reads_never_share_objects_with_the_cache_or_the_writer(store):
    value = {"a": [1, 2], "b": {"c": 1.5}}
    with store.transaction() as tx:
        tx.kv_put(P1, "v", value)
    value["a"].append(3)
    first = store.kv_get(P1, "v")
    first["a"].append(4)
    first["b"]["c"] = 0
    again = store.kv_get_many(P1, ["v"])["v"]
    assert again == {"a": [1, 2], "b": {"c": 1.5}}
    assert again["a"] is not store.kv_get(P1, "v")["a"]


def test_many_keys_read_in_the_order_of_an_uncached_store(loc):
    a, b = open_store(loc), open_store(loc, item_cache_size=0)
    try:
        keys = [f"k{i}" for i in range(1200)][::-1] + ["zeta", "Beta", "\u00e9", "aaa"]
        with a.transaction() as tx:
            tx.kv_put_many(P1, {k: i for i, k in enumerate(keys[::3])})
        for want in (keys, keys[:7], keys[::-1]):
            assert list(a.kv_get_many(P1, want).items()) == list(b.kv_get_many(P1, want).items())
    finally:
        a.close()
        b.close()


def test_writes_through_another_connection_are_seen(loc):
    a, b = open_store(loc), open_store(loc)
    try:
        with a.transaction() as tx:
            tx.kv_put_many(P1, {"x": 1, "y": [1]})
        assert a.kv_get_many(P1, ["x", "y", "z"]) == {"x": 1, "y": [1]}
        with b.transaction() as tx:
            tx.kv_put_many(P1, {"x": 2, "z": "new"})
        assert a.kv_get_many(P1, ["x", "y", "z"]) == {"x": 2, "y": [1], "z": "new"}
        con = sqlite3.connect(loc)
        con.execute("UPDATE kv SET value='3' WHERE key='x'")
        con.commit()
        con.close()
        assert a.kv_get(P1, "x") == 3
        a.raw_connection().execute("UPDATE kv SET value='4' WHERE key='x'")
        assert a.kv_get(P1, "x") == 4
    finally:
        a.close()
        b.close()


def test_random_writes_and_reads_match_an_uncached_store(loc):
    rng = np.random.default_rng(3)
    a, b = open_store(loc), open_store(loc, item_cache_size=0)
    try:
        keys = ["k0", "k1", "k2", "k3"]
        for step in range(300):
            op = rng.integers(5)
            part = (P1, P2)[rng.integers(2)]
            writer = (a, b)[rng.integers(2)]
            if op == 0:
                with writer.transaction() as tx:
                    tx.kv_clear(part)
            elif op <= 2:
                with writer.transaction() as tx:
                    tx.kv_put_many(part, {k: [int(step), {"s": float(step) / 3}] for k in rng.choice(keys, 2)})
            else:
                want = list(rng.choice(keys, 3))
                assert same(a.kv_get_many(part, want), b.kv_get_many(part, want))
                assert same(a.kv_get(part, want[0]), b.kv_get(part, want[0]))
    finally:
        a.close()
        b.close()


def test_values_longer_than_the_limit_are_read_from_the_file(store, monkeypatch):
    monkeypatch.setattr(store, "KV_CACHE_MAX_CHARS", 20)
    with store.transaction() as tx:
        tx.kv_put_many(P1, {"short": [1], "long": "x" * 30})
    assert store.kv_get_many(P1, ["long", "short", "none"]) == {"long": "x" * 30, "short": [1]}
    assert set(store._kv[P1]) == {"short", "none"}
    with store.transaction() as tx:
        tx.kv_put(P1, "short", "y" * 40)
    assert "short" not in store._kv[P1]
    assert store.kv_get(P1, "short") == "y" * 40
    check(store)
