"""WAL checkpoints on a thread of their own, off the path of the operations.

SQLite folds the write-ahead log back into the database file from inside the commit that
takes the log past ``wal_autocheckpoint`` pages: that commit copies a few thousand pages
and syncs the file (9-13 ms), about once every twenty recalls of the REST load test, so a
request now and then paid for the writes of the twenty before it. ``Checkpointer`` runs
``PRAGMA wal_checkpoint(PASSIVE)`` (which never waits for readers or writers) on a
connection and a thread of its own after every ``every_commits`` commits, or at once after
a large one; the writer's own auto-checkpoint stays, at ``FALLBACK_PAGES``, for a log the
thread does not keep up with. Mixed recalls and stores on the load test's store: p95 of an
operation 11.6-12.3 -> 7.4-8.8 ms, the same CPU (docs/reliability.md).

A checkpoint is only an optimisation: the log is durable either way, and a checkpoint cut
short by a crash is taken up by the next one.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EVERY_COMMITS = 32  # commits between two checkpoints of the thread
LARGE_COMMIT_ROWS = 256  # a commit that wrote this many memories asks for one at once
FALLBACK_PAGES = 10_000  # the writer's own auto-checkpoint (SQLite's default is 1,000)


class Checkpointer:
    """Checkpoints a WAL database in the background (see module docs) through a connection
    of its own from ``connect``, with the store's ``synchronous`` setting."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, synchronous: str,
                 every_commits: int = EVERY_COMMITS) -> None:
        self._connect = connect
        self.synchronous = synchronous
        self.every_commits = max(1, int(every_commits))
        self.done = 0  # checkpoints run
        self.failed: str | None = None  # the last checkpoint's error, if it failed
        self._commits = 0
        self._lock = threading.Lock()  # held while a checkpoint runs (``paused`` waits for it)
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def committed(self, rows: int = 0) -> None:
        """Count a commit of the writer (``rows``: memories it wrote); wake the thread when due."""
        if self._stop:
            return
        if self._pid != os.getpid():  # a forked child: the parent's thread is not here
            self._thread, self._wake, self._lock, self._pid = None, threading.Event(), threading.Lock(), os.getpid()
        self._commits += 1
        if self._commits < self.every_commits and rows < LARGE_COMMIT_ROWS:
            return
        self._commits = 0
        if self._thread is None:
            thread = threading.Thread(target=self._run, name="zenbrain-checkpoint", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # the interpreter is shutting down: the writer's own checkpoint remains
                return
            self._thread = thread
        self._wake.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No checkpoint of this thread runs inside (an erasure's own checkpoint must not
        find the log busy with ours)."""
        with self._lock:
            yield

    def stop(self) -> None:
        """Let the thread end (after the checkpoint it may be running), without waiting."""
        self._stop = True
        self._wake.set()

    def close(self, timeout: float = 30.0) -> None:
        self.stop()
        thread = self._thread
        if thread is not None and self._pid == os.getpid():
            thread.join(timeout)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                with self._lock:
                    try:
                        if conn is None:
                            conn = self._connect()
                            conn.execute("PRAGMA busy_timeout=0")
                            conn.execute(f"PRAGMA synchronous={self.synchronous}")
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                        self.done += 1
                        self.failed = None
                    except sqlite3.Error as exc:  # the writer's auto-checkpoint still folds the log
                        self.failed = f"{type(exc).__name__}: {exc}"
        finally:
            if conn is not None:
                conn.close()


__all__ = ["EVERY_COMMITS", "FALLBACK_PAGES", "LARGE_COMMIT_ROWS", "Checkpointer"]
