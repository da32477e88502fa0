"""An :class:`~zenbrain.index.source.IndexSource` reading a zenbrain SQLite database.

The SQLite store feeds its indexes through it (on a read connection of its own, which
only ever sees committed rows); given a path it opens the file read-only, to build or
check indexes from outside the store. Rows are read as the store indexes them: the
lexical text is the memory's index text (a turn with the turns before it) or its
content, plus ``metadata["lexical_extra"]``; the vector is the one of its ``vector_key``
(NULL when it is its content hash).
Each method reads in one transaction (one snapshot).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import vector_keys
from .source import ChangeBatch, IndexRow, Partition
from .vectors import blob_vector

LEXICAL_EXTRA = "lexical_extra"  # metadata key: words indexed beside the content
# meta key: the change log's rows up to this position were deleted (SQLiteStore.prune_change_log)
CHANGES_PRUNED = "changes_pruned_through"
_ROW = (
    "m.id, COALESCE(m.index_text, m.content), COALESCE(m.vector_key, m.content_hash), m.metadata, m.layer, "
    "m.context, m.session_id, m.archived, m.kind, COALESCE(m.event_time, m.created_at), m.position, m.valid_until, "
    f"e.vector FROM memories m LEFT JOIN embeddings e ON e.key={vector_keys.SQL_FUNCTION}(COALESCE(m.vector_key, m.content_hash))"
)


def rows_sql(n: int) -> str:
    """The rows of ``n`` ids of a partition (arguments: user, agent, ids). The
    memories table is the outer one (LEFT JOIN) and is searched by primary key
    ("+column" keeps the planner off the partition index), whatever the statistics say."""
    return f"SELECT {_ROW} WHERE +m.user_id=? AND +m.agent_id=? AND m.id IN ({','.join('?' * n)})"


# A partition's ids and the texts its lexical index holds (``all_texts``, ``texts_apart``).
_TEXTS = ("SELECT m.id, COALESCE(m.index_text, m.content), m.metadata FROM memories m "
          "WHERE m.user_id=? AND m.agent_id=?")


def new_store_id() -> str:
    """A random id for a new database (kept in its ``meta`` table as ``store_id``)."""
    return uuid.uuid4().hex


def lexical_text(text: str, metadata: str) -> str:
    """What lexical search indexes of a memory: its text and its ``lexical_extra`` words."""
    extra = json.loads(metadata).get(LEXICAL_EXTRA) if LEXICAL_EXTRA in metadata else None
    return text if not extra else f"{text}\n{extra}"


class SQLiteIndexSource:
    """The rows and change log of a zenbrain SQLite database: the file at ``path``
    (opened read-only), or an open connection ``db`` (the caller serialises its use)."""

    def __init__(self, path: str | Path | None = None, embedder_name: str | None = None, *,
                 db: sqlite3.Connection | None = None) -> None:
        if db is None:
            if path is None:
                raise ValueError("SQLiteIndexSource needs a path or a connection")
            db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, check_same_thread=False,
                                 isolation_level=None)
            self._owned = True
        else:
            self._owned = False
        vector_keys.register(db)
        self._db = db
        # The database's file ('' in memory), for connections of their own (``texts_apart``).
        self._file = next((f for _, name, f in db.execute("PRAGMA database_list") if name == "main"), "")
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        self.embedder_name = embedder_name or meta["embedder"]
        self.dim = int(meta["dim"])
        self.store_id = meta.get("store_id") or self._fingerprint()

    def _fingerprint(self) -> str:
        """A stand-in for a database without a stored id (written by an older version): the
        embedder and the first logged change (the log is append-only, ids are random)."""
        first = self._db.execute("SELECT seq, memory_id FROM changes ORDER BY seq LIMIT 1").fetchone()
        return hashlib.sha1(json.dumps([self.embedder_name, first]).encode()).hexdigest()

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Cursor]:
        """A cursor reading one snapshot (inside the caller's transaction if one is open:
        an in-memory database has a single connection)."""
        cur = self._db.cursor()
        own = not self._db.in_transaction
        if own:
            cur.execute("BEGIN")
        try:
            yield cur
        finally:
            if own:
                cur.execute("COMMIT")

    def _row(self, r: tuple) -> IndexRow:
        mid, text, vkey, metadata, layer, context, session, archived, kind, t, position, until, blob = r
        return IndexRow(
            id=mid, content=lexical_text(text, metadata), content_hash=vkey,
            vector=None if blob is None else blob_vector(blob),
            layer=layer, context=context, session_id=session, archived=bool(archived), kind=kind,
            event_time=float(t), position=None if position is None else int(position),
            valid_until=None if until is None else float(until),
        )

    def log_seq(self) -> int:
        return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])

    def changes_since(self, seq: int) -> ChangeBatch | None:
        with self._snapshot() as cur:
            latest = int(cur.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])
            pruned = cur.execute("SELECT value FROM meta WHERE key=?", (CHANGES_PRUNED,)).fetchone()
            if seq > latest or (pruned is not None and seq < int(pruned[0])):
                return None
            if seq == latest:
                return ChangeBatch(latest, [])
            changed = cur.execute(
                "SELECT DISTINCT user_id, agent_id, memory_id FROM changes WHERE seq > ? AND seq <= ?", (seq, latest)
            ).fetchall()
        return ChangeBatch(latest, [((u, a), m) for u, a, m in changed])

    def rows(self, partition: Partition, ids: Sequence[str]) -> list[IndexRow]:
        if not ids:
            return []
        return [self._row(r) for r in self._db.execute(rows_sql(len(ids)), (*partition, *ids))]

    def all_rows(self, partition: Partition) -> Iterator[IndexRow]:
        with self._snapshot() as cur:
            for r in cur.execute(f"SELECT {_ROW} WHERE m.user_id=? AND m.agent_id=?", partition):
                yield self._row(r)

    def all_texts(self, partition: Partition) -> Iterator[tuple[str, str]]:
        with self._snapshot() as cur:
            for mid, text, metadata in cur.execute(_TEXTS, partition):
                yield mid, lexical_text(text, metadata)

    def texts_apart(self, partition: Partition) -> Iterator[tuple[str, str]] | None:
        if not self._file:
            return None
        return self._texts_on(sqlite3.connect(f"file:{Path(self._file)}?mode=ro", uri=True, isolation_level=None),
                              partition)

    def _texts_on(self, db: sqlite3.Connection, partition: Partition) -> Iterator[tuple[str, str]]:
        try:
            db.execute("BEGIN")  # one snapshot
            for mid, text, metadata in db.execute(_TEXTS, partition):
                yield mid, lexical_text(text, metadata)
        finally:
            db.close()

    def partitions(self) -> list[Partition]:
        return [(u, a) for u, a in self._db.execute("SELECT DISTINCT user_id, agent_id FROM memories")]

    def partition_number(self, partition: Partition) -> int | None:
        row = self._db.execute("SELECT id FROM partitions WHERE user_id=? AND agent_id=?", partition).fetchone()
        return None if row is None else int(row[0])

    def close(self) -> None:
        if self._owned:
            self._db.close()
