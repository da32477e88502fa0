"""Helpers shared by the tests of the SQLite store's caches (``item_cache/``, and the edge
cache's tests): opening a store, what every read returns with and without the cache, and
seed data. The fixtures are in ``item_cache/conftest.py``.
"""

from __future__ import annotations

from storage_helpers import DIM, MODEL, P1, T0, make_item, put

from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import _SELECT, SQLiteStore, _item_from_row

EVERYTHING = Filter(include_archived=True, all_sessions=True)


class Boom(Exception):
    pass


def open_store(loc, **kw) -> SQLiteStore:
    return SQLiteStore(loc, embedder_name=MODEL, dim=DIM, **kw)


def reads(store, part=P1, now=T0 + 10**7) -> list[str]:
    # Every id of the file and some that never existed, so deleted and foreign rows are asked for too.
    ids = sorted({i for p in store.partitions() for i in store.all_ids(p)} | {f"m{i}" for i in range(10)})
    return [
        repr(store.get(part, ids)),
        repr(store.query(part, EVERYTHING)),
        repr(store.query(part, Filter(), order_by="strength", descending=True, limit=5)),
        repr(store.due(part, now, 1000, EVERYTHING)),
    ]


def uncached_reads(store, part=P1) -> list[str]:
    """``reads`` with the cache switched off: every row decoded on the store's own connection."""
    size, store._item_cache_size = store._item_cache_size, 0
    try:
        return reads(store, part)
    finally:
        store._item_cache_size = size


def decoded_here(store, part=P1) -> str:
    """The partition's rows decoded on the store's own connection (sees its open transaction)."""
    cur = store.raw_connection().cursor()
    cur.row_factory = None
    rows = cur.execute(f"SELECT {_SELECT} FROM memories WHERE user_id=? AND agent_id=? ORDER BY id", part)
    return repr([_item_from_row(r) for r in rows])


def cached_here(store, part=P1) -> str:
    return repr(sorted(store.get(part, store.all_ids(part)), key=lambda i: i.id))


def seed(store, n=4):
    items = [
        make_item(P1, f"memory {i}", id=f"m{i}", metadata={"tags": ["a", "b"], "n": {"k": [1, 2]}} if i % 2 else {},
                  state={"due_at": T0 + i, "fsrs": {"reps": i}, "hist": [[1.0, 2.0]]})
        for i in range(n)
    ]
    put(store, items)
    return items
