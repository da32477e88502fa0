"""The SQLite store's cache of decoded memories must be invisible: every read returns
exactly what decoding the row would return, whoever wrote it and however.

"Exactly" is checked with ``repr`` (1 and 1.0, True and 1, 0.0 and -0.0, dict key order
all differ there), against an uncached handle on the same file or, inside a transaction,
against the rows decoded on the store's own connection.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from item_cache_helpers import (
    EVERYTHING,
    Boom,
    cached_here,
    decoded_here,
    open_store,
    reads,
    seed,
    uncached_reads,
)
from storage_helpers import P1, P2, T0, make_item, put

from zenbrain.model import HistoryEvent, Kind, Layer
from zenbrain.storage.sqlite import SQLiteStore

# --------------------------------------------------------------------------- every kind of write
WRITES = {
    "update_columns floats": lambda tx: tx.update_columns(P1, ["m1", "m2"], strength=[0.25, np.float32(0.5)], stability=[3.0, 4.0]),
    "update_columns ints into REAL columns": lambda tx: tx.update_columns(P1, ["m1"], strength=[1], importance=[np.int64(0)]),
    "update_columns -0.0": lambda tx: tx.update_columns(P1, ["m1", "m2"], valence=[-0.0, 0.5], event_time=[T0, None]),
    "update_columns NaN": lambda tx: tx.update_columns(P1, ["m1", "m2"], event_time=[float("nan"), T0]),
    "update_columns text and flags": lambda tx: tx.update_columns(
        P1, ["m0", "m3"], layer=["episodic", Layer.CORE.value], kind=["skill", "note"], context=["work", "home"],
        session_id=["s9", None], archived=[np.bool_(True), 1]),
    "update_columns counters": lambda tx: tx.update_columns(P1, ["m2"], access_count=[7], version=[np.int64(3)]),
    "update_columns the same id twice": lambda tx: tx.update_columns(P1, ["m1", "m1"], strength=[0.1, 0.9]),
    "update_columns due_at only": lambda tx: tx.update_columns(P1, ["m1"], due_at=[T0 - 5.0]),
    "update_state": lambda tx: tx.update_state(P1, "m1", {"due_at": T0 + 99.0, "z": (1, 2), "a": {"b": [None]}}),
    "update_state non-string keys": lambda tx: tx.update_state(P1, "m2", {2: "two", 1: ("one",)}),
    "update_state int due_at": lambda tx: tx.update_state(P1, "m3", {"due_at": int(T0)}),
    "update_state emptied": lambda tx: tx.update_state(P1, "m0", {}),
    "increment_access": lambda tx: tx.increment_access(P1, ["m0", "m1", "m1"], T0 + 500.0),
    "increment_access with an earlier int time": lambda tx: tx.increment_access(P1, ["m2"], int(T0) - 100),
    "update_memory": lambda tx: tx.update_memory(
        make_item(P1, "rewritten", id="m3", metadata={"x": [1]}, state={"due_at": T0 + 1.0}, version=2)),
    "delete_memory": lambda tx: tx.delete_memory(P1, "m2"),
    "delete and put again": lambda tx: (tx.delete_memory(P1, "m1"), tx.put_memory(make_item(P1, "reborn", id="m1"))),
    "put_memory": lambda tx: tx.put_memory(make_item(P1, "new one", id="m9")),
    "put_memories": lambda tx: tx.put_memories(
        [make_item(P1, "new two", id="m7", metadata={"lexical_extra": "more"}), make_item(P2, "other", id="m6")]),
    "delete and put_memories again": lambda tx: (tx.delete_memory(P1, "m1"), tx.put_memories([make_item(P1, "reborn", id="m1")])),
    "writes to another partition only": lambda tx: (
        tx.update_columns(P2, ["m1"], strength=[0.0]), tx.update_state(P2, "m1", {"x": 1}),
        tx.increment_access(P2, ["m1"], T0 + 1e6), tx.delete_memory(P2, "m1")),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_read_after_each_kind_of_write_returns_the_new_values(store, name):
    seed(store)
    before = reads(store)  # everything cached
    assert before == uncached_reads(store)
    with store.transaction() as tx:
        WRITES[name](tx)
        assert cached_here(store) == decoded_here(store)  # inside the transaction too
    assert reads(store) == uncached_reads(store)
    assert reads(store, P2) == uncached_reads(store, P2)
    if name != "writes to another partition only":
        assert reads(store) != before


@pytest.mark.parametrize("name", list(WRITES))
def test_a_rolled_back_write_leaves_no_cached_value_behind(store, name):
    seed(store)
    before = reads(store)
    with pytest.raises(Boom), store.transaction() as tx:
        WRITES[name](tx)
        assert cached_here(store) == decoded_here(store)  # the uncommitted values are cached now
        reads(store)
        raise Boom()
    assert reads(store) == before == uncached_reads(store)


def test_writes_are_committed_for_other_connections_too(file_store, oracle):
    seed(file_store)
    reads(file_store)
    with file_store.transaction() as tx:
        for write in WRITES.values():
            write(tx)
    assert reads(file_store) == reads(oracle)
    assert reads(file_store, P2) == reads(oracle, P2)


def test_a_write_that_fails_half_way_inside_a_kept_transaction(store):
    seed(store)
    reads(store)
    with store.transaction() as tx:
        with pytest.raises(sqlite3.IntegrityError):
            tx.update_columns(P1, ["m0", "m1"], strength=[0.125, None])  # m0 is written, m1 fails
        with pytest.raises(sqlite3.IntegrityError):
            tx.increment_access(P1, ["m2", "m3"], float("nan"))
    assert reads(store) == uncached_reads(store)
    assert store.get(P1, ["m0"])[0].strength == 0.125


# --------------------------------------------------------------------------- writes the store did not make
def test_a_write_through_another_store_on_the_same_file_is_seen(file_store, loc):
    store = file_store
    seed(store)
    other = open_store(loc)
    try:
        reads(store), reads(other)
        with other.transaction() as tx:
            tx.update_columns(P1, ["m1"], strength=[0.125])
            tx.update_state(P1, "m2", {"due_at": T0 - 1.0, "from": "other"})
            tx.increment_access(P1, ["m0"], T0 + 5.0)
        assert store.get(P1, ["m1"])[0].strength == 0.125
        assert store.get(P1, ["m2"])[0].state == {"due_at": T0 - 1.0, "from": "other"}
        assert store.get(P1, ["m0"])[0].access_count == 1
        assert [i.id for i in store.due(P1, T0 - 0.5, 10)] == ["m2"]
        assert reads(store) == reads(other)
        with store.transaction() as tx:
            tx.update_columns(P1, ["m1"], strength=[0.75])
        assert other.get(P1, ["m1"])[0].strength == 0.75
        assert reads(store) == reads(other)
    finally:
        other.close()


def test_a_plain_sqlite_connection_and_the_raw_connection_are_seen(file_store, oracle, loc):
    store = file_store
    seed(store)
    reads(store)
    con = sqlite3.connect(loc, isolation_level=None)
    try:
        con.execute("UPDATE memories SET strength=0.3, state='{\"raw\": 1}' WHERE id='m1'")
    finally:
        con.close()
    assert store.get(P1, ["m1"])[0].strength == 0.3
    assert reads(store) == reads(oracle)
    # The store's own connection, outside its write methods (maintenance tools, tests).
    store.raw_connection().execute("UPDATE memories SET strength=0.6 WHERE id='m2'")
    assert store.get(P1, ["m2"])[0].strength == 0.6
    # ... and then one of the store's own writes, to the same row or another, before the next read.
    own_writes = [
        lambda tx: tx.update_columns(P1, ["m3"], strength=[0.2]),
        lambda tx: tx.update_columns(P1, ["m0"], strength=[0.2]),
        lambda tx: tx.kv_put(P1, "k", 1),
    ]
    for write in own_writes:
        reads(store)
        store.raw_connection().execute("UPDATE memories SET importance=0.01 WHERE id='m3'")
        with store.transaction() as tx:
            write(tx)
        assert store.get(P1, ["m3"])[0].importance == 0.01
        assert reads(store) == reads(oracle)
        store.raw_connection().execute("UPDATE memories SET importance=0.5 WHERE id='m3'")


def test_reads_in_one_call_come_from_one_snapshot(file_store, loc):
    """A query whose rows are partly cached and partly read must not mix in a commit that
    lands between its statements (they run in one read transaction)."""
    store = file_store
    seed(store)
    store.get(P1, ["m0", "m1"])  # half of the partition cached
    other = open_store(loc)
    try:
        calls = []
        original = store._items_in_order

        def commit_in_between(part, ids):
            if not calls:
                calls.append(1)
                with other.transaction() as tx:
                    tx.update_columns(P1, ["m0", "m3"], strength=[0.01, 0.01])
            return original(part, ids)

        store._items_in_order = commit_in_between
        got = store.query(P1, EVERYTHING)
        assert [i.strength for i in got] == [1.0] * 4  # all from before the other commit
        del store._items_in_order
        assert [i.strength for i in store.query(P1, EVERYTHING)] == [0.01, 1.0, 1.0, 0.01]
    finally:
        other.close()


# --------------------------------------------------------------------------- handed-out objects
def test_changing_a_returned_item_changes_nothing_stored_or_cached(store):
    seed(store)
    for got in (store.get(P1, ["m1"])[0], store.query(P1, EVERYTHING)[1], store.due(P1, T0 + 5, 10)[1]):
        assert got.id == "m1"
        got.metadata["tags"].append("mutated")
        got.metadata["n"]["k"][0] = 99
        got.metadata["new"] = 1
        got.state["fsrs"]["reps"] = 1000
        got.state["hist"][0][0] = -1.0
        got.state.pop("due_at")
        got.strength = 0.0
        got.layer = Layer.CORE
    again = store.get(P1, ["m1"])[0]
    assert again.metadata == {"tags": ["a", "b"], "n": {"k": [1, 2]}}
    assert again.state == {"due_at": T0 + 1, "fsrs": {"reps": 1}, "hist": [[1.0, 2.0]]}
    assert (again.strength, again.layer) == (1.0, Layer.SEMANTIC)
    assert reads(store) == uncached_reads(store)


def test_two_reads_never_share_objects(store):
    seed(store)
    a, b = store.get(P1, ["m1"])[0], store.get(P1, ["m1"])[0]
    assert a == b and a is not b
    assert a.metadata is not b.metadata and a.metadata["n"] is not b.metadata["n"]
    assert a.state is not b.state and a.state["hist"][0] is not b.state["hist"][0]
    twice = store.get(P1, ["m1", "m1"])
    assert twice[0] is twice[1]  # one object per id within a call, as without the cache


def test_changing_what_was_written_afterwards_changes_nothing(store):
    seed(store)
    reads(store)
    state = {"due_at": T0 + 3.0, "fsrs": {"reps": 5}}
    with store.transaction() as tx:
        tx.update_state(P1, "m1", state)
    store.get(P1, ["m1"])
    state["fsrs"]["reps"] = 6
    state["extra"] = True
    assert store.get(P1, ["m1"])[0].state == {"due_at": T0 + 3.0, "fsrs": {"reps": 5}}
    assert reads(store) == uncached_reads(store)


# --------------------------------------------------------------------------- bound and switch
@pytest.mark.parametrize("size", [0, 1, 3])
def test_a_small_or_disabled_cache_reads_the_same(loc, size):
    small = open_store(loc, item_cache_size=size)
    try:
        seed(small, n=8)
        full = open_store(loc, item_cache_size=0)
        try:
            for _ in range(2):
                assert reads(small) == reads(full)
            assert len(small._items) <= size
        finally:
            full.close()
    finally:
        small.close()


# --------------------------------------------------------------------------- random differential run
def _random_value(rng, column):
    r = rng.random()
    if column in ("strength", "stability", "importance", "valence", "conf_alpha", "last_access"):
        return [0.5, 1, -0.0, np.float32(0.25), np.float64(2.5), 0.0, 1e20][int(rng.integers(7))]
    if column == "event_time":
        return [None, T0, float("nan"), int(T0), T0 + r][int(rng.integers(5))]
    if column in ("access_count", "version"):
        return [0, 3, np.int64(4), True][int(rng.integers(4))]
    if column == "archived":
        return [True, False, 0, 1, np.bool_(True)][int(rng.integers(5))]
    if column == "layer":
        return [layer.value for layer in Layer][int(rng.integers(len(Layer)))]
    if column == "kind":
        return [k.value for k in Kind][int(rng.integers(len(Kind)))]
    if column == "context":
        return ["work", "home"][int(rng.integers(2))]
    if column == "session_id":
        return [None, "s1"][int(rng.integers(2))]
    if column == "due_at":
        return [None, T0, T0 + 1][int(rng.integers(3))]
    raise AssertionError(column)


def _random_state(rng):
    s = {"due_at": [T0, T0 + 1, T0 + 2, None][int(rng.integers(4))], "n": int(rng.integers(100))}
    if rng.random() < 0.5:
        s["nested"] = {"list": [float(rng.random()), {"deep": [1, 2]}], "t": (1, "x")}
    if rng.random() < 0.2:
        s["neg"] = -0.0
    if rng.random() < 0.2:
        s = {5: "int keys", 3: s}  # JSON turns them into strings
    return s


def _random_write(rng, tx, ids):
    op = int(rng.integers(7))
    pick = [ids[int(j)] for j in rng.integers(0, len(ids), size=int(rng.integers(1, 4)))]
    if op == 0:
        cols = ["strength", "stability", "importance", "valence", "conf_alpha", "last_access", "event_time",
                "access_count", "version", "archived", "layer", "kind", "context", "session_id", "due_at"]
        chosen = [cols[int(j)] for j in rng.choice(len(cols), size=int(rng.integers(1, 4)), replace=False)]
        tx.update_columns(P1, pick, **{c: [_random_value(rng, c) for _ in pick] for c in chosen})
    elif op == 1:
        tx.update_state(P1, pick[0], _random_state(rng))
    elif op == 2:
        tx.increment_access(P1, pick, [T0, T0 + 50.0, int(T0) + 7, T0 + 1e5][int(rng.integers(4))])
    elif op == 3:
        tx.delete_memory(P1, pick[0])
        tx.put_memory(make_item(P1, f"again {rng.random()}", id=pick[0], state=_random_state(rng)))
    elif op == 4:
        tx.update_memory(make_item(P1, f"updated {rng.random()}", id=pick[0], metadata={"m": [int(rng.integers(9))]},
                                   state=_random_state(rng), strength=float(rng.random())))
    elif op == 5:
        tx.update_columns(P2, pick, strength=[0.0] * len(pick))  # same ids, other partition
    else:
        tx.log(P1, HistoryEvent(pick[0], T0, "x", {}))


@pytest.mark.parametrize("size", [0, 2, SQLiteStore.DEFAULT_ITEM_CACHE_SIZE])
@pytest.mark.parametrize("where", ["file", "memory"])
def test_random_writes_from_everywhere_never_show_a_stale_item(loc, size, where):
    rng = np.random.default_rng(size + 1)
    store = open_store(loc if where == "file" else ":memory:", item_cache_size=size)
    # An in-memory store has no other connection: the "other" writes go through its own.
    other = open_store(loc) if where == "file" else store
    oracle = open_store(loc, item_cache_size=0) if where == "file" else None
    try:
        ids = [f"m{i}" for i in range(6)]
        seed(store, n=6)
        put(store, [make_item(P2, f"other partition {i}", id=f"p2-{i}") for i in range(2)])
        for step in range(120):
            kind = rng.random()
            if kind < 0.45:
                with store.transaction() as tx:
                    for _ in range(int(rng.integers(1, 4))):
                        _random_write(rng, tx, ids)
                        if rng.random() < 0.3:
                            assert cached_here(store) == decoded_here(store), step
            elif kind < 0.6:
                with pytest.raises(Boom), store.transaction() as tx:
                    _random_write(rng, tx, ids)
                    reads(store)
                    raise Boom()
            elif kind < 0.75:
                with other.transaction() as tx:
                    _random_write(rng, tx, ids)
            elif kind < 0.85:
                store.raw_connection().execute(
                    "UPDATE memories SET strength=?, state=? WHERE id=?", (float(rng.random()), '{"raw": true}', ids[step % 6])
                )
            else:
                for item in store.query(P1, EVERYTHING):  # callers change what they read
                    item.state["scribble"] = step
                    item.metadata.setdefault("m", []).append(step)
                    item.strength = -1.0
            for part in (P1, P2):
                assert reads(store, part) == uncached_reads(store, part), step
                if oracle is not None:
                    assert reads(store, part) == reads(oracle, part), step
        assert len(store._items) <= size
    finally:
        for s in {id(x): x for x in (store, other, oracle) if x is not None}.values():
            s.close()


# --------------------------------------------------------------------------- guards
def test_a_write_statement_that_does_not_keep_the_cache_exact_empties_it(store):
    seed(store)
    reads(store)
    with store.transaction() as tx:
        tx._write("UPDATE memories SET strength=0.4 WHERE id='m1'")
    assert store.get(P1, ["m1"])[0].strength == 0.4
    assert reads(store) == uncached_reads(store)


def test_a_file_with_triggers_is_read_without_the_cache(loc):
    open_store(loc).close()
    con = sqlite3.connect(loc, isolation_level=None)
    try:
        con.execute("CREATE TRIGGER t AFTER INSERT ON kv BEGIN UPDATE memories SET strength=0 WHERE id=NEW.key; END")
    finally:
        con.close()
    s = open_store(loc)
    try:
        seed(s)
        reads(s)
        with s.transaction() as tx:
            tx.kv_put(P1, "m1", 1)
        assert s.get(P1, ["m1"])[0].strength == 0.0
    finally:
        s.close()


@pytest.mark.parametrize("bad", ["duplicate id", "unencodable state"])
def test_put_memories_failing_half_way_leaves_what_put_memory_one_by_one_leaves(loc, tmp_path, bad):
    def batch(k):
        items = [make_item(P1, f"fresh {i}", id=f"n{i}") for i in range(4)]
        items[k] = make_item(P1, "clash", id="m0") if bad == "duplicate id" else make_item(
            P1, "odd", id="n9", state={"x": object()})
        return items

    def fts(store):
        return sorted(map(tuple, store.raw_connection().execute("SELECT memory_id, content FROM memories_fts")))

    one, many = open_store(str(tmp_path / "one.db")), open_store(loc)
    try:
        for store, put_all in ((one, lambda tx, items: [tx.put_memory(i) for i in items]),
                               (many, lambda tx, items: tx.put_memories(items))):
            seed(store)
            with store.transaction() as outer:
                with (pytest.raises((sqlite3.IntegrityError, TypeError)),
                      store.transaction() as tx):  # joins the outer one, which commits what was written
                    put_all(tx, batch(2))
                assert outer.inserted == 2
        assert reads(one) == reads(many) == uncached_reads(many)
        assert fts(one) == fts(many)
        assert [r[0] for r in fts(many)].count("n1") == 1 and "n3" not in [r[0] for r in fts(many)]
    finally:
        one.close()
        many.close()
