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
