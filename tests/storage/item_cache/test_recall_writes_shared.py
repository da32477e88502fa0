"""get_shared and detach: reads without copies of metadata and state for a caller that only
reads them, and copies for the items it hands on - equal to what get returns."""

from __future__ import annotations

from item_cache_helpers import (
    open_store,
    reads,
    seed,
    uncached_reads,
)
from storage_helpers import P1, P2

IDS = ["m3", "m0", "nope", "m1", "m2", "m1"]


def _dicts(item):
    """Every dict and list reachable from an item's metadata and state."""
    out, todo = [], [item.metadata, item.state]
    while todo:
        v = todo.pop()
        if isinstance(v, (dict, list)):
            out.append(v)
            todo.extend(v.values() if isinstance(v, dict) else v)
    return out


def _shares_nothing(a, b) -> bool:
    ids = {id(x) for x in _dicts(a)}
    return not any(id(x) in ids for x in _dicts(b))


def test_get_shared_reads_as_get_and_detach_copies(store):
    seed(store)
    for _ in range(2):  # from the file, then from the cache
        shared = store.get_shared(P1, IDS)
        plain = store.get(P1, IDS)
        assert repr(shared) == repr(plain)
        again = store.get_shared(P1, IDS)
        store.detach(shared[:2])
        assert repr(shared) == repr(plain)
        for a, b in zip(shared[:2], again[:2]):
            assert _shares_nothing(a, b)  # detached: dicts of their own
        for item in shared[:2]:
            item.state.setdefault("fsrs", {})["scribble"] = 1
            item.metadata.setdefault("tags", []).append("x")
        assert repr(store.get(P1, IDS)) == repr(plain)
        assert reads(store) == uncached_reads(store)
    assert store.get_shared(P2, IDS) == []


def test_detach_of_items_whose_cache_entry_changed(store):
    seed(store)
    shared = store.get_shared(P1, ["m1", "m2"])
    before = repr(shared)
    with store.transaction() as tx:
        tx.update_state(P1, "m1", {"other": {"x": [1]}})
        tx.delete_memory(P1, "m2")
    store.detach(shared)
    assert repr(shared) == before
    shared[0].state["fsrs"]["reps"] = 99
    assert store.get(P1, ["m1"])[0].state == {"other": {"x": [1]}}
    assert reads(store) == uncached_reads(store)


def test_detach_of_plain_items_and_without_a_cache(loc):
    for size in (0, 2):
        s = open_store(loc, item_cache_size=size)
        try:
            if size == 0:
                seed(s)
            items = s.get(P1, IDS)
            shared = s.get_shared(P1, IDS)
            assert repr(items) == repr(shared)
            s.detach(items)
            s.detach(shared)
            assert repr(items) == repr(shared) == repr(s.get(P1, IDS))
            for a, b in zip(items, shared):
                assert _shares_nothing(a, b)
        finally:
            s.close()
