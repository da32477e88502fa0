"""The FTS5 table keeps each partition's entries in a rowid range of its own (what the
integrity checks verify): ranking inside the range gives exactly what ranking every
partition's matches and keeping one partition's gives. Lexical search itself runs on the
search indexes (zenbrain.index) and finds only the partition's own matches."""

from __future__ import annotations

import numpy as np
from storage_helpers import P1, P2, make_item

from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore, fts_query
from zenbrain.storage.sqlite.lexical import entry_range

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
            number = con.execute("SELECT id FROM partitions WHERE user_id=? AND agent_id=?", part).fetchone()[0]
            in_range = [(mid, -rank) for mid, rank in con.execute(
                "SELECT memory_id, rank FROM memories_fts WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ? "
                "ORDER BY rank LIMIT 10", (q, *entry_range(number)))]
            assert in_range == expected
            matches = {mid for (mid,) in con.execute(
                "SELECT memory_id FROM memories_fts WHERE memories_fts MATCH ? AND user_id=? AND agent_id=?", (q, *part))}
            found = [mid for mid, _ in store.lexical_search(part, text, 10)]
            assert len(found) == min(10, len(matches)) and set(found) <= matches
    problems = store.check().problems  # (no vectors were written here: only the lexical checks matter)
    assert not [p for p in problems if "lexical" in p], problems
    store.close()


def test_a_small_partition_of_a_large_store_is_searched_through_the_lexical_index(tmp_path, monkeypatch):
    """FTS5's doclists and segments span every partition, so the store's size, not the
    partition's, sends a search to the lexical index; the answer is still the partition's
    own best matches, as FTS5 ranks them."""
    store = SQLiteStore(str(tmp_path / "lex.db"), embedder_name="m", dim=4, lexical_index_min_rows=60)
    with store.transaction() as tx:
        tx.put_memories([make_item(P2, f"other note {n} about tea and trains") for n in range(40)])
        tx.put_memories([make_item(P1, f"note {n}: {WORDS[n % len(WORDS)]} {WORDS[(3 * n) % len(WORDS)]}")
                         for n in range(10)])
    fts = [mid for mid, _ in store.lexical_search(P1, "tea garden", 5)]  # 50 memories: FTS5
    with store.transaction() as tx:
        tx.put_memories([make_item(P2, f"later note {n} about rain") for n in range(20)])
    searched = []
    index_set = store._index_set()
    real = index_set.lexical_search
    monkeypatch.setattr(index_set, "lexical_search", lambda *a, **kw: searched.append(a[0]) or real(*a, **kw))
    indexed = [mid for mid, _ in store.lexical_search(P1, "tea garden", 5)]  # 70 memories: the index
    assert searched == [P1]
    assert fts and set(indexed) == set(fts)
    mine = {i.id for i in store.query(P1, Filter(include_archived=True))}
    assert set(indexed) <= mine
    store.close()


def test_a_store_that_grew_large_keeps_no_second_copy_of_its_texts(tmp_path):
    """Once a store has held ``lexical_index_min_rows`` memories every lexical search runs on
    the index, so the FTS5 table is emptied for good (its copy of each text took about 250
    bytes a memory): later writes add nothing to it, search still finds what was stored
    before and after, the store's checks pass, and a reopened store stays so."""
    path = str(tmp_path / "lex.db")
    store = SQLiteStore(path, embedder_name="m", dim=4, lexical_index_min_rows=60)
    con = store.raw_connection()
    with store.transaction() as tx:
        tx.put_memories([make_item(P1, f"early note {n} about {WORDS[n % len(WORDS)]}") for n in range(50)])
    assert con.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 50
    with store.transaction() as tx:
        tx.put_memories([make_item(P2, f"later note {n} about rain") for n in range(20)])
    assert con.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 0
    with store.transaction() as tx:
        tx.put_memories([make_item(P1, "a late note about the cello and the snow")])
    assert con.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 0
    found = [mid for mid, _ in store.lexical_search(P1, "cello snow", 20)]
    texts = {i.id: i.content for i in store.get(P1, found)}
    assert texts[found[0]] == "a late note about the cello and the snow"
    assert any(t.startswith("early note") for t in texts.values())
    victim = found[0]
    with store.transaction() as tx:
        receipt = tx.delete_memory(P1, victim)
    assert receipt["memories"] == 1 and receipt["lexical_entries"] == 0  # no row of it in the table
    assert victim not in [mid for mid, _ in store.lexical_search(P1, "cello snow", 20)]
    lexical_problems = [p for p in store.check().problems if "lexical" in p]  # (no vectors were written)
    assert not lexical_problems, lexical_problems
    store.close()

    again = SQLiteStore(path, embedder_name="m", dim=4, lexical_index_min_rows=10**6)
    with again.transaction() as tx:
        tx.put_memories([make_item(P1, "a reopened store's note about the piano")])
    assert again.raw_connection().execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 0
    assert [again.get(P1, [m])[0].content for m, _ in again.lexical_search(P1, "reopened piano", 1)] == [
        "a reopened store's note about the piano"]
    assert not [p for p in again.check().problems if "lexical" in p]
    again.close()


def test_keep_fts_leaves_the_table_to_an_opening_that_searches_it(tmp_path):
    """Two openings of one file, one searching through FTS5 and one through the index (how
    scripts/bench_lexical_paths.py compares them): ``keep_fts`` stops the second from
    retiring the table the first searches."""
    path = str(tmp_path / "lex.db")
    fts = SQLiteStore(path, embedder_name="m", dim=4, lexical_index_min_rows=10**12)
    index = SQLiteStore(path, embedder_name="m", dim=4, lexical_index_min_rows=0, keep_fts=True)
    with fts.transaction() as tx:
        tx.put_memories([make_item(P1, f"note {n} about {WORDS[n % len(WORDS)]}") for n in range(30)])
    assert fts.raw_connection().execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 30
    a = {m for m, _ in fts.lexical_search(P1, "tea garden", 5)}
    b = {m for m, _ in index.lexical_search(P1, "tea garden", 5)}
    assert a and a == b
    index.close()
    fts.close()
