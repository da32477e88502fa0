"""Ordered, named schema migrations for the PostgreSQL store. Append only; never edit one
that has shipped. They run in one transaction under an advisory lock (several processes
may open a new database at once) and are recorded in schema_migrations.

The tables live in the connection's current schema (the first of its ``search_path``), so
one database can hold several stores; the ``vector`` extension may live in any schema on
the path.
"""

from __future__ import annotations

TEXT_PARTITIONS = 16  # hash partitions (by user) of each table that holds text


def partition_name(table: str, remainder: int) -> str:
    return f"{table}_p{remainder:02d}"


def _by_user_hash(table: str, columns: str, names: str) -> str:
    """SQL that replaces ``table`` by one partitioned by the hash of ``user_id`` with the
    same rows (its indexes are dropped with the old table: create them after)."""
    parts = "\n".join(
        f"CREATE TABLE {partition_name(table, r)} PARTITION OF {table} "
        f"FOR VALUES WITH (MODULUS {TEXT_PARTITIONS}, REMAINDER {r});" for r in range(TEXT_PARTITIONS))
    return f"""
        ALTER TABLE {table} RENAME TO {table}_unpartitioned;
        ALTER INDEX {table}_pkey RENAME TO {table}_unpartitioned_pkey;
        CREATE TABLE {table} ({columns}
        ) PARTITION BY HASH (user_id);
        {parts}
        INSERT INTO {table} ({names}) SELECT {names} FROM {table}_unpartitioned;
        DROP TABLE {table}_unpartitioned;"""


