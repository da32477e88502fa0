"""Stores written by earlier versions open with their data carried over."""

from __future__ import annotations

from zenbrain.storage.sqlite import SQLiteStore


def test_the_topic_vector_keeps_its_values_under_its_new_name(tmp_path):
    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    con.execute("DELETE FROM schema_migrations WHERE name='0003_topic_vector'")  # as an older version left it
    con.execute("INSERT INTO kv VALUES ('u', 'a', 'context_vector', '\"00ff\"')")
    con.execute(
        "INSERT INTO memories (id, user_id, agent_id, context, layer, kind, content, content_hash, metadata, created_at,"
        " updated_at, last_access, importance, valence, arousal, stability, strength, conf_alpha, conf_beta, state)"
        " VALUES ('i', 'u', 'a', 'default', 'semantic', 'fact', 'x', 'h', '{}', 0, 0, 0, 0.5, 0, 0, 1, 0.6, 1, 1,"
        " '{\"review_ctx\": \"00ff\", \"fsrs\": {\"reps\": 1}}')")
    s.close()
    s = SQLiteStore(path, embedder_name="m", dim=4)
    assert s.kv_get(("u", "a"), "topic_vector") == "00ff" and s.kv_get(("u", "a"), "context_vector") is None
    assert s.get(("u", "a"), ["i"])[0].state == {"fsrs": {"reps": 1}, "review_topic": "00ff"}
    s.close()


def test_float32_vectors_become_float16_in_a_table_without_rowid(tmp_path):
    import numpy as np
    from storage_helpers import P1, make_item, put

    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    items = [make_item(P1, f"memory {i}") for i in range(3)]
    vecs = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    put(s, items)
    con = s.raw_connection()
    # The vectors table as 0008 left it: float32 blobs in a rowid table with a unique index.
    con.execute("DROP TABLE embeddings")
    con.execute("CREATE TABLE embeddings (model TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL)")
    con.execute("CREATE UNIQUE INDEX embeddings_key ON embeddings(model, hash)")
    con.executemany("INSERT INTO embeddings VALUES ('m', ?, ?)",
                    [(i.content_hash, v.astype("<f4").tobytes()) for i, v in zip(items, vecs)])
    con.execute("DELETE FROM schema_migrations WHERE name IN ('0009_float16_vectors', '0011_vectors_by_key')")
    s.close()

    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    assert {len(b) for (b,) in con.execute("SELECT vector FROM embeddings")} == {4 * 2}
    got = s.cached_embeddings("m", [i.content_hash for i in items])
    for i, v in zip(items, vecs):
        np.testing.assert_array_equal(got[i.content_hash], v.astype(np.float16).astype(np.float32))
        assert abs(got[i.content_hash] - v).max() < 1e-3
    # Search reads the converted vectors: each memory is its own vector's best match.
    for i, v in zip(items, vecs):
        assert s.vector_search(P1, v, 1)[0][0] == i.id
    s.close()
    s = SQLiteStore(path, embedder_name="m", dim=4)  # once: reopening runs nothing again
    assert s.raw_connection().execute(
        "SELECT COUNT(*) FROM schema_migrations WHERE name='0009_float16_vectors'").fetchone()[0] == 1
    s.close()


def test_lean_rows_keep_one_copy_of_the_content_hash_and_compact_json(tmp_path):
    from dataclasses import replace

    import numpy as np
    from storage_helpers import P1, make_item, put

    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    own = make_item(P1, "a fact", state={"fsrs": {"reps": 1}, "priority": 0.5}, metadata={"source": "chat"})
    turn = replace(make_item(P1, "a turn"), vector_key="k" * 64)
    put(s, [own, turn], np.eye(4, dtype=np.float32)[:2])
    with s.transaction() as tx:
        tx.put_embeddings("m", ["k" * 64], np.eye(4, dtype=np.float32)[2:3])
    con = s.raw_connection()
    # As 0009 left a store: every row names its vector key, JSON with spaces.
    con.execute("UPDATE memories SET vector_key = content_hash WHERE vector_key IS NULL")
    con.execute("UPDATE memories SET state = '{\"fsrs\": {\"reps\": 1}, \"priority\": 0.5}' WHERE id = ?", (own.id,))
    con.execute("DROP INDEX memories_vector_key")
    con.execute("CREATE INDEX memories_vector_key ON memories(vector_key)")
    con.execute("DELETE FROM schema_migrations WHERE name='0010_lean_rows'")
    s.close()

    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    rows = dict(con.execute("SELECT id, vector_key FROM memories"))
    assert rows == {own.id: None, turn.id: "k" * 64}
    assert con.execute("SELECT state FROM memories WHERE id=?", (own.id,)).fetchone()[0] == \
        '{"fsrs":{"reps":1},"priority":0.5}'
    assert "WHERE vector_key IS NOT NULL" in con.execute(
        "SELECT sql FROM sqlite_master WHERE name='memories_vector_key'").fetchone()[0]
    got = {i.id: i for i in s.get(P1, [own.id, turn.id])}
    assert got[own.id].vector_key is None and got[turn.id].vector_key == "k" * 64
    assert got[own.id].state == {"fsrs": {"reps": 1}, "priority": 0.5}
    # Each memory is still found by its own vector (the one of its key).
    assert s.vector_search(P1, np.eye(4, dtype=np.float32)[0], 1)[0][0] == own.id
    assert s.vector_search(P1, np.eye(4, dtype=np.float32)[2], 1)[0][0] == turn.id
    # Erasing a memory erases the vector it alone used, found through either column.
    with s.transaction() as tx:
        assert tx.delete_memory(P1, own.id)["vectors"] == 1
        assert tx.delete_memory(P1, turn.id)["vectors"] == 1
    assert s.cached_embeddings("m", [own.content_hash, "k" * 64]) == {}
    s.close()


