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
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

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


backends = [
    SQLiteBackend("sqlite", reopen=False),
    SQLiteBackend("sqlite-reopened", reopen=True),
    SQLiteBackend("sqlite-indexed", reopen=True, **_approximate_options()),
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
