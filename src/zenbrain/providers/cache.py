"""Never embed the same text twice: an on-disk SQLite cache and an in-memory LRU.

Vectors are keyed by ``(embedder name, sha256(text))`` and stored as float32
blobs. The database uses WAL and a busy timeout, so several processes can read
and write the same file; concurrent writers of the same key keep the first row
(``INSERT OR IGNORE``; the vectors are equal anyway). A connection is opened
lazily per process, so a ``CachedEmbedder`` survives ``fork``.

:class:`CachedEmbedder` wraps any :class:`Embedder`: a call first deduplicates its
texts, then serves what it can from the LRU, then from SQLite in batched
lookups, and sends only the misses to the inner embedder, in one call.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from .._sqlite import enable_wal
from ..errors import ProviderError, StorageError
from .base import Embedder, releases_gil

SCHEMA_VERSION = 1
QUERY_SUFFIX = "#query"  # cache namespace of query vectors, for embedders that tell queries apart
_CHUNK = 500  # bound parameters per IN (...) lookup


def text_key(text: str) -> bytes:
    """The cache key of a text: its sha256 digest (32 bytes) over UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """A SQLite table of float32 vectors keyed by (embedder name, text hash)."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"

    # connection ----------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # A connection inherited through fork must not be used: open a fresh one.
        self._conn = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path), timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            enable_wal(conn, self.timeout)
            conn.execute("PRAGMA synchronous = NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                conn.close()
                raise StorageError(
                    f"embedding cache {self.path} has schema version {version}, newer than this zenbrain ({SCHEMA_VERSION})"
                )
            if version < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS embeddings ("
                        " model TEXT NOT NULL,"
                        " key BLOB NOT NULL,"
                        " dim INTEGER NOT NULL,"
                        " vector BLOB NOT NULL,"
                        " PRIMARY KEY (model, key)"
                        ") WITHOUT ROWID"
                    )
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open embedding cache {self.path}: {exc}") from exc
        self._conn = conn
        self._pid = os.getpid()
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # reads and writes ------------------------------------------------------------
    def get_many(self, model: str, keys: Sequence[bytes], dim: int | None = None) -> dict[bytes, np.ndarray]:
        """Vectors found for ``keys`` (a subset; missing keys are absent).

        Rows whose stored width differs from ``dim`` are ignored (treated as misses).
        """
        found: dict[bytes, np.ndarray] = {}
        if not keys:
            return found
        unique = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._connection()
            try:
                for i in range(0, len(unique), _CHUNK):
                    chunk = unique[i : i + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT key, dim, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                        [model, *chunk],
                    ).fetchall()
                    for key, d, blob in rows:
                        if (dim is not None and d != dim) or len(blob) != 4 * d:
                            continue
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
            except sqlite3.Error as exc:
                raise StorageError(f"embedding cache {self.path}: lookup failed: {exc}") from exc
        return found

    def put_many(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors in one transaction; keys already present are kept."""
        rows = []
        for key, vec in items:
            v = np.ascontiguousarray(vec, dtype=np.float32).reshape(-1)
            rows.append((model, key, int(v.shape[0]), v.tobytes()))
        if not rows:
            return
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(
                        "INSERT OR IGNORE INTO embeddings (model, key, dim, vector) VALUES (?, ?, ?, ?)", rows
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StorageError(f"embedding cache {self.path}: write failed: {exc}") from exc

    def get(self, model: str, text: str) -> np.ndarray | None:
        key = text_key(text)
        return self.get_many(model, [key]).get(key)

    def count(self, model: str | None = None) -> int:
        with self._lock:
            conn = self._connection()
            if model is None:
                return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            return int(conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0])

    def __len__(self) -> int:
        return self.count()

    def models(self) -> list[str]:
        with self._lock:
            conn = self._connection()
            return [r[0] for r in conn.execute("SELECT DISTINCT model FROM embeddings ORDER BY model")]

    def clear(self, model: str | None = None) -> int:
        """Delete the vectors of one embedder (or all); returns the number deleted."""
        with self._lock:
            conn = self._connection()
            if model is None:
                cur = conn.execute("DELETE FROM embeddings")
            else:
                cur = conn.execute("DELETE FROM embeddings WHERE model = ?", (model,))
            return int(cur.rowcount)