def test_the_vector_in_use_test_is_answered_by_indexes(tmp_path):
    from zenbrain.storage.sqlite.codec import USES_VECTOR, uses_vector_args

    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name="m", dim=4)
    plan = [r[3] for r in s.raw_connection().execute(
        f"EXPLAIN QUERY PLAN SELECT 1 FROM memories WHERE {USES_VECTOR} LIMIT 1", uses_vector_args("k"))]
    assert not any(step.startswith("SCAN") for step in plan), plan
    assert any("memories_hash" in step for step in plan) and any("memories_vector_key" in step for step in plan), plan
    assert "substr(vector_key, 1, 16)" in s.raw_connection().execute(
        "SELECT sql FROM sqlite_master WHERE name='memories_vector_key'").fetchone()[0]
    s.close()


def test_vectors_are_keyed_by_the_bytes_of_their_hash_in_a_rowid_table(tmp_path):
    import numpy as np
    from storage_helpers import P1, make_item, put

    from zenbrain.index.vector_keys import key_blob

    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    items = [make_item(P1, f"memory {i}") for i in range(3)]
    vecs = np.eye(4, dtype=np.float32)[:3]
    put(s, items, vecs)
    con = s.raw_connection()
    # The vectors table as 0009 left it: (model, hex hash) without a rowid, with a row of
    # another embedder that a store of "m" never reads.
    con.execute("DROP TABLE embeddings")
    con.execute("CREATE TABLE embeddings (model TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL, "
                "PRIMARY KEY (hash, model)) WITHOUT ROWID")
    con.executemany("INSERT INTO embeddings VALUES ('m', ?, ?)",
                    [(i.content_hash, v.astype("<f2").tobytes()) for i, v in zip(items, vecs)])
    con.execute("INSERT INTO embeddings VALUES ('other', ?, ?)", (items[0].content_hash, vecs[2].astype("<f2").tobytes()))
    con.execute("DELETE FROM schema_migrations WHERE name='0011_vectors_by_key'")
    s.close()

    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name='embeddings'").fetchone()[0]
    assert "WITHOUT ROWID" not in sql and "model" not in sql
    assert "UNIQUE" in con.execute("SELECT sql FROM sqlite_master WHERE name='embeddings_key'").fetchone()[0]
    rows = dict(con.execute("SELECT key, vector FROM embeddings"))
    assert set(rows) == {key_blob(i.content_hash) for i in items}  # the other embedder's row is gone
    assert all(len(k) == 32 for k in rows)
    got = s.cached_embeddings("m", [i.content_hash for i in items])
    for i, v in zip(items, vecs):
        np.testing.assert_array_equal(got[i.content_hash], v)
    for i, v in zip(items, vecs):  # search reads them: each memory is its own vector's best match
        assert s.vector_search(P1, v, 1)[0][0] == i.id
    assert s.check().ok
    s.close()


