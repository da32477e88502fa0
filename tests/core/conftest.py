"""Fixtures for the core engine tests: a coordinator on a temporary file, a simulated
clock, a fast deterministic embedder and a few scopes."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

# Test modules and child processes import the helpers as ``core_helpers``.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import core_helpers
from core_helpers import DIM, T0, CountingEmbedder, open_mem

from zenbrain import Scope, SimulatedClock
from zenbrain.providers.hashing import HashingEmbedder


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(T0)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(DIM)


@pytest.fixture
def counting() -> CountingEmbedder:
    return CountingEmbedder()


BACKEND_ENV = "ZENBRAIN_TEST_BACKEND"  # "postgres": the stores of these tests live in PostgreSQL


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    """Where the test's store lives: a SQLite file, or with $ZENBRAIN_TEST_BACKEND=postgres a
    fresh schema of the test PostgreSQL server (tests that read SQLite files skip there)."""
    if os.environ.get(BACKEND_ENV) == "postgres":
        from postgres_server import new_schema_url

        return new_schema_url("core")
    return str(tmp_path / "memory.db")


@pytest.fixture
def mem(db_path, embedder, clock):
    m = open_mem(db_path, embedder=embedder, clock=clock)
    yield m
    m.close()


@pytest.fixture
def make_mem(db_path, embedder, clock):
    """Open further coordinators (other configs, same or other file); all closed at teardown."""
    opened = []

    def make(config=None, *, path=None, emb=None, clk=None):
        m = open_mem(path or db_path, embedder=emb or embedder, config=config, clock=clk or clock)
        opened.append(m)
        return m

    yield make
    for m in opened:
        m.close()


@pytest.fixture
def scope() -> Scope:
    return Scope("alice", "assistant")


@pytest.fixture
def session() -> Scope:
    return Scope("alice", "assistant", "s1")


_POOL: SimpleNamespace | None = None


def _start_pool() -> SimpleNamespace:
    """Two 'spawn' worker processes: fresh interpreters that share nothing with the test
    process but the database files they are given. Started without waiting for them."""
    global _POOL
    if _POOL is None:
        ctx = mp.get_context("spawn")
        to_parent, to_child = ctx.Queue(), ctx.Queue()
        pool = ctx.Pool(2, initializer=core_helpers.init_worker, initargs=(to_parent, to_child))
        _POOL = SimpleNamespace(pool=pool, to_parent=to_parent, to_child=to_child)
    return _POOL


# What a test reads of the SQLite store's own connection or search indexes: such tests run
# on SQLite only (the helpers that read a store's tables and files, core_helpers, serve both
# backends).
SQLITE_INTERNALS = ("raw_connection", "_search")


def _reads_sqlite_internals(item) -> bool:
    """Whether the test, or a function of its own module it calls (two levels down), names
    one of SQLITE_INTERNALS."""
    import inspect

    fn = getattr(item, "function", None)
    todo, seen = [(fn, 0)] if fn is not None else [], set()
    while todo:
        f, depth = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        try:
            source = inspect.getsource(f)
        except (OSError, TypeError):
            continue
        if any(name in source for name in SQLITE_INTERNALS):
            return True
        if depth < 2:
            todo.extend((g, depth + 1) for n in f.__code__.co_names
                        if inspect.isfunction(g := f.__globals__.get(n)) and g.__module__ == f.__module__)
    return False


def pytest_collection_modifyitems(session, config, items):
    if os.environ.get(BACKEND_ENV) == "postgres":
        skip = pytest.mark.skip(reason="reads SQLite's files or connection (PostgreSQL: tests/storage/test_postgres.py)")
        for item in items:
            if _reads_sqlite_internals(item):
                item.add_marker(skip)
    # The workers import the library while the first tests run.
    if any("workers" in getattr(item, "fixturenames", ()) for item in items):
        _start_pool()


def pytest_sessionfinish(session, exitstatus):
    global _POOL
    if _POOL is not None:
        _POOL.pool.terminate()
        _POOL.pool.join()
        _POOL = None


@pytest.fixture(scope="session")
def workers() -> SimpleNamespace:
    return _start_pool()
