"""lexical_search returns at once when no document holds a word of the query, and
otherwise what the joined FTS query ranks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore, fts_query

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_helpers import DIM, MODEL, P1, P2, make_item, put

WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime"]


def joined(store, partition, text, k):
    sql = (
        "SELECT f.memory_id, -bm25(memories_fts) FROM memories_fts f JOIN memories m ON m.id = f.memory_id "
        "WHERE memories_fts MATCH ? AND f.user_id=? AND f.agent_id=? AND m.user_id=? AND m.agent_id=? "
        "AND m.archived=0 AND m.layer NOT IN ('working','short_term') ORDER BY bm25(memories_fts) LIMIT ?"
    )
    rows = store.raw_connection().execute(sql, (fts_query(text), *partition, *partition, k)).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def test_lexical_search_with_and_without_matches():
    rng = np.random.default_rng(1)
    store = SQLiteStore(":memory:", embedder_name=MODEL, dim=DIM)
    items = [make_item(P1, content=" ".join(rng.choice(WORDS[:4], 3)) + f" n{i}") for i in range(40)]
    items += [make_item(P2, content=f"kiwi only here {i}") for i in range(5)]
    put(store, items)
    for text in ["kiwi", "lime", "zzz", "apple fig", "plum kiwi", "pear n3", "n7 lime"]:
        for k in (1, 5, 100):
            assert store.lexical_search(P1, text, k, Filter()) == joined(store, P1, text, k)
    assert store.lexical_search(P1, "kiwi", 5) == []
    assert len(store.lexical_search(P2, "kiwi", 5)) == 5