def test_lookups_by_content_hash_go_through_the_index_of_hash_prefixes(tmp_path):
    from storage_helpers import P1, make_item, put

    from zenbrain.storage.base import Filter
    from zenbrain.storage.sqlite.filters import where

    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name="m", dim=4)
    items = [make_item(P1, f"memory {i}") for i in range(5)]
    put(s, items)
    con = s.raw_connection()
    assert "substr(content_hash, 1, 16)" in con.execute(
        "SELECT sql FROM sqlite_master WHERE name='memories_hash'").fetchone()[0]
    flt = Filter(all_sessions=True, contexts=None, include_archived=True,
                 content_hashes=frozenset({items[1].content_hash, items[3].content_hash, "f" * 64}))
    clause, args = where(P1, flt, use_indexes=False)
    # With and without planner statistics like those of a 10k store (with them, a clause
    # naming the column beside the prefix once made SQLite scan the table).
    for stats in (False, True):
        if stats:
            con.execute("ANALYZE")
            con.execute("DELETE FROM sqlite_stat1 WHERE tbl='memories'")
            con.executemany("INSERT INTO sqlite_stat1 VALUES ('memories', ?, ?)", [
                ("memories_vector_key", "10416 1"), ("memories_hash", "10519 1"),
                ("memories_thread", "10143 501 501 501 501"), ("memories_recent", "10168 501 501 334"),
                ("memories_due", "10168 501 501 334"), ("memories_event", "10168 501 501 334"),
                ("memories_partition", "10200 501 501 501 501"), ("sqlite_autoindex_memories_1", "5304 1")])
            con.execute("ANALYZE sqlite_master")
        for hashes in ([items[1].content_hash], [items[1].content_hash, items[3].content_hash, "f" * 64]):
            one = Filter(all_sessions=True, contexts=None, include_archived=True, content_hashes=frozenset(hashes))
            sql, sql_args = where(P1, one, use_indexes=False)
            plan = [r[3] for r in con.execute(
                f"EXPLAIN QUERY PLAN SELECT id FROM memories WHERE {sql} ORDER BY created_at", sql_args)]
            assert any("memories_hash" in step for step in plan), (stats, hashes, plan)
    assert {r[0] for r in con.execute(f"SELECT id FROM memories WHERE {clause}", args)} == {items[1].id, items[3].id}
    s.close()


def test_edges_are_keyed_by_partition_number_and_id_bytes(tmp_path):
    import numpy as np
    from storage_helpers import P1, P2, make_item, put

    from zenbrain.model import Edge

    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    hexa, hexb = "0" * 31 + "a", "f" * 32
    items = [make_item(P1, "one", id=hexa), make_item(P1, "two", id=hexb), make_item(P1, "three", id="custom-id")]
    put(s, items, np.eye(4, dtype=np.float32)[:3])
    put(s, [make_item(P2, "other", id="e" * 32)], np.eye(4, dtype=np.float32)[3:])
    edges = [Edge(hexa, hexb, "similar", 0.5, 0.1, 2, 100.0), Edge(hexb, "custom-id", "temporal", 1.0, 1.0, 0, 50.0)]
    con = s.raw_connection()
    # The edges table as 0013 left it: keyed by user, agent and the ids' text.
    con.execute("DROP TABLE edges")
    con.execute("CREATE TABLE edges (user_id TEXT NOT NULL, agent_id TEXT NOT NULL, src TEXT NOT NULL, "
                "dst TEXT NOT NULL, relation TEXT NOT NULL, weight REAL NOT NULL, variance REAL NOT NULL, "
                "activations INTEGER NOT NULL, updated_at REAL NOT NULL, "
                "PRIMARY KEY (user_id, agent_id, src, dst, relation)) WITHOUT ROWID")
    con.execute("CREATE INDEX edges_dst ON edges(user_id, agent_id, dst)")
    con.executemany("INSERT INTO edges VALUES (?,?,?,?,?,?,?,?,?)",
                    [(*P1, e.src, e.dst, e.relation, e.weight, e.variance, e.activations, e.updated_at) for e in edges])
    con.execute("DELETE FROM schema_migrations WHERE name='0014_edges_by_partition_number'")
    s.close()

    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    cols = [r[1] for r in con.execute("PRAGMA table_info(edges)")]
    assert cols[:4] == ["part", "src", "dst", "relation"] and "user_id" not in cols
    kinds = {r[0] for r in con.execute("SELECT typeof(src) FROM edges")} | {
        r[0] for r in con.execute("SELECT typeof(dst) FROM edges")}
    assert kinds == {"blob", "text"}  # the two zenbrain ids as 16 bytes, the custom one as text
    assert s.edges(P1) == sorted(edges, key=lambda e: (e.src, e.dst, e.relation))
    assert s.edges(P1, ["custom-id"]) == [edges[1]]
    assert s.edges(P1, [hexa, hexb], both_ends=True) == [edges[0]]
    assert s.edges(P2) == [] and s.stats(P1).edges == 2
    assert s.check().ok
    with s.transaction() as tx:  # erasing a memory erases its edges, whatever its id's form
        assert tx.delete_memory(P1, "custom-id")["edges"] == 1
    assert s.edges(P1) == [edges[0]]
    s.close()