class LRUCache:
    """A small thread-safe LRU map from keys to vectors."""

    def __init__(self, maxsize: int = 4096) -> None:
        self.maxsize = int(maxsize)
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            v = self._data.get(key)
            if v is not None:
                self._data.move_to_end(key)
            return v

    def put(self, key: bytes, vec: np.ndarray) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = vec
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    inner_calls: int = 0

    @property
    def hits(self) -> int:
        return self.memory_hits + self.disk_hits


class CachedEmbedder:
    """An :class:`Embedder` that remembers every vector its inner embedder made.

    ``path`` is a SQLite file (or an :class:`EmbeddingCache` to share); ``None``
    keeps only the in-memory LRU of ``memory_items`` vectors (query vectors that
    repeat are then served without touching SQLite either). ``name`` and ``dim``
    are the inner embedder's, so a cached and an uncached embedder are
    interchangeable. ``stats`` counts hits, misses and inner calls.
    """

    def __init__(
        self,
        inner: Embedder,
        path: str | os.PathLike[str] | EmbeddingCache | None = None,
        *,
        memory_items: int = 4096,
    ) -> None:
        self.inner = inner
        if path is None or isinstance(path, EmbeddingCache):
            self.store = path
        else:
            self.store = EmbeddingCache(path)
        self.memory = LRUCache(memory_items)
        self.query_memory = LRUCache(memory_items)
        self.stats = CacheStats()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {self.store!r})"

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def releases_gil(self) -> bool:
        """The inner embedder's (a cache hit is a dictionary or SQLite read)."""
        return releases_gil(self.inner)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, self.name, self.memory, self.inner.embed)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors of an inner :class:`~.base.QueryEmbedder`, cached apart from its
        stored-text vectors (under ``name + "#query"``); other embedders: ``embed``."""
        inner_query = getattr(self.inner, "embed_query", None)
        if not callable(inner_query):
            return self.embed(texts)
        return self._cached(texts, self.name + QUERY_SUFFIX, self.query_memory, inner_query)

    def _cached(
        self, texts: Sequence[str], name: str, memory: LRUCache, compute: Callable[[Sequence[str]], np.ndarray]
    ) -> np.ndarray:
        texts = list(texts)
        n = len(texts)
        if n == 0:
            return np.zeros((0, self._known_dim() or 0), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        first: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)

        vectors: dict[bytes, np.ndarray] = {}
        for k in first:
            v = memory.get(k)
            if v is not None:
                vectors[k] = v
        self.stats.memory_hits += len(vectors)

        todo = [k for k in first if k not in vectors]
        if todo and self.store is not None:
            found = self.store.get_many(name, todo, self._known_dim())
            for k, v in found.items():
                vectors[k] = v
                memory.put(k, v)
            self.stats.disk_hits += len(found)
            todo = [k for k in todo if k not in found]

        if todo:
            miss_texts = [texts[first[k]] for k in todo]
            fresh = np.asarray(compute(miss_texts), dtype=np.float32)
            self.stats.inner_calls += 1
            self.stats.misses += len(todo)
            if fresh.ndim != 2 or fresh.shape[0] != len(todo):
                raise ProviderError(
                    f"{name}: inner embedder returned shape {fresh.shape} for {len(todo)} texts"
                )
            if not np.isfinite(fresh).all():
                raise ProviderError(f"{name}: inner embedder returned non-finite values")
            for k, v in zip(todo, fresh):
                v = v.copy()
                vectors[k] = v
                memory.put(k, v)
            if self.store is not None:
                self.store.put_many(name, ((k, vectors[k]) for k in todo))

        dim = len(next(iter(vectors.values())))
        out = np.empty((n, dim), dtype=np.float32)
        for i, k in enumerate(keys):
            v = vectors[k]
            if v.shape[0] != dim:
                raise ProviderError(f"{name}: cached vectors of different widths ({v.shape[0]} vs {dim})")
            out[i] = v
        return out

    def _known_dim(self) -> int | None:
        # Avoid a probe request for HTTP embedders whose width is not known yet.
        d = getattr(self.inner, "_dim", None)
        if d is not None or not hasattr(self.inner, "_dim"):
            return int(d) if d is not None else int(self.inner.dim)
        return None


__all__ = ["CacheStats", "CachedEmbedder", "EmbeddingCache", "LRUCache", "text_key"]

