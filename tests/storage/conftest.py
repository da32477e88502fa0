"""Backends for the storage contract suite.

Every test that takes the ``store`` fixture runs once per entry of ``backends``. A new
backend (PostgreSQL, ...) is added by appending an object with the same small interface
as ``SQLiteBackend``: ``create``/``open`` a store on a fresh or existing location, and the
optional capabilities the backend-specific tests ask for (``None`` means "not supported",
and those tests skip).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
for _dir in (_HERE, str(Path(_HERE).parent)):
    if _dir not in sys.path:
        sys.path.insert(0, _dir)

from storage_helpers import DIM, MODEL


class SQLiteBackend:
    """The embedded default: one SQLite file (optionally closed and reopened first)."""

    processes = True  # other processes can open the same location
    has_migrations = True

    def __init__(self, name: str, *, reopen: bool, **options) -> None:
        self.name = name
        self.reopen = reopen
        self.options = options  # store options of this variant

    def location(self, tmp_path: Path) -> str:
        return str(tmp_path / f"{self.name}.db")

    def open(self, location: str, *, embedder_name: str = MODEL, dim: int = DIM, **options):
        from zenbrain.storage.sqlite import SQLiteStore

        return SQLiteStore(location, embedder_name=embedder_name, dim=dim, **{**self.options, **options})

    def create(self, tmp_path: Path, **kw):
        location = self.location(tmp_path)
        store = self.open(location, **kw)
        if self.reopen:
            store.close()
            store = self.open(location, **kw)
        store.contract_location = location
        return store

    # -- capabilities used by backend-specific tests ------------------------------------
    def migrations(self, store) -> list[tuple[int, str]]:
        return [tuple(r) for r in store.raw_connection().execute("SELECT version, name FROM schema_migrations ORDER BY version")]

    def record_unknown_migration(self, store, name: str) -> None:
        con = store.raw_connection()
        con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (9999, name))

    def files(self, location: str) -> list[str]:
        return [location + s for s in ("", "-wal", "-shm") if os.path.exists(location + s)]

    def child_open_code(self, location: str) -> str:
        """Python source that opens the store as ``store`` in a fresh interpreter."""
        return (
            "from zenbrain.storage.sqlite import SQLiteStore\n"
            f"store = SQLiteStore({location!r}, embedder_name={MODEL!r}, dim={DIM})\n"
        )

    @contextlib.contextmanager
    def hold_write_lock(self, location: str):
        """Another writer holds the store's write lock for the duration."""
        con = sqlite3.connect(location, isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            con.execute("ROLLBACK")
            con.close()

    def corrupt(self, location: str) -> None:
        with open(location, "wb") as f:
            f.write(b"this is not a database file " * 400)


def _approximate_options() -> dict:
    """Every search through the approximate indexes, however small the partition: tantivy
    for lexical search, the HNSW graph for dense search whatever a filter keeps."""
    from zenbrain.index import AnnParams

    ann = AnnParams(ann_min_rows=1, exact_max_allowed=0, exact_ratio=0.0, min_candidates=8, tail_max=8)
    return {"ann": ann, "lexical_index_min_rows": 0}


class PostgresBackend:
    """A PostgreSQL database (pgvector), each store in a schema of its own (see
    tests/postgres_server.py: a private server per test session, or an external one)."""

    name = "postgres"
    processes = True
    has_migrations = False  # its migrations are its own: tests/storage/test_postgres.py

    def location(self, tmp_path: Path) -> str:
        from postgres_server import new_schema_url

        return new_schema_url()

    def open(self, location: str, *, embedder_name: str = MODEL, dim: int = DIM, **options):
        from zenbrain.storage.postgres import PostgresStore

        return PostgresStore(location, embedder_name=embedder_name, dim=dim, **options)

    def create(self, tmp_path: Path, **kw):
        location = self.location(tmp_path)
        store = self.open(location, **kw)
        store.contract_location = location
        return store

    def child_open_code(self, location: str) -> str:
        return (
            "from zenbrain.storage.postgres import PostgresStore\n"
            f"store = PostgresStore({location!r}, embedder_name={MODEL!r}, dim={DIM})\n"
        )

    @contextlib.contextmanager
    def hold_write_lock(self, location: str):
        """Another session holds a lock on the memories table (as a maintenance job would)."""
        import psycopg

        with psycopg.connect(location) as conn:
            conn.execute("LOCK TABLE memories IN EXCLUSIVE MODE")
            try:
                yield
            finally:
                conn.rollback()

    def corrupt(self, location: str) -> None:
        """Tables of another application where the store's would go."""
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, note TEXT)")
            conn.execute("CREATE TABLE schema_migrations (version TEXT, applied TIMESTAMP)")


backends = [
    SQLiteBackend("sqlite", reopen=False),
    SQLiteBackend("sqlite-reopened", reopen=True),
    SQLiteBackend("sqlite-indexed", reopen=True, **_approximate_options()),
    PostgresBackend(),
]


@pytest.fixture(params=backends, ids=lambda b: b.name)
def backend(request):
    return request.param


@pytest.fixture
def store(backend, tmp_path):
    s = backend.create(tmp_path)
    yield s
    s.close()


@pytest.fixture
def other_handle(backend, store):
    """A second, independent handle on the same store (another connection, own index)."""
    s = backend.open(store.contract_location)
    yield s
    s.close()
