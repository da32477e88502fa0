"""An :class:`~zenbrain.index.source.IndexSource` reading a zenbrain SQLite database.

Read-only, through its own connection, on the schema the SQLite store writes today
(``memories``, ``embeddings``, the ``changes`` log, ``meta``): it shows what the store
must provide and lets the indexes be measured and tested on real databases before the
store calls them itself. Each method reads in one transaction (one snapshot).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from .source import ChangeBatch, IndexRow, Partition

_ROW = (
    "m.id, m.content, m.content_hash, m.metadata, m.layer, m.context, m.session_id, m.archived, m.kind, "
    "COALESCE(m.event_time, m.created_at), e.vector FROM memories m "
    "LEFT JOIN embeddings e ON e.model=? AND e.hash=m.content_hash"
)


class SQLiteIndexSource:
    """The rows and change log of the zenbrain SQLite database at ``path``."""

    def __init__(self, path: str | Path, embedder_name: str | None = None) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False,
                                   isolation_level=None)
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        self.embedder_name = embedder_name or meta["embedder"]
        self.dim = int(meta["dim"])
        self.store_id = meta.get("store_id") or self._fingerprint()

    def _fingerprint(self) -> str:
        """A stand-in for a stored database id: the embedder and the first logged change
        (the log is append-only, and memory ids are random)."""
        first = self._db.execute("SELECT seq, memory_id FROM changes ORDER BY seq LIMIT 1").fetchone()
        return hashlib.sha1(json.dumps([self.embedder_name, first]).encode()).hexdigest()

    def _row(self, r: tuple) -> IndexRow:
        mid, content, chash, metadata, layer, context, session, archived, kind, t, blob = r
        extra = json.loads(metadata).get("lexical_extra") if "lexical_extra" in metadata else None
        return IndexRow(
            id=mid, content=content if not extra else f"{content}\n{extra}", content_hash=chash,
            vector=None if blob is None else np.frombuffer(blob, dtype=np.float32),
            layer=layer, context=context, session_id=session, archived=bool(archived), kind=kind,
            event_time=float(t),
        )

    def log_seq(self) -> int:
        return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])

    def changes_since(self, seq: int) -> ChangeBatch | None:
        cur = self._db.cursor()
        cur.execute("BEGIN")
        try:
            latest = int(cur.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])
            if seq > latest:
                return None
            changed = cur.execute(
                "SELECT DISTINCT user_id, agent_id, memory_id FROM changes WHERE seq > ? AND seq <= ?", (seq, latest)
            ).fetchall()
        finally:
            cur.execute("COMMIT")
        return ChangeBatch(latest, [((u, a), m) for u, a, m in changed])

    def rows(self, partition: Partition, ids: Sequence[str]) -> list[IndexRow]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        sql = f"SELECT {_ROW} WHERE m.user_id=? AND m.agent_id=? AND m.id IN ({marks})"
        return [self._row(r) for r in self._db.execute(sql, (self.embedder_name, *partition, *ids))]

    def all_rows(self, partition: Partition) -> Iterator[IndexRow]:
        cur = self._db.cursor()
        cur.execute("BEGIN")
        try:
            for r in cur.execute(f"SELECT {_ROW} WHERE m.user_id=? AND m.agent_id=?", (self.embedder_name, *partition)):
                yield self._row(r)
        finally:
            cur.execute("COMMIT")

    def partitions(self) -> list[Partition]:
        return [(u, a) for u, a in self._db.execute("SELECT DISTINCT user_id, agent_id FROM memories")]

    def close(self) -> None:
        self._db.close()
