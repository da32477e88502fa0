"""Helpers for the core tests that child processes import too (so no pytest here)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from zenbrain.providers.hashing import HashingEmbedder

DIM = 64
T0 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()


def ts(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


class CountingEmbedder:
    """Wraps an embedder and counts the texts it is asked to embed."""

    def __init__(self, inner=None) -> None:
        self.inner = inner or HashingEmbedder(DIM)
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed(texts)


class TableEmbedder:
    """Vectors chosen by the test: the first listed substring found in a text picks its vector.

    Texts matching nothing get a deterministic pseudo-random unit vector.
    """

    def __init__(self, rules: Sequence[tuple[str, np.ndarray]], dim: int = DIM, name: str = "table:64") -> None:
        self.rules = [(s, np.asarray(v, dtype=np.float32)) for s, v in rules]
        self.dim = dim
        self.name = name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for needle, vec in self.rules:
                if needle in t:
                    out[i] = vec
                    break
            else:
                seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
                out[i] = np.random.default_rng(seed).standard_normal(self.dim)
            n = np.linalg.norm(out[i])
            out[i] /= n if n else 1.0
        return out


def open_mem(path: str, *, embedder=None, config=None, clock=None):
    from zenbrain.api import open_memory

    return open_memory(path, embedder=embedder or HashingEmbedder(DIM), config=config, clock=clock)


def writer(path: str, user: str, prefix: str, n: int, barrier=None) -> list[str]:
    """Store n memories as separate operations (one transaction each); return their ids."""
    from zenbrain import Scope

    mem = open_mem(path)
    if barrier is not None:
        barrier.wait(timeout=60)
    scope = Scope(user, "agent")
    ids = []
    try:
        for i in range(n):
            ids.append(mem.store(f"{prefix} memory number {i} about topic {prefix}{i}x", scope).id)
    finally:
        mem.close()
    return ids


def write_one(path: str, user: str, content: str) -> str:
    from zenbrain import Scope

    with open_mem(path) as mem:
        return mem.store(content, Scope(user, "agent")).id


def _is_postgres(location: object) -> bool:
    return str(getattr(location, "url", location)).startswith(("postgresql://", "postgres://"))


def table_rows(con) -> dict[str, list[tuple]]:
    """Every row of every table: of a SQLite connection (virtual FTS table and its shadow
    tables included), or of a store (SQLite, or PostgreSQL: the tables of its schema, each
    row as its text)."""
    if _is_postgres(con):
        import psycopg

        with psycopg.connect(con.url) as pg:
            names = [r[0] for r in pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                                              "ORDER BY 1")]
            return {n: sorted(tuple(r) for r in pg.execute(f'SELECT x::text FROM "{n}" x')) for n in names}
    if not isinstance(con, sqlite3.Connection):
        con = con.raw_connection()
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    return {n: [tuple(r) for r in con.execute(f'SELECT * FROM "{n}"')] for n in names}


def tables_containing(con, needle: str) -> dict[str, int]:
    """Tables with a text or blob cell containing needle (case-insensitive), and how many
    cells; ``con`` is a SQLite connection or a store (see ``table_rows``)."""
    low = needle.lower().encode()
    found: dict[str, int] = {}
    for name, rows in table_rows(con).items():
        for row in rows:
            for v in row:
                if isinstance(v, str):
                    v = v.encode()
                if isinstance(v, (bytes, memoryview)) and low in bytes(v).lower():
                    found[name] = found.get(name, 0) + 1
    return found


def embedding_rows(store, content_hash: str) -> int:
    """Rows of the store's embedding cache for a content hash."""
    if _is_postgres(store):
        import psycopg

        with psycopg.connect(store.url) as pg:
            return int(pg.execute("SELECT COUNT(*) FROM embeddings WHERE hash = %s", (content_hash,)).fetchone()[0])
    from zenbrain.index.vector_keys import key_blob

    return int(store.raw_connection().execute("SELECT COUNT(*) FROM embeddings WHERE key=?",
                                              (key_blob(content_hash),)).fetchone()[0])


def partition_rows(store, user: str) -> dict[str, int]:
    """Rows a user holds in the tables of memories, their text and lexical entries, edges,
    history and records (tables the backend has), where there are any."""
    tables = ("memories", "memories_fts", "memory_texts", "lexical_terms", "lexical_docs", "edges", "history", "kv",
              "requests", "partitions")
    if _is_postgres(store):
        import psycopg

        with psycopg.connect(store.url) as pg:
            counts = {t: pg.execute(f"SELECT COUNT(*) FROM {t} WHERE user_id = %s", (user,)).fetchone()[0]
                      for t in tables if pg.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is not None}
    else:
        con = store.raw_connection()
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        by_number = ("edges", "history")  # keyed by the partition's number
        counts = {t: con.execute(f"SELECT COUNT(*) FROM {t} WHERE user_id=?", (user,)).fetchone()[0]
                  for t in tables if t in present and t not in by_number}
        for t in by_number:
            counts[t] = con.execute(f"SELECT COUNT(*) FROM {t} WHERE part IN "
                                    "(SELECT id FROM partitions WHERE user_id=?)", (user,)).fetchone()[0]
    return {t: int(n) for t, n in counts.items() if n}