def test_history_is_keyed_by_partition_number_and_id_bytes(tmp_path):
    import numpy as np
    from storage_helpers import P1, P2, make_item, put

    from zenbrain.model import HistoryEvent

    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    hexa = "0" * 31 + "a"
    put(s, [make_item(P1, "one", id=hexa), make_item(P1, "two", id="custom-id")], np.eye(4, dtype=np.float32)[:2])
    put(s, [make_item(P2, "other", id="e" * 32)], np.eye(4, dtype=np.float32)[2:3])
    con = s.raw_connection()
    # The history table as 0014 left it: keyed by user, agent and the id's text.
    con.execute("DROP TABLE history")
    con.execute("CREATE TABLE history (seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, "
                "agent_id TEXT NOT NULL, memory_id TEXT NOT NULL, at REAL NOT NULL, action TEXT NOT NULL, "
                "detail TEXT NOT NULL)")
    con.execute("CREATE INDEX history_memory ON history(user_id, agent_id, memory_id)")
    old = [(*P1, hexa, 10.0, "created", '{"layer":"semantic"}'), (*P1, "custom-id", 11.0, "created", "{}"),
           (*P1, hexa, 12.0, "updated", '{"debated_with":"custom-id"}'), (*P2, "e" * 32, 13.0, "created", "{}")]
    con.executemany("INSERT INTO history (user_id, agent_id, memory_id, at, action, detail) VALUES (?,?,?,?,?,?)", old)
    con.execute("DELETE FROM schema_migrations WHERE name='0015_history_by_partition_number'")
    s.close()

    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    cols = [r[1] for r in con.execute("PRAGMA table_info(history)")]
    assert cols == ["seq", "part", "memory_id", "at", "action", "detail"]
    assert {r[0] for r in con.execute("SELECT typeof(memory_id) FROM history")} == {"blob", "text"}
    assert s.history(P1, hexa) == [HistoryEvent(hexa, 10.0, "created", {"layer": "semantic"}),
                                   HistoryEvent(hexa, 12.0, "updated", {"debated_with": "custom-id"})]
    assert s.history(P1, "custom-id") == [HistoryEvent("custom-id", 11.0, "created", {})]
    assert s.history(P2, "e" * 32)[0].at == 13.0 and s.history(P2, hexa) == []
    with s.transaction() as tx:  # new events come after the old ones
        tx.log(P1, [HistoryEvent(hexa, 14.0, "read", {})])
    assert [e.at for e in s.history(P1, hexa)] == [10.0, 12.0, 14.0]
    with s.transaction() as tx:  # erasing a memory erases its events and those that name it
        assert tx.delete_memory(P1, "custom-id")["history_rows"] == 2
    assert [e.at for e in s.history(P1, hexa)] == [10.0, 14.0] and s.history(P1, "custom-id") == []
    assert s.check().ok
    s.close()


def test_records_move_to_rowid_tables_with_their_values(tmp_path):
    path = str(tmp_path / "old.db")
    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    # The two tables as 0015 left them: WITHOUT ROWID, so a large value sat in the b-tree's key.
    con.execute("DROP TABLE kv")
    con.execute("CREATE TABLE kv (user_id TEXT NOT NULL, agent_id TEXT NOT NULL, key TEXT NOT NULL, "
                "value TEXT NOT NULL, PRIMARY KEY (user_id, agent_id, key)) WITHOUT ROWID")
    con.execute("INSERT INTO kv VALUES ('u', 'a', 'topic_vector', '\"00ff\"'), ('u', 'a', 'big', ?)",
                ('"' + "x" * 100_000 + '"',))
    con.execute("DROP TABLE requests")
    con.execute("CREATE TABLE requests (user_id TEXT NOT NULL, agent_id TEXT NOT NULL, key TEXT NOT NULL, "
                "fingerprint TEXT NOT NULL, owner TEXT NOT NULL, created_at REAL NOT NULL, memory_ids TEXT NOT NULL, "
                "status INTEGER, response TEXT, PRIMARY KEY (user_id, agent_id, key)) WITHOUT ROWID")
    con.execute("CREATE INDEX requests_age ON requests(created_at)")
    con.execute("INSERT INTO requests VALUES ('u', 'a', 'k1', 'f', 'o', 5.0, '[\"i\"]', 200, '{\"ok\": true}')")
    con.execute("DELETE FROM schema_migrations WHERE name='0016_records_in_rowid_tables'")
    s.close()

    s = SQLiteStore(path, embedder_name="m", dim=4)
    con = s.raw_connection()
    for table in ("kv", "requests"):
        sql = con.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()[0]
        assert "WITHOUT ROWID" not in sql.upper()
    assert s.kv_get_many(("u", "a"), ["topic_vector", "big"]) == {"topic_vector": "00ff", "big": "x" * 100_000}
    with s.transaction() as tx:  # the key still decides what a write replaces
        tx.kv_put(("u", "a"), {"topic_vector": "0a0b"})
    assert s.kv_get(("u", "a"), "topic_vector") == "0a0b"
    assert con.execute("SELECT owner, memory_ids, status, response FROM requests").fetchall() == [
        ("o", '["i"]', 200, '{"ok": true}')]
    assert [r[1] for r in con.execute("PRAGMA index_list(requests)")].count("requests_age") == 1
    assert s.check().ok
    s.close()