# The text tables split into TEXT_PARTITIONS hash partitions by user: an erasure rewrites
# (VACUUM FULL) only the partitions of the users it erased from, a small part of the text
# however large the store grows, and locks only those.
_TEXT_BY_USER_HASH = "\n".join([
    _by_user_hash("memory_texts", """
        id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        content TEXT NOT NULL,
        metadata JSONB NOT NULL,
        speaker TEXT,
        index_text TEXT,
        PRIMARY KEY (user_id, id)""", "id, user_id, agent_id, content, metadata, speaker, index_text"),
    # Identity columns of partitioned tables need PostgreSQL 17: a sequence instead.
    "CREATE SEQUENCE history_seq;",
    "SELECT setval('history_seq', COALESCE((SELECT MAX(seq) FROM history), 0) + 1, false);",
    _by_user_hash("history", """
        seq BIGINT NOT NULL DEFAULT nextval('history_seq'),
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        action TEXT NOT NULL,
        detail JSONB NOT NULL,
        PRIMARY KEY (user_id, seq)""", "seq, user_id, agent_id, memory_id, at, action, detail"),
    "ALTER SEQUENCE history_seq OWNED BY history.seq;",
    "CREATE INDEX history_memory ON history (user_id, agent_id, memory_id);",
    _by_user_hash("kv", """
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value JSONB NOT NULL,
        PRIMARY KEY (user_id, agent_id, key)""", "user_id, agent_id, key, value"),
    _by_user_hash("requests", """
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        owner TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        memory_ids TEXT[] NOT NULL,
        status INTEGER,
        response TEXT,
        PRIMARY KEY (user_id, agent_id, key)""",
        "user_id, agent_id, key, fingerprint, owner, created_at, memory_ids, status, response"),
    "CREATE INDEX requests_age ON requests (created_at);",
])

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        -- A memory's mutable columns (what recall, review and decay update over and over)
        -- apart from its text (memory_texts, written only when the text changes): every
        -- update of a row leaves a stale copy of it in its page, which only a rewrite of
        -- the table removes, and erasure rewrites the small text tables only.
        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            session_id TEXT,
            context TEXT NOT NULL,
            layer TEXT NOT NULL,
            kind TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            event_time DOUBLE PRECISION,
            last_access DOUBLE PRECISION NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            importance DOUBLE PRECISION NOT NULL,
            valence DOUBLE PRECISION NOT NULL,
            arousal DOUBLE PRECISION NOT NULL,
            stability DOUBLE PRECISION NOT NULL,
            strength DOUBLE PRECISION NOT NULL,
            conf_alpha DOUBLE PRECISION NOT NULL,
            conf_beta DOUBLE PRECISION NOT NULL,
            archived BOOLEAN NOT NULL DEFAULT FALSE,
            version INTEGER NOT NULL DEFAULT 1,
            state JSONB NOT NULL,
            position INTEGER,
            vector_key TEXT NOT NULL,
            -- Derived: the due time of the review (state's due_at), the memory's vector (a
            -- copy of its embedding-cache entry: an index cannot reach into another table),
            -- and its lexical terms as keyed 64-bit hashes with their counts, and its
            -- token count. Hashes, not words: a GIN index never drops a key, so an erased
            -- memory's words must not be keys.
            due_at DOUBLE PRECISION,
            embedding vector,
            lex_terms BIGINT[] NOT NULL,
            lex_tf INTEGER[] NOT NULL,
            lex_len INTEGER NOT NULL,
            -- The order rows were first stored in: ties of equally due memories, and
            -- uniform sampling by random draws.
            seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE
        );
        -- The vector is read with its row (exact scans read it for every candidate): kept
        -- in the row rather than moved out to TOAST.
        ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
        CREATE INDEX memories_partition ON memories (user_id, agent_id, layer, archived);
        CREATE INDEX memories_event ON memories (user_id, agent_id, (COALESCE(event_time, created_at)));
        CREATE INDEX memories_due ON memories (user_id, agent_id, due_at) WHERE due_at IS NOT NULL;
        CREATE INDEX memories_recent ON memories (user_id, agent_id, last_access);
        CREATE INDEX memories_thread ON memories (user_id, agent_id, session_id, position);
        CREATE INDEX memories_vector_key ON memories (vector_key);
        CREATE INDEX memories_lex ON memories USING gin (lex_terms);

        CREATE TABLE memory_texts (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata JSONB NOT NULL,
            speaker TEXT,
            index_text TEXT
        );

        CREATE TABLE embeddings (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector vector NOT NULL,
            PRIMARY KEY (model, hash)
        );

        CREATE TABLE edges (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            relation TEXT NOT NULL,
            weight DOUBLE PRECISION NOT NULL,
            variance DOUBLE PRECISION NOT NULL,
            activations INTEGER NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (user_id, agent_id, src, dst, relation)
        );
        CREATE INDEX edges_dst ON edges (user_id, agent_id, dst);

        CREATE TABLE history (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            action TEXT NOT NULL,
            detail JSONB NOT NULL
        );
        CREATE INDEX history_memory ON history (user_id, agent_id, memory_id);

        CREATE TABLE kv (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value JSONB NOT NULL,
            PRIMARY KEY (user_id, agent_id, key)
        );

        -- BM25 statistics per partition: how many memories hold each term (by its hash),
        -- and how many memories and tokens the partition has. Per partition, so that no
        -- score depends on (or reveals) what other users stored.
        CREATE TABLE lexical_terms (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            term BIGINT NOT NULL,
            docs INTEGER NOT NULL,
            PRIMARY KEY (user_id, agent_id, term)
        );
        CREATE TABLE lexical_docs (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            docs BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            PRIMARY KEY (user_id, agent_id)
        );

        -- The partitions large enough for an HNSW index of their own (a partial index).
        CREATE TABLE vector_indexes (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            name TEXT NOT NULL UNIQUE,
            PRIMARY KEY (user_id, agent_id)
        );
        """,
    ),
    (
        "0002_valid_time",
        """
        -- Facts that change: when a memory stopped holding (NULL: it still holds) and the
        -- memory that replaced it. Recall reads only what still holds at a time.
        ALTER TABLE memories ADD COLUMN valid_until DOUBLE PRECISION, ADD COLUMN superseded_by TEXT;
        """,
    ),
    (
        "0003_requests",
        """
        -- Write requests that carried an idempotency key: a retry with the same key gets the
        -- first request's result instead of writing again. The row is written in the same
        -- transaction as the request's write, and the response once the write has committed.
        -- The response quotes memories, so erasure rewrites this table like the other text tables.
        CREATE TABLE requests (
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            owner TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            memory_ids TEXT[] NOT NULL,
            status INTEGER,
            response TEXT,
            PRIMARY KEY (user_id, agent_id, key)
        );
        CREATE INDEX requests_age ON requests (created_at);
        """,
    ),
    ("0004_text_by_user_hash", _TEXT_BY_USER_HASH),
    (
        "0005_content_hash",
        """
        -- Exact repeats are found by content hash within a partition at every store: an
        -- index, so that looking costs the same in a partition of a million as of ten.
        CREATE INDEX memories_content ON memories (user_id, agent_id, content_hash);
        """,
    ),
]
