"""How the SQLite store behaves as it grows: planner statistics, the index sync query,
sampling a large partition, the recently-used index, and edges among a set of ids."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from zenbrain.index.sqlite_source import rows_sql
from zenbrain.model import Edge
from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore
from zenbrain.storage.sqlite import store as sqlite_store
from zenbrain.storage.sqlite.codec import EDGE_COLUMNS, edge_from_row, id_key
from zenbrain.storage.sqlite.filters import where as sql_where
from zenbrain.storage.sqlite.migrations import MIGRATIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_helpers import DIM, MODEL, P1, P2, T0, make_item, put, unit_rows


def open_store(path) -> SQLiteStore:
    return SQLiteStore(str(path), embedder_name=MODEL, dim=DIM)


def fill(store, part, n, start=0):
    items = [make_item(part, f"memory {part[0]} {i}", last_access=T0 + i) for i in range(start, start + n)]
    put(store, items, unit_rows(np.random.default_rng(start), n))
    return items


def all_ids(store, part):
    """Every id of the partition in the order a plain read of the table gives them."""
    return [r[0] for r in store.raw_connection().execute("SELECT id FROM memories WHERE user_id=? AND agent_id=?", part)]


def plan(con, sql, args):
    return [r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql, args)]


def test_the_index_sync_query_looks_up_changed_ids_whatever_the_statistics(tmp_path):
    s = open_store(tmp_path / "s.db")
    fill(s, P1, 20)
    con = s.raw_connection()
    # Statistics claiming a huge memories table and a tiny embeddings table: a plain join
    # would scan embeddings and find memories by content hash.
    con.execute("ANALYZE")
    con.execute("DELETE FROM sqlite_stat1")
    con.execute("INSERT INTO sqlite_stat1 VALUES ('memories', 'sqlite_autoindex_memories_1', '1000000 1')")
    con.execute("INSERT INTO sqlite_stat1 VALUES ('memories', 'memories_hash', '1000000 1')")
    con.execute("INSERT INTO sqlite_stat1 VALUES ('embeddings', 'embeddings_key', '10 1')")
    con.execute("ANALYZE sqlite_master")  # reload the statistics
    ids = [f"id{i}" for i in range(500)]  # one chunk of the sync
    sql = rows_sql(500)
    steps = plan(con, sql, (*P1, *ids))
    assert steps[0].startswith("SEARCH m USING INDEX sqlite_autoindex_memories_1"), steps
    assert steps[-1].startswith("SEARCH e USING INDEX embeddings_key (key=?)"), steps
    s.close()


def test_statistics_are_gathered_as_the_store_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_store, "ANALYZE_MIN_ROWS", 50)
    s = open_store(tmp_path / "s.db")

    def analyzed():
        con = s.raw_connection()
        if con.execute("SELECT 1 FROM sqlite_master WHERE name='sqlite_stat1'").fetchone() is None:
            return 0
        row = con.execute("SELECT stat FROM sqlite_stat1 WHERE tbl='memories' LIMIT 1").fetchone()
        return 0 if row is None else int(row[0].split()[0])

    fill(s, P1, 40)
    assert analyzed() == 0  # below the minimum
    fill(s, P1, 20, start=40)
    assert analyzed() == 60
    fill(s, P1, 50, start=60)
    assert analyzed() == 60  # not yet doubled
    fill(s, P1, 20, start=110)
    assert analyzed() == 130
    # The cache survives the statistics write, and reads are unchanged.
    assert len(s.get(P1, [f"x{i}" for i in range(3)])) == 0
    assert len(all_ids(s, P1)) == 130
    s.close()
    # A reopened store knows the statistics are current.
    s = open_store(tmp_path / "s.db")
    fill(s, P1, 10, start=130)
    assert analyzed() == 130
    s.close()


def test_sampling_a_small_partition_returns_all_its_ids_without_drawing(tmp_path):
    s = open_store(tmp_path / "s.db")
    items = fill(s, P1, 30)
    fill(s, P2, 5)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    got = s.sample_ids(P1, 30, rng, exclude={items[0].id})
    assert sorted(got) == sorted(i.id for i in items[1:])
    assert rng.bit_generator.state == state
    assert s.sample_ids(P1, 0, rng) == []
    s.close()


def test_sampling_a_partition_read_whole_matches_a_choice_over_all_ids(tmp_path):
    s = open_store(tmp_path / "s.db")
    items = fill(s, P1, 12)
    # Excluded ids of new memories not stored yet make the first read take the whole partition.
    exclude = {items[3].id} | {f"new{i}" for i in range(5)}
    got = s.sample_ids(P1, 8, np.random.default_rng(5), exclude)
    ids = [i for i in all_ids(s, P1) if i not in exclude]
    pick = np.random.default_rng(5).choice(len(ids), size=8, replace=False)
    assert got == [ids[i] for i in sorted(pick)]
    s.close()


def test_sampling_a_large_partition_reads_its_vector_index_and_is_uniform(tmp_path):
    """More memories than asked for: the sample is drawn from the partition's ids in its
    vector index (which the caller reads the sample's vectors from), never from rows read
    in the database; uniform, deterministic for a seed, never an excluded id, and only the
    partition's own."""
    s = open_store(tmp_path / "s.db")
    items = fill(s, P1, 400)
    fill(s, P2, 1500, start=400)
    exclude = {i.id for i in items[:50]} | {"not-stored-yet"}
    s.sample_ids(P1, 40, np.random.default_rng(0), exclude)  # the partition's index, loaded
    calls = []
    s.raw_connection().set_trace_callback(calls.append)
    got = s.sample_ids(P1, 40, np.random.default_rng(1), exclude)
    s.raw_connection().set_trace_callback(None)
    assert len(got) == 40 == len(set(got))
    assert set(got) <= {i.id for i in items[50:]}
    assert not any("FROM memories" in c for c in calls)
    assert got == s.sample_ids(P1, 40, np.random.default_rng(1), exclude)
    counts: dict[str, int] = {}
    rng = np.random.default_rng(2)
    for _ in range(200):
        for mid in s.sample_ids(P1, 40, rng, exclude):
            counts[mid] = counts.get(mid, 0) + 1
    assert len(counts) == 350
    assert max(counts.values()) < 3 * 200 * 40 / 350
    small = fill(s, ("tiny", "a"), 30, start=1900)
    got = s.sample_ids(("tiny", "a"), 10, np.random.default_rng(4))
    assert len(got) == 10 and set(got) <= {i.id for i in small}
    s.close()


def test_an_existing_store_gains_the_recently_used_index(tmp_path):
    path = tmp_path / "old.db"
    s = open_store(path)
    fill(s, P1, 5)
    con = s.raw_connection()
    # Turn it into a store written before the second migration.
    con.execute("DROP INDEX memories_recent")
    con.execute("DROP TABLE requests")
    con.execute("DROP TABLE partitions")
    con.execute("CREATE VIRTUAL TABLE old_fts USING fts5(content, memory_id UNINDEXED, user_id UNINDEXED, "
                "agent_id UNINDEXED, tokenize = 'porter unicode61')")
    con.execute("INSERT INTO old_fts SELECT content, memory_id, user_id, agent_id FROM memories_fts")
    con.execute("DROP TABLE memories_fts")
    con.execute("ALTER TABLE old_fts RENAME TO memories_fts")
    con.execute("DELETE FROM schema_migrations WHERE name IN ('0002_recent_index', '0005_requests', "
                "'0006_partitioned_lexical')")
    s.close()
    s = open_store(path)
    con = s.raw_connection()
    assert [r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY version")] == [m[0] for m in MIGRATIONS]
    assert con.execute("SELECT 1 FROM sqlite_master WHERE name='memories_recent'").fetchone() is not None
    where, args = sql_where(P1, Filter(contexts=frozenset({"default"})))
    steps = plan(con, f"SELECT id FROM memories WHERE {where} ORDER BY last_access DESC, id LIMIT 5", args)
    assert any("memories_recent" in step for step in steps), steps
    assert [i.content for i in s.query(P1, order_by="last_access", descending=True, limit=2)] == ["memory alice 4", "memory alice 3"]
    # The lexical entries moved into their partitions' rowid ranges (migration 0006) and are found as before.
    assert [mid for mid, _ in s.lexical_search(P1, "alice", 10)] != []
    s.close()


def test_edges_among_equals_the_pairwise_filter_in_the_same_order(tmp_path):
    s = open_store(tmp_path / "s.db")
    rng = np.random.default_rng(9)
    ids = [f"m{i:03d}" for i in range(55)] + ["Z1", "a1", "é1", "ß2", "中3"]
    edges = {}
    for _ in range(600):
        a, b = rng.choice(ids, 2, replace=False)
        rel = str(rng.choice(["similar", "temporal", "supports"]))
        edges[(a, b, rel)] = Edge(str(a), str(b), rel, float(rng.random()), 0.1, 1, T0)
    with s.transaction() as tx:
        tx.put_edges(P1, list(edges.values()))
        tx.put_edges(P2, list(edges.values())[:50])
    con = s.raw_connection()
    for n in (1, 5, 30, 60):
        some = [str(x) for x in rng.choice(ids, n, replace=False)]
        q = ",".join("?" * len(some))
        keys = [id_key(x) for x in some]
        want = [edge_from_row(r) for r in con.execute(
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE part=(SELECT id FROM partitions WHERE user_id=? AND agent_id=?) "
            f"AND src IN ({q}) AND dst IN ({q}) ORDER BY dst, src, relation", (*P1, *keys, *keys))]
        assert s.edges(P1, some, both_ends=True) == want
    s.close()


def _edges_by_union_and_first_seen(con, part, ids):
    """The edges touching ``ids`` as a union of the two lookups (the second through the dst
    index, whatever the planner's statistics), each key where first met."""
    seen, out = set(), []
    idl = list(dict.fromkeys(ids))
    for i in range(0, len(idl), 400):
        chunk = idl[i : i + 400]
        q = ",".join("?" * len(chunk))
        keys = [id_key(x) for x in chunk]
        number = "(SELECT id FROM partitions WHERE user_id=? AND agent_id=?)"
        for r in con.execute(
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE part={number} AND src IN ({q}) UNION ALL "
            f"SELECT {EDGE_COLUMNS} FROM edges INDEXED BY edges_dst WHERE part={number} AND dst IN ({q})",
            (*part, *keys, *part, *keys),
        ):
            e = edge_from_row(r)
            if (e.src, e.dst, e.relation) not in seen:
                seen.add((e.src, e.dst, e.relation))
                out.append(e)
    return out


def test_edges_touching_ids_are_each_edge_once_where_first_met(tmp_path):
    s = open_store(tmp_path / "s.db")
    rng = np.random.default_rng(10)
    ids = [f"m{i:04d}" for i in range(1000)]
    edges = {}
    for _ in range(5000):
        a, b = rng.choice(ids, 2, replace=False)
        rel = str(rng.choice(["similar", "temporal"]))
        edges[(a, b, rel)] = Edge(str(a), str(b), rel, float(rng.random()), 0.1, 1, T0)
    with s.transaction() as tx:
        tx.put_edges(P1, list(edges.values()))
    con = s.raw_connection()
    for n in (1, 50, 399, 400, 401, 950):  # one chunk and several
        some = [str(x) for x in rng.choice(ids, n, replace=False)]
        some += some[:3]  # repeated ids count once
        assert s.edges(P1, some) == _edges_by_union_and_first_seen(con, P1, some)
    by_key = lambda e: (e.dst, e.src, e.relation)
    assert sorted(s.edges(P1), key=by_key) == sorted(edges.values(), key=by_key)
    s.close()


def test_a_batch_of_content_hashes_is_looked_up_by_hash_whatever_the_planner_statistics_say(tmp_path):
    """Statistics sampled from a large file can put a partition at a thousand rows; the
    planner then walked the whole partition for a store_many batch's thousand hashes (the
    repeat check, 105 ms at 200k memories and growing with the store)."""
    s = open_store(tmp_path / "s.db")
    items = fill(s, P1, 50)
    con = s.raw_connection()
    con.execute("ANALYZE")
    con.execute("DELETE FROM sqlite_stat1 WHERE tbl='memories'")
    con.executemany("INSERT INTO sqlite_stat1 VALUES ('memories', ?, ?)", [
        (name, stat) for name, stat in (
            ("memories_thread", "200000 1001 1001 1001 1001"), ("memories_partition", "200000 1001 1001 1001 1001"),
            ("memories_recent", "200000 1001 1001 1001"), ("memories_event", "200000 1001 1001 1"),
            ("memories_due", "200000 1001 1001 1001"), ("memories_hash", "200000 1"),
            ("sqlite_autoindex_memories_1", "200000 1"))])
    con.execute("ANALYZE sqlite_schema")  # the statistics above are the planner's now
    hashes = frozenset([items[0].content_hash, *(f"{i:064x}" for i in range(999))])
    for flt in (Filter(content_hashes=hashes), Filter(ids=frozenset([items[0].id, *(f"x{i}" for i in range(999))]))):
        calls: list[str] = []
        con.set_trace_callback(calls.append)
        with s.transaction():  # its reads run on the traced connection
            got = s.query(P1, flt)
        con.set_trace_callback(None)
        assert [m.id for m in got] == [items[0].id]
        sql = next(c for c in calls if c.startswith("SELECT") and "FROM memories WHERE" in c)
        plan = " ".join(r[3] for r in con.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "memories_hash" in plan or "sqlite_autoindex_memories_1" in plan, plan
    s.close()