def files_containing(path: str, needle: str) -> dict[str, int]:
    """Files of the database whose bytes contain needle: a SQLite file (main, -wal, -shm,
    -journal), or a PostgreSQL store's (``postgres_server.files_containing``)."""
    if _is_postgres(path):
        from postgres_server import files_containing as postgres_files_containing

        return postgres_files_containing(str(path), needle)
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = path + suffix
        if os.path.exists(p):
            with open(p, "rb") as f:
                data = f.read().lower()
            c = data.count(needle.lower().encode())
            if c:
                out[os.path.basename(p)] = c
    return out


def file_digest(path: str) -> dict[str, str]:
    """sha256 of the database file and its WAL (what a failed call must not change)."""
    out = {}
    for suffix in ("", "-wal"):
        p = path + suffix
        if os.path.exists(p):
            with open(p, "rb") as f:
                out[suffix or "db"] = hashlib.sha256(f.read()).hexdigest()
    return out


# --------------------------------------------------------------------------- worker processes
# The tests run these in a pool of 'spawn' processes (fresh interpreters that share no
# state with the test process except the database file).
_TO_PARENT = None
_TO_CHILD = None


def init_worker(to_parent, to_child) -> None:
    global _TO_PARENT, _TO_CHILD
    _TO_PARENT, _TO_CHILD = to_parent, to_child
    import zenbrain.api  # noqa: F401  (pay the import once, not in the first task)


def worker_pid() -> int:
    return os.getpid()


def file_barrier(directory: str, name: str, parties: int, timeout: float = 60.0) -> None:
    """Wait until ``parties`` processes have arrived (each touches a file)."""
    import time

    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"ready-{name}"), "w"):
        pass
    deadline = time.monotonic() + timeout
    while len([f for f in os.listdir(directory) if f.startswith("ready-")]) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError("the other process never arrived")
        time.sleep(0.002)


def writer_task(path: str, user: str, prefix: str, n: int, barrier_dir: str) -> tuple[int, list[str]]:
    """Wait for the sibling, then write n memories, one operation each."""
    file_barrier(barrier_dir, prefix, 2)
    return os.getpid(), writer(path, user, prefix, n)


class BarrierEmbedder(CountingEmbedder):
    """Embeds ``text`` only once ``parties`` processes have come to embed it (a file barrier):
    each of them has looked for repeats of it by then, before its write transaction."""

    def __init__(self, text: str, directory: str, name: str, parties: int = 2) -> None:
        super().__init__()
        self.text, self.directory, self.name_in_barrier, self.parties = text, directory, name, parties
        self.waited = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.text in texts and not self.waited:
            self.waited = True
            file_barrier(self.directory, self.name_in_barrier, self.parties)
        return super().embed(texts)


def repeat_task(path: str, text: str, barrier_dir: str, name: str) -> tuple[int, str, int]:
    """Store ``text`` at the same moment as the sibling process (``BarrierEmbedder``); return
    this process's id, the memory's id and how many times the text was embedded here."""
    from zenbrain import Scope

    emb = BarrierEmbedder(text, barrier_dir, name)
    with open_mem(path, embedder=emb) as mem:
        item = mem.store(text, Scope("alice", "agent"))
    return os.getpid(), item.id, emb.texts.count(text)


class SignallingEmbedder(CountingEmbedder):
    """Touches ``<directory>/embedding`` when it is asked to embed ``text`` (the store has
    looked for repeats of it by then)."""

    def __init__(self, text: str, directory: str) -> None:
        super().__init__()
        self.text, self.directory = text, directory

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.text in texts:
            with open(os.path.join(self.directory, "embedding"), "w"):
                pass
        return super().embed(texts)


def wait_for_file(path: str, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.005)


def late_writer_task(path: str, text: str, directory: str) -> tuple[int, str]:
    """Open the store, say so (``opened``), wait for ``go``, then store ``text``."""
    from zenbrain import Scope

    with open_mem(path, embedder=SignallingEmbedder(text, directory)) as mem:
        with open(os.path.join(directory, "opened"), "w"):
            pass
        wait_for_file(os.path.join(directory, "go"))
        item = mem.store(text, Scope("alice", "agent"))
    return os.getpid(), item.id


def persist_task(path: str, texts: list[str]) -> tuple[int, list[str]]:
    """Write two memories and a batch of texts (for the embedding cache), then close."""
    from zenbrain import Scope

    with open_mem(path) as mem:
        s = Scope("alice", "agent")
        a = mem.store("the lighthouse keeper feeds seventeen cats every evening", s)
        b = mem.store("Paris is the capital of France", s)
        mem.store_many([{"content": t} for t in texts], s)
    return os.getpid(), [a.id, b.id]


def follower_task(path: str) -> int:
    """The index-following test's other process.

    Opens the store (dense recall only) and builds its index, writes one memory and
    reports its id; then recalls the parent's memory without reopening and reports
    the top hit; closes only when the parent says so.
    """
    from zenbrain import Scope
    from zenbrain.config import Config

    scope = Scope("alice", "agent")
    mem = open_mem(path, config=Config().without("bm25_hybrid"))
    try:
        mem.recall("anything at all", scope, touch=False)  # loads the vector index
        mid = mem.store("the violinist repaired a harpsichord in vienna", scope).id
        _TO_PARENT.put(("stored", mid))
        parent_id = _TO_CHILD.get(timeout=60)
        hits = mem.recall("astronomer polishing telescope mirrors", scope, k=1, touch=False)
        _TO_PARENT.put(("recalled", hits[0].id if hits else None, parent_id))
        _TO_CHILD.get(timeout=60)  # "bye"
    finally:
        mem.close()
    return os.getpid()
