"""Lexical search inside a partition's rowid range gives exactly what ranking every
partition's matches and keeping one partition's would give, ids and scores."""

from __future__ import annotations

import numpy as np
from storage_helpers import P1, P2, make_item

from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore, fts_query

WORDS = "tea coffee paris lyon train garden piano cello river mountain snow rain book dog cat".split()


def test_search_in_the_partition_range_equals_filtering_every_match(tmp_path):
    store = SQLiteStore(str(tmp_path / "lex.db"), embedder_name="m", dim=4)
    rng = np.random.default_rng(3)
    parts = [P1, P2, ("carol", "agent"), ("alice", "other")]
    with store.transaction() as tx:
        for n in range(400):  # the partitions' entries interleaved, as users write at once
            words = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12))))
            tx.put_memories([make_item(parts[n % 4], f"note {n}: {words}")])
    with store.transaction() as tx:  # updates move an entry to a fresh rowid of its range
        for item in store.query(P1, Filter(include_archived=True), limit=30):
            item.content = item.content + " updated with tea"
            tx.put_memories([item])
    con = store.raw_connection()
    for text in ["tea in paris", "a river under snow", "the dog and the cat", "cello piano book", "updated tea"]:
        for part in parts:
            q = fts_query(text)
            expected = [(mid, -rank) for mid, rank in con.execute(
                "SELECT memory_id, rank FROM memories_fts WHERE memories_fts MATCH ? AND user_id=? AND agent_id=? "
                "ORDER BY rank LIMIT 10", (q, *part))]
            assert store.lexical_search(part, text, 10) == expected
    problems = store.check().problems  # (no vectors were written here: only the lexical checks matter)
    assert not [p for p in problems if "lexical" in p], problems
    store.close()
