"""update_states: one statement for several update_state calls, with the same result; and
update_columns converting whole columns as it converted each value."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from item_cache_helpers import (
    Boom,
    cached_here,
    decoded_here,
    open_store,
    reads,
    seed,
    uncached_reads,
)
from storage_helpers import P1, P2, T0

STATES = {
    "m1": {"due_at": T0 + 99.0, "z": (1, 2), "a": {"b": [None]}},
    "m3": {"due_at": int(T0), "x": float("nan")},
    "m0": {},
    "m2": {2: "two", 1: ("one",)},
    "gone": {"due_at": 1.0},  # no such memory: nothing to update
}


def test_update_states_reads_as_one_update_state_each(store, tmp_path):
    seed(store)
    reads(store)  # everything cached
    with store.transaction() as tx:
        tx.update_states(P1, STATES)
        tx.update_states(P1, {})
        assert cached_here(store) == decoded_here(store)
    got = reads(store)
    assert got == uncached_reads(store)

    other = open_store(str(tmp_path / "one_by_one.db"))
    seed(other)
    with other.transaction() as tx:
        for mid, state in STATES.items():
            tx.update_state(P1, mid, state)
    assert reads(other) == got
    assert list(store._items) == list(other._items) or not other._items  # same LRU order
    other.close()


def test_update_states_of_another_partition_leave_these_alone(store):
    seed(store)
    before = reads(store)
    with store.transaction() as tx:
        tx.update_states(P2, {"m1": {"due_at": 5.0}})
    assert reads(store) == before == uncached_reads(store)


def test_rolled_back_update_states_leave_nothing_cached(store):
    seed(store)
    before = reads(store)
    with pytest.raises(Boom), store.transaction() as tx:
        tx.update_states(P1, STATES)
        reads(store)
        raise Boom()
    assert reads(store) == before == uncached_reads(store)


def _old_column(values, n, archived):
    """The per-value conversion update_columns made before converting whole columns."""
    out = []
    for i in range(n):
        v = values[i]
        if isinstance(v, (np.floating, np.integer, np.bool_)):
            v = v.item()
        if archived:
            v = int(bool(v))
        out.append(v)
    return out


@pytest.mark.parametrize("values", [
    [0.5, np.float32(0.25), np.float64(1e300), 3, np.int64(-2), True, np.bool_(False), None, "episodic", -0.0],
    np.array([0.1, -0.0, np.nan, 1e-320]),
    np.array([0.1, 2.5], dtype=np.float32),
    np.array([1, -7], dtype=np.int32),
    np.array([2**63 - 1, 5], dtype=np.uint64),
    np.array([True, False]),
    np.array(["a", "b"], dtype=object),
    np.array([np.float64(0.5), 1], dtype=object),
    (1.5, 2.5, 3.5),
    deque([np.float64(0.5), 2.0]),
])
@pytest.mark.parametrize("archived", [False, True])
def test_whole_column_conversion_equals_the_per_value_one(values, archived):
    from zenbrain.storage.sqlite import _column_values

    n = len(values)
    got = _column_values(values, n, archived=archived)
    want = _old_column(values, n, archived)
    assert repr(got) == repr(want)
    assert [type(v) for v in got] == [type(v) for v in want]
    with pytest.raises(IndexError):
        _column_values(values, len(values) + 1)


def test_log_many_writes_the_same_history_rows_as_log_one_by_one(tmp_path):
    from zenbrain.model import HistoryEvent
    from zenbrain.storage.sqlite import SQLiteStore

    part = ("u", "a")
    events = [HistoryEvent(f"m{i}", 100.0 + i, "replayed", {"i": i, "x": [1.5, None]}) for i in range(5)]
    rows = []
    for batched in (False, True):
        store = SQLiteStore(str(tmp_path / f"h{batched}.db"), embedder_name="t", dim=4)
        with store.transaction() as tx:
            if batched:
                tx.log_many(part, events)
                tx.log_many(part, [])
            else:
                for e in events:
                    tx.log(part, e)
        rows.append(store.raw_connection().execute(
            "SELECT user_id, agent_id, memory_id, at, action, detail FROM history ORDER BY rowid").fetchall())
        store.close()
    assert rows[0] == rows[1] and len(rows[0]) == 5


COLUMN_SETS = {
    "plain floats": dict(stability=[2.5, 3.5, 4.5, 5.5, 6.5], last_access=[T0 + 9.0] * 5),
    "unsure values": dict(stability=[-0.0, 1, np.float32(0.5), 2.0, 3.0], event_time=[float("nan"), T0, None, 1, 2.0]),
    "a due_at and indexed columns": dict(due_at=[1.0] * 5, context=["work", "home", "x", "y", "z"],
                                         archived=[np.bool_(True), 0, 1, 0, 1]),
    "none": {},
}


@pytest.mark.parametrize("name", list(COLUMN_SETS))
@pytest.mark.parametrize("cached", [True, False])
def test_update_states_with_columns_equals_update_columns_then_update_states(tmp_path, name, cached):
    columns = COLUMN_SETS[name]
    got = []
    for together in (True, False):
        s = open_store(str(tmp_path / f"{together}.db"))
        seed(s)
        if cached:
            reads(s)
        with s.transaction() as tx:
            if together:
                tx.update_states(P1, STATES, **columns)
            else:
                if columns:
                    tx.update_columns(P1, list(STATES), **columns)
                tx.update_states(P1, STATES)
            assert cached_here(s) == decoded_here(s)
        order = list(s._items)
        got.append((reads(s), uncached_reads(s), order,
                    s.raw_connection().execute("SELECT * FROM changes ORDER BY seq").fetchall()))
        s.close()
    assert got[0] == got[1]
    assert got[0][0] == got[0][1]


def test_update_states_with_columns_checks_them_before_writing(store):
    from zenbrain.errors import StorageError

    seed(store)
    before = reads(store)
    with pytest.raises(StorageError), store.transaction() as tx:
        tx.update_states(P1, {"m1": {"due_at": 5.0}}, content=["x"])
    with pytest.raises(IndexError), store.transaction() as tx:
        tx.update_states(P1, {"m1": {"due_at": 5.0}, "m2": {}}, stability=[1.0])
    assert reads(store) == before == uncached_reads(store)
