"""Ordered, named schema migrations for the SQLite store. Append only; never edit one
that has shipped. Each runs in its own transaction and is recorded in schema_migrations."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from ...errors import StorageError
from ...index import vector_keys
from ...index.vectors import vector_blob
from . import codec


def _float16_blob(blob: bytes | None) -> bytes | None:
    """A float32 vector blob (every vector before 0009) as the store keeps vectors now."""
    return None if blob is None else vector_blob(np.frombuffer(blob, dtype="<f4"))


def _prepare_0009(db: sqlite3.Connection) -> None:
    db.create_function("zb_float16", 1, _float16_blob, deterministic=True)


# A migration is SQL, run statement by statement, after an optional Python step that
# prepares the connection (e.g. registers the SQL functions the statements call).
Migration = tuple[str, str] | tuple[str, str, Callable[[sqlite3.Connection], None]]

MIGRATIONS: list[Migration] = [
    (
        "0001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            session_id TEXT,
            context TEXT NOT NULL,
            layer TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            metadata TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            event_time REAL,
            last_access REAL NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            importance REAL NOT NULL,
            valence REAL NOT NULL,
            arousal REAL NOT NULL,
            stability REAL NOT NULL,
            strength REAL NOT NULL,
            conf_alpha REAL NOT NULL,
            conf_beta REAL NOT NULL,
            archived INTEGER NOT NULL DEFAULT 0,
            version INTEGER NOT NULL DEFAULT 1,
            due_at REAL,
            state TEXT NOT NULL
        );
        CREATE INDEX memories_partition ON memories(user_id, agent_id, layer, archived);
        CREATE INDEX memories_event ON memories(user_id, agent_id, event_time);
        CREATE INDEX memories_due ON memories(user_id, agent_id, due_at);
        CREATE INDEX memories_hash ON memories(content_hash);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, memory_id UNINDEXED, user_id UNINDEXED, agent_id UNINDEXED,
            tokenize = 'porter unicode61'
        );

        CREATE TABLE embeddings (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model, hash)
        ) WITHOUT ROWID;

        CREATE TABLE edges (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            relation TEXT NOT NULL,
            weight REAL NOT NULL,
            variance REAL NOT NULL,
            activations INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, agent_id, src, dst, relation)
        ) WITHOUT ROWID;
        CREATE INDEX edges_dst ON edges(user_id, agent_id, dst);

        CREATE TABLE history (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            at REAL NOT NULL,
            action TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        CREATE INDEX history_memory ON history(user_id, agent_id, memory_id);

        CREATE TABLE kv (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (user_id, agent_id, key)
        ) WITHOUT ROWID;

        -- Every committed change to a memory row, so in-memory indexes of every
        -- process can follow the database exactly.
        CREATE TABLE changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            memory_id TEXT NOT NULL
        );
        """,
    ),
    (
        "0002_recent_index",
        """
        -- The memories used most recently first (what new memories link to), found without
        -- sorting the whole partition.
        CREATE INDEX memories_recent ON memories(user_id, agent_id, last_access);
        """,
    ),
    (
        "0003_topic_vector",
        """
        -- The running average of recent queries is the recall "topic" (it was called a
        -- context vector, a word the library keeps for a scope's context).
        UPDATE kv SET key = 'topic_vector' WHERE key = 'context_vector';
        UPDATE memories
           SET state = json_set(json_remove(state, '$.review_ctx'), '$.review_topic', json_extract(state, '$.review_ctx'))
         WHERE json_type(state, '$.review_ctx') IS NOT NULL;
        """,
    ),
    (
        "0004_conversation_turns",
        """
        -- Conversation turns: who spoke, the turn's place in its session, the text lexical
        -- search indexes (the turn with the one before it) and the key of its vector in
        -- the embedding cache (which may embed more than its own content).
        ALTER TABLE memories ADD COLUMN speaker TEXT;
        ALTER TABLE memories ADD COLUMN position INTEGER;
        ALTER TABLE memories ADD COLUMN index_text TEXT;
        ALTER TABLE memories ADD COLUMN vector_key TEXT;
        UPDATE memories SET vector_key = content_hash;
        CREATE INDEX memories_thread ON memories(user_id, agent_id, session_id, position);
        CREATE INDEX memories_vector_key ON memories(vector_key);
        """,
    ),
    (
        "0005_requests",
        """
        -- Write requests that carried an idempotency key: a retry with the same key gets the
        -- first request's result instead of writing again. The row is written in the same
        -- transaction as the request's write, and the response once the write has committed.
        CREATE TABLE requests (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            owner TEXT NOT NULL,
            created_at REAL NOT NULL,
            memory_ids TEXT NOT NULL,
            status INTEGER,
            response TEXT,
            PRIMARY KEY (user_id, agent_id, key)
        ) WITHOUT ROWID;
        CREATE INDEX requests_age ON requests(created_at);
        """,
    ),
    (
        "0006_partitioned_lexical",
        """
        -- Each (user, agent) gets a number, and its lexical entries get the rowids
        -- number * 2^32 + 1, + 2, ...: a search is an FTS query with a rowid range, which
        -- FTS5 answers inside the partition instead of ranking every partition's matches
        -- and filtering them afterwards (scores are unchanged). Rows are never deleted, so a
        -- cached number never goes stale. next_entry is the partition's next free rowid.
        CREATE TABLE partitions (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            next_entry INTEGER NOT NULL DEFAULT 1,
            UNIQUE (user_id, agent_id)
        );
        INSERT INTO partitions (user_id, agent_id) SELECT DISTINCT user_id, agent_id FROM memories_fts;
        CREATE VIRTUAL TABLE memories_fts_part USING fts5(
            content, memory_id UNINDEXED, user_id UNINDEXED, agent_id UNINDEXED,
            tokenize = 'porter unicode61'
        );
        INSERT INTO memories_fts_part (rowid, content, memory_id, user_id, agent_id)
            SELECT (p.id << 32) + row_number() OVER (PARTITION BY p.id ORDER BY f.rowid),
                   f.content, f.memory_id, f.user_id, f.agent_id
            FROM memories_fts f JOIN partitions p ON p.user_id = f.user_id AND p.agent_id = f.agent_id;
        UPDATE partitions SET next_entry = 1 + (
            SELECT COUNT(*) FROM memories_fts_part
            WHERE rowid BETWEEN (partitions.id << 32) AND (partitions.id << 32) + 4294967295);
        DROP TABLE memories_fts;
        ALTER TABLE memories_fts_part RENAME TO memories_fts;
        """,
    ),
    (
        "0007_valid_time",
        """
        -- Valid time: a fact replaced by a later one keeps its row and history and gets the
        -- time it stopped holding and the memory that replaced it. Current recall reads
        -- the rows whose valid_until is empty (or later than now).
        ALTER TABLE memories ADD COLUMN valid_until REAL;
        ALTER TABLE memories ADD COLUMN superseded_by TEXT;
        CREATE INDEX memories_superseded ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
        """,
    ),
    (
        "0008_embeddings_rowid",
        """
        -- Vectors in a rowid table: a WITHOUT ROWID table keeps at most about 1 KB of a row
        -- in its b-tree page, so each 1.5 KB float32 vector spilled into an overflow page
        -- of its own, mostly empty (4.7 KB per vector on disk), where a rowid table stores it
        -- inline (2.1 KB, see docs/indexes.md, "Vectors in SQLite"). Same vectors, same keys.
        CREATE TABLE embeddings_rowid (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector BLOB NOT NULL
        );
        INSERT INTO embeddings_rowid (model, hash, vector) SELECT model, hash, vector FROM embeddings;
        DROP TABLE embeddings;
        ALTER TABLE embeddings_rowid RENAME TO embeddings;
        CREATE UNIQUE INDEX embeddings_key ON embeddings(model, hash);
        """,
    ),
    (
        "0009_float16_vectors",
        """
        -- Vectors as float16 (768 bytes a MiniLM vector instead of 1,536): a row fits its
        -- b-tree page, so the table is keyed by (hash, model) without a rowid and without a
        -- second index (erasing a vector looks it up by hash alone). The search indexes keep
        -- float16 too, and the top 10 over float16-rounded vectors equals float32's
        -- (docs/scale.md, "Memory and disk").
        CREATE TABLE embeddings_f16 (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (hash, model)
        ) WITHOUT ROWID;
        INSERT INTO embeddings_f16 (model, hash, vector) SELECT model, hash, zb_float16(vector) FROM embeddings;
        DROP TABLE embeddings;
        ALTER TABLE embeddings_f16 RENAME TO embeddings;
        """,
        _prepare_0009,
    ),
    (
        "0010_lean_rows",
        """
        -- A memory whose vector is its content's (most) keeps vector_key NULL instead of a
        -- second copy of its content hash, and the index on vector_key holds only the
        -- others. JSON of states, metadata and history details without spaces (json()
        -- minifies and keeps keys in order). The search indexes key vectors as before.
        UPDATE memories SET vector_key = NULL WHERE vector_key = content_hash;
        DROP INDEX memories_vector_key;
        CREATE INDEX memories_vector_key ON memories(vector_key) WHERE vector_key IS NOT NULL;
        UPDATE memories SET state = json(state), metadata = json(metadata);
        UPDATE history SET detail = json(detail);
        """,
    ),
    (
        "0011_vectors_by_key",
        """
        -- Vectors in a rowid table keyed by the 32 bytes of their content hash
        -- (index/vector_keys.py). New rows are appended, so the table's pages fill: five
        -- 768-byte float16 vectors a 4 KB page, where a table ordered by random hex hashes
        -- held four and split its pages about four fifths full (1,207 bytes a vector at
        -- 100k). A store keeps one embedder's vectors (its meta row), so the embedder's
        -- name leaves every row. A unique index finds a vector by its key.
        CREATE TABLE embeddings_by_key (key BLOB NOT NULL, vector BLOB NOT NULL);
        CREATE UNIQUE INDEX embeddings_by_key_key ON embeddings_by_key(key);
        INSERT OR IGNORE INTO embeddings_by_key (key, vector)
            SELECT zb_vector_key(hash), vector FROM embeddings
            WHERE model = COALESCE((SELECT value FROM meta WHERE key = 'embedder'), model);
        DROP TABLE embeddings;
        ALTER TABLE embeddings_by_key RENAME TO embeddings;
        DROP INDEX embeddings_by_key_key;
        CREATE UNIQUE INDEX embeddings_key ON embeddings(key);
        """,
        vector_keys.register,
    ),
    (
        "0012_hash_prefix_index",
        """
        -- The content hash index holds the hash's first 16 hex digits (codec.HASH_PREFIX):
        -- lookups by hash test the whole hash on the rows it finds, and the index takes a
        -- third of the bytes (83 bytes a memory at 100k).
        DROP INDEX memories_hash;
        CREATE INDEX memories_hash ON memories(substr(content_hash, 1, 16));
        """,
    ),
    (
        "0013_vector_key_prefix_index",
        """
        -- The same for the keys of conversation turns embedded with their context (most
        -- memories of a store fed conversations): 16-digit prefixes of the non-NULL keys.
        DROP INDEX memories_vector_key;
        CREATE INDEX memories_vector_key ON memories(substr(vector_key, 1, 16)) WHERE vector_key IS NOT NULL;
        """,
    ),
    (
        "0014_edges_by_partition_number",
        """
        -- Edges keyed by the partition's number (the partitions table) instead of its user
        -- and agent, and by the 16 bytes of each end's id (codec.id_key: an id that is not
        -- 32 hex digits stays text): every edge's row and its dst index entry repeated both.
        INSERT OR IGNORE INTO partitions (user_id, agent_id) SELECT DISTINCT user_id, agent_id FROM edges;
        CREATE TABLE edges_by_part (
            part INTEGER NOT NULL,
            src NOT NULL,
            dst NOT NULL,
            relation TEXT NOT NULL,
            weight REAL NOT NULL,
            variance REAL NOT NULL,
            activations INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (part, src, dst, relation)
        ) WITHOUT ROWID;
        INSERT INTO edges_by_part
            SELECT p.id, zb_id(e.src), zb_id(e.dst), e.relation, e.weight, e.variance, e.activations, e.updated_at
            FROM edges e JOIN partitions p ON p.user_id = e.user_id AND p.agent_id = e.agent_id;
        DROP TABLE edges;
        ALTER TABLE edges_by_part RENAME TO edges;
        CREATE INDEX edges_dst ON edges(part, dst);
        """,
        codec.register,
    ),
    (
        "0015_history_by_partition_number",
        """
        -- History keyed by the partition's number and the 16 bytes of the memory's id, as the
        -- edges are since 0014: every event's row and its index entry repeated the user, the
        -- agent and the 32-character id (a store of one event a memory: ~200 -> ~110 bytes).
        INSERT OR IGNORE INTO partitions (user_id, agent_id) SELECT DISTINCT user_id, agent_id FROM history;
        CREATE TABLE history_by_part (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            part INTEGER NOT NULL,
            memory_id NOT NULL,
            at REAL NOT NULL,
            action TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        INSERT INTO history_by_part (seq, part, memory_id, at, action, detail)
            SELECT h.seq, p.id, zb_id(h.memory_id), h.at, h.action, h.detail
            FROM history h JOIN partitions p ON p.user_id = h.user_id AND p.agent_id = h.agent_id ORDER BY h.seq;
        DROP TABLE history;
        ALTER TABLE history_by_part RENAME TO history;
        CREATE INDEX history_memory ON history(part, memory_id);
        """,
        codec.register,
    ),
    (
        "0016_records_in_rowid_tables",
        """
        -- Partition records and request records in rowid tables. In a WITHOUT ROWID table
        -- the whole row is the b-tree's key, and a row that overflows its page (a sleep's
        -- spectral cache of 35 MB at a million memories) is read whole each time a search
        -- compares against it: every lookup of a small record that passed it, of any user,
        -- read 35 MB (a recall 8 -> 96 ms). A rowid table's index holds the key columns only.
        CREATE TABLE kv_rowid (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (user_id, agent_id, key)
        );
        INSERT INTO kv_rowid SELECT user_id, agent_id, key, value FROM kv;
        DROP TABLE kv;
        ALTER TABLE kv_rowid RENAME TO kv;
        CREATE TABLE requests_rowid (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            owner TEXT NOT NULL,
            created_at REAL NOT NULL,
            memory_ids TEXT NOT NULL,
            status INTEGER,
            response TEXT,
            PRIMARY KEY (user_id, agent_id, key)
        );
        INSERT INTO requests_rowid SELECT user_id, agent_id, key, fingerprint, owner, created_at, memory_ids,
            status, response FROM requests;
        DROP TABLE requests;
        ALTER TABLE requests_rowid RENAME TO requests;
        CREATE INDEX requests_age ON requests(created_at);
        """,
    ),
]


def _split_sql(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";")
            if s.strip() and not all(line.strip().startswith("--") for line in s.strip().splitlines())]


def missing(db: sqlite3.Connection, path: str) -> list[str]:
    """The migrations a store's file has not had yet (reads only). A file written by a newer
    zenbrain (migrations this one does not know) is refused."""
    table = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'").fetchone()
    done = {r[0] for r in db.execute("SELECT name FROM schema_migrations")} if table else set()
    unknown = done - {m[0] for m in MIGRATIONS}
    if unknown:
        raise StorageError(f"{path} was written by a newer zenbrain (migrations {sorted(unknown)}); upgrade zenbrain")
    return [m[0] for m in MIGRATIONS if m[0] not in done]


def apply(db: sqlite3.Connection, path: str) -> None:
    """Apply the missing migrations, inside the caller's write transaction."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    todo = set(missing(db, path))
    for version, (name, sql, *prepare) in enumerate(MIGRATIONS, start=1):
        if name in todo:
            for step in prepare:
                step(db)
            for stmt in _split_sql(sql):
                db.execute(stmt)
            db.execute("INSERT INTO schema_migrations (version, name) VALUES (?,?)", (version, name))
