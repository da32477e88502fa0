"""A store for the index tests: memories and a change log in a real SQLite file.

It writes as zenbrain's SQLite store does (every committed change to a memory row
appends to ``changes`` in the same transaction) and provides the ``IndexSource``
interface the indexes read.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from zenbrain.index.source import ChangeBatch, IndexRow, Partition

DIM = 64
WORDS = ("apple banana cherry delta echo falcon garden harbor island jungle kettle lemon meadow north "
         "ocean pepper quartz river silver timber umbrella valley willow xenon yellow zephyr").split()


def clustered_vectors(n: int, dim: int = DIM, centers: int = 40, seed: int = 0) -> np.ndarray:
    """Unit vectors around random centres with noise: neighbours are near but not tied."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, dim))
    v = c[rng.integers(0, centers, n)] + 0.6 * rng.standard_normal((n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def text_of(i: int) -> str:
    rng = np.random.default_rng(i)
    return " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 8)) + f" item{i}"


class SQLiteSource:
    """Rows and change log in one SQLite database (see module docs)."""

    def __init__(self, path: Path, dim: int = DIM, embedder_name: str = "test-embedder",
                 store_id: str | None = None) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.executescript(
            "CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, user_id TEXT, agent_id TEXT, content TEXT,"
            " content_hash TEXT, vector BLOB, layer TEXT, context TEXT, session_id TEXT, archived INTEGER,"
            " kind TEXT, event_time REAL);"
            "CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT, agent_id TEXT,"
            " memory_id TEXT);"
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
        )
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (store_id or uuid.uuid4().hex,))
        self.store_id = self.db.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()[0]
        self.dim = dim
        self.embedder_name = embedder_name

    # -- writes, each logged -------------------------------------------------------------------
    def put(self, partition: Partition, rows: Sequence[IndexRow]) -> None:
        with self.db:
            self.db.execute("BEGIN")
            for r in rows:
                self.db.execute(
                    "INSERT OR REPLACE INTO memories VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (r.id, *partition, r.content, r.content_hash,
                     None if r.vector is None else np.asarray(r.vector, np.float32).tobytes(),
                     r.layer, r.context, r.session_id, int(r.archived), r.kind, r.event_time),
                )
                self.db.execute("INSERT INTO changes (user_id, agent_id, memory_id) VALUES (?,?,?)", (*partition, r.id))

    def delete(self, partition: Partition, ids: Sequence[str]) -> None:
        with self.db:
            self.db.execute("BEGIN")
            for mid in ids:
                self.db.execute("DELETE FROM memories WHERE id=? AND user_id=? AND agent_id=?", (mid, *partition))
                self.db.execute("INSERT INTO changes (user_id, agent_id, memory_id) VALUES (?,?,?)", (*partition, mid))

    def update(self, partition: Partition, ids: Sequence[str], **changes: object) -> None:
        rows = {r.id: r for r in self.rows(partition, ids)}
        self.put(partition, [replace(rows[i], **changes) for i in ids])

    # -- IndexSource ---------------------------------------------------------------------------
    def _row(self, r: tuple) -> IndexRow:
        mid, content, chash, blob, layer, context, session, archived, kind, t = r
        vec = None if blob is None else np.frombuffer(blob, dtype=np.float32)
        return IndexRow(mid, content, chash, vec, layer, context, session, bool(archived), kind, t)

    _COLS = "id, content, content_hash, vector, layer, context, session_id, archived, kind, event_time"

    def log_seq(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0]

    def texts_apart(self, partition: Partition) -> None:
        return None  # one connection: builds read all_texts

    def partition_number(self, partition: Partition) -> int | None:
        return None  # this source erases no partition by name

    def changes_since(self, seq: int) -> ChangeBatch | None:
        latest = self.log_seq()
        if seq > latest:
            return None
        rows = self.db.execute("SELECT DISTINCT user_id, agent_id, memory_id FROM changes WHERE seq > ? AND seq <= ?",
                               (seq, latest)).fetchall()
        return ChangeBatch(latest, [((u, a), m) for u, a, m in rows])

    def rows(self, partition: Partition, ids: Sequence[str]) -> list[IndexRow]:
        marks = ",".join("?" * len(ids))
        sql = f"SELECT {self._COLS} FROM memories WHERE user_id=? AND agent_id=? AND id IN ({marks})"
        return [self._row(r) for r in self.db.execute(sql, (*partition, *ids))]

    def all_rows(self, partition: Partition) -> Iterator[IndexRow]:
        sql = f"SELECT {self._COLS} FROM memories WHERE user_id=? AND agent_id=? ORDER BY rowid"
        for r in self.db.execute(sql, partition).fetchall():
            yield self._row(r)

    def all_texts(self, partition: Partition) -> Iterator[tuple[str, str]]:
        for row in self.all_rows(partition):
            yield row.id, row.content

    def partitions(self) -> list[Partition]:
        return [(u, a) for u, a in self.db.execute("SELECT DISTINCT user_id, agent_id FROM memories")]


def make_rows(n: int, *, start: int = 0, vectors: np.ndarray | None = None, layer: str = "semantic",
              contexts: Sequence[str] = ("general",), session_id: str | None = None) -> list[IndexRow]:
    vecs = clustered_vectors(start + n)[start:] if vectors is None else vectors
    return [
        IndexRow(id=f"m{start + i:06d}", content=text_of(start + i), content_hash=f"{start + i:040x}",
                 vector=vecs[i], layer=layer, context=contexts[(start + i) % len(contexts)], session_id=session_id,
                 archived=False, kind="fact", event_time=float(start + i))
        for i in range(n)
    ]


PART: Partition = ("alice", "agent")
OTHER: Partition = ("bob", "agent")
