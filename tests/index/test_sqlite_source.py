"""The indexes on a database written by zenbrain's own SQLite store, read through
SQLiteIndexSource: the same dense results as the store's exact search, lexical hits,
and forgetting seen after the store's writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zenbrain import Scope, open_memory
from zenbrain.index import IndexSet
from zenbrain.index.sqlite_source import SQLiteIndexSource
from zenbrain.storage.base import Filter

FACTS = [
    "Alice adopted a grey cat named Pixel last spring.",
    "The quarterly budget review moved to Thursday afternoon.",
    "Bob prefers green tea over coffee in the morning.",
    "The lighthouse on the north cape was repainted in May.",
    "Carol is training for the Lisbon marathon in October.",
    "The server migration finished without data loss.",
]


def test_indexes_follow_a_real_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    mem = open_memory(path, embedder="hashing")
    alice = Scope("alice")
    items = [mem.store(fact, alice) for fact in FACTS]
    mem.store("Bob's secret: the vault code is 4711.", Scope("bob"))
    src = SQLiteIndexSource(path)
    part = ("alice", "default")
    idx = IndexSet(src, tmp_path / "memory.db.idx")
    assert src.embedder_name == mem.embedder.name and src.dim == mem.embedder.dim

    q = mem.embedder.embed(["who adopted a cat?"])[0]
    store_hits = mem.storage.vector_search(part, q, 3, Filter())
    assert idx.vector_search(part, q, 3, Filter()) == [(m, float(np.float32(s))) for m, s in store_hits]
    assert idx.lexical_search(part, "When is the marathon in Lisbon?", 3)[0][0] == items[4].id
    assert idx.lexical_search(part, "vault code", 5) == []  # Bob's memory stays Bob's

    mem.forget(items[4].id, alice)
    assert items[4].id not in [m for m, _ in idx.lexical_search(part, "Lisbon marathon", 3)]
    assert items[4].id not in [m for m, _ in idx.vector_search(part, q, 10)]
    idx.close()
    mem.store("Dave repaired the old lighthouse lamp.", alice)
    mem.close()

    reopened = IndexSet(SQLiteIndexSource(path), tmp_path / "memory.db.idx")
    hits = [m for m, _ in reopened.lexical_search(part, "lighthouse lamp", 2)]
    assert len(hits) == 2 and items[3].id in hits and reopened.rebuilds == []
    reopened.close()
