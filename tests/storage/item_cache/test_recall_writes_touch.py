"""touch_recalled: one statement with the result of increment_access, update_columns of
stability and update_state of each memory, in that order - in the file and in the cache."""

from __future__ import annotations

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

CASES = {
    "plain": (["m1", "m2"], T0 + 500.0, [3.0, 4.5], [{"due_at": T0 + 9.0, "fsrs": {"reps": 2}}, {"x": [1, {"y": 2}]}]),
    "numpy and ints": (["m0", "m3"], T0 + 1.0, [np.float32(0.5), 2], [{"due_at": int(T0)}, {}]),
    "earlier int time": (["m2"], int(T0) - 100, [1.0], [{"due_at": None}]),
    "-0.0 and huge stability": (["m1", "m2"], T0 + 7.0, [-0.0, 1e20], [{"a": 1}, {"b": 2}]),
    "the same id twice": (["m1", "m1"], T0 + 3.0, [1.5, 2.5], [{"n": 1}, {"n": 2, "due_at": T0}]),
    "non-string keys": (["m3"], T0 + 2.0, [1.0], [{2: "two", 1: ("one",)}]),
    "unknown id": (["nope", "m0"], T0 + 2.0, [1.0, 2.0], [{"a": 1}, {"b": 1}]),
    "nothing": ([], T0, [], []),
}


def _sequential(tx, part, ids, now, stab, states):
    tx.increment_access(part, ids, now)
    tx.update_columns(part, ids, stability=stab)
    for mid, st in zip(ids, states):
        tx.update_state(part, mid, st)


@pytest.mark.parametrize("name", list(CASES))
def test_touch_recalled_reads_as_the_three_writes(store, tmp_path, name):
    ids, now, stab, states = CASES[name]
    seed(store)
    reads(store)  # everything cached
    with store.transaction() as tx:
        tx.touch_recalled(P1, ids, now, stab, states)
        assert cached_here(store) == decoded_here(store)
    got = reads(store)
    assert got == uncached_reads(store)
    assert reads(store, P2) == uncached_reads(store, P2)

    other = open_store(str(tmp_path / "sequential.db"))
    seed(other)
    reads(other)
    with other.transaction() as tx:
        _sequential(tx, P1, ids, now, stab, states)
    assert reads(other) == got
    other.close()


def test_touch_recalled_rolls_back_and_leaves_other_partitions_alone(store):
    seed(store)
    before = reads(store)
    with pytest.raises(Boom), store.transaction() as tx:
        tx.touch_recalled(P1, ["m1"], T0 + 9.0, [7.0], [{"z": 1}])
        assert cached_here(store) == decoded_here(store)
        reads(store)
        raise Boom()
    assert reads(store) == before == uncached_reads(store)
    with store.transaction() as tx:
        tx.touch_recalled(P2, ["m1"], T0 + 9.0, [7.0], [{"z": 1}])
    assert reads(store) == before == uncached_reads(store)


def test_touch_recalled_needs_a_state_per_id(store):
    seed(store)
    with pytest.raises(IndexError), store.transaction() as tx:
        tx.touch_recalled(P1, ["m1", "m2"], T0, [1.0, 2.0], [{}])


@pytest.mark.parametrize("now, stab", [(float("nan"), 1.0), (T0, float("nan"))])
def test_touch_recalled_fails_where_the_three_writes_fail(store, now, stab):
    seed(store)
    before = reads(store)
    for write in (lambda tx: tx.touch_recalled(P1, ["m1"], now, [stab], [{}]),
                  lambda tx: _sequential(tx, P1, ["m1"], now, [stab], [{}])):
        with pytest.raises(Exception) as err, store.transaction() as tx:
            write(tx)
        assert "NOT NULL" in str(err.value)
        assert reads(store) == before == uncached_reads(store)
