"""The WAL folded into the database file by the store's own thread, not inside a commit."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import pytest
from forking import child_exit_code

from zenbrain.storage.sqlite import SQLiteStore
from zenbrain.storage.sqlite.checkpoints import (
    EVERY_COMMITS,
    FALLBACK_PAGES,
    Checkpointer,
)

P = ("ann", "a")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wait(cond, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_commits_leave_the_checkpoint_to_the_thread_and_it_runs(tmp_path):
    """A commit no longer folds the log into the file (the writer's own checkpoint waits for
    FALLBACK_PAGES); after EVERY_COMMITS commits the thread does, so the file changes
    while nothing else could have written it."""
    path = tmp_path / "s.db"
    s = SQLiteStore(str(path), embedder_name="m", dim=4)
    assert s.raw_connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == FALLBACK_PAGES
    s.raw_connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = _digest(path)
    for i in range(EVERY_COMMITS - 1):
        with s.transaction() as tx:
            tx.kv_put(P, {f"k{i}": i})
    time.sleep(0.2)
    assert s._checkpoints is not None and s._checkpoints.done == 0
    assert _digest(path) == before  # every commit so far is in the log only
    with s.transaction() as tx:
        tx.kv_put(P, {"last": 1})
    assert _wait(lambda: s._checkpoints.done >= 1)
    assert s._checkpoints.failed is None
    assert _digest(path) != before  # folded in by the thread
    assert s.kv_get(P, "last") == 1 and s.kv_get(P, "k3") == 3
    thread = s._checkpoints._thread
    s.close()
    assert thread is not None and not thread.is_alive()
    # Everything committed is there after reopening.
    s = SQLiteStore(str(path), embedder_name="m", dim=4)
    assert s.kv_get(P, "k0") == 0 and s.kv_get(P, "last") == 1
    s.close()


def test_a_checkpoint_due_while_paused_waits_for_the_pause_to_end(tmp_path):
    """An erasure's truncating checkpoint runs with the thread paused, so it never finds
    the log busy with ours (and leaves the erased text in it): a checkpoint that falls
    due meanwhile runs after."""
    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name="m", dim=4)
    cp = s._checkpoints
    assert cp is not None
    with cp.paused():
        for i in range(EVERY_COMMITS):
            with s.transaction() as tx:
                tx.kv_put(P, {f"k{i}": "x" * 2000})
        time.sleep(0.3)
        assert cp.done == 0
        assert s.raw_connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    assert _wait(lambda: cp.done == 1)
    s.close()


def test_a_read_only_or_private_store_has_no_checkpoint_thread(tmp_path):
    path = tmp_path / "s.db"
    SQLiteStore(str(path), embedder_name="m", dim=4).close()
    ro = SQLiteStore(str(path), embedder_name="m", dim=4, read_only=True)
    assert ro._checkpoints is None
    ro.close()
    mem = SQLiteStore(":memory:", embedder_name="m", dim=4)
    assert mem._checkpoints is None
    mem.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_process_checkpoints_on_a_thread_of_its_own(tmp_path):
    """The parent's thread is not in a forked child: the child's first due checkpoint starts
    one of its own (with a connection of its own) instead of waking nobody."""
    path = str(tmp_path / "f.db")
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (x)")
    cp = Checkpointer(lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=False),
                      synchronous="NORMAL", every_commits=2)
    setup.execute("INSERT INTO t VALUES (1)")
    cp.committed()
    cp.committed()
    assert _wait(lambda: cp.done == 1)
    pid = os.fork()
    if pid == 0:  # the child: never back into the parent's pytest
        try:
            own = sqlite3.connect(path, isolation_level=None)
            own.execute("INSERT INTO t VALUES (2)")
            cp.committed()
            cp.committed()
            os._exit(0 if _wait(lambda: cp.done == 2, 20.0) and cp.failed is None else 1)
        finally:
            os._exit(2)
    assert child_exit_code(pid, "the child's checkpoint never ran") == 0
    cp.close()
    setup.close()


def test_a_store_dropped_without_close_leaves_no_checkpoint_thread(tmp_path):
    import gc

    s = SQLiteStore(str(tmp_path / "d.db"), embedder_name="m", dim=4)
    for i in range(EVERY_COMMITS):
        with s.transaction() as tx:
            tx.kv_put(P, {f"k{i}": i})
    cp = s._checkpoints
    assert cp is not None and _wait(lambda: cp.done == 1)
    thread = cp._thread
    del s, tx  # the last transaction refers to its store
    gc.collect()
    assert thread is not None and _wait(lambda: not thread.is_alive())
