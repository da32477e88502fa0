"""The SQLite store's connections: one writer, one index reader, one reader per thread.

* The writer runs every write transaction (``BEGIN IMMEDIATE``) and the reads made inside
  one by the thread that holds it (they must see its own uncommitted rows).
* Every other read runs on a read connection of the calling thread (WAL readers see the
  last committed state and never wait for the writer), so reads of several threads -
  a REST server's workers, ``AsyncMemory``'s readers - run at once, and a slow write
  does not stall a health check.
* ``begin`` polls for the write lock itself instead of SQLite's busy handler, whose
  sleeps grow to 100 ms: with several processes writing, a waiter would sleep long after
  the lock was free (measured: 4 writers were slower together than one alone).
* Failures become zenbrain's errors (``guard``); a damaged file is remembered and every
  later write refused; a closed store says so.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ...errors import (
    DamagedStoreError,
    ReadOnlyStoreError,
    StoreClosedError,
    ZenBrainError,
)
from . import codec
from .guard import is_busy, is_damage, recovery_hint, translate

# Polling for the write lock: first wait, growth per try and longest wait (seconds).
BEGIN_FIRST_WAIT = 0.0005
BEGIN_GROWTH = 1.5
BEGIN_MAX_WAIT = 0.004
# The writer's page cache (KiB, as SQLite allocates it: only what is used). Reads run on the
# writer while nothing writes (``reading``); SQLite's default 2 MB held too few of the pages
# a recall reads in a 40 MB store: 239 page reads from the file a recall instead of 108.
WRITER_CACHE_KIB = 65536


def connect(path: str, timeout: float, *, read_only: bool = False, uri: str | None = None) -> sqlite3.Connection:
    """A connection to the store's file; ``uri``: connect through this SQLite URI instead
    (a read-only store's ``mode=ro``, which SQLite itself enforces)."""
    conn = sqlite3.connect(uri or path, timeout=timeout, isolation_level=None, check_same_thread=False,
                           uri=uri is not None)
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    codec.register(conn)
    if read_only or uri is not None:
        conn.execute("PRAGMA query_only=1")
    return conn


class Connections:
    def __init__(self, path: str, timeout: float, *, shared: bool, read_only_uri: str | None = None) -> None:
        self.path = path
        self.timeout = float(timeout)
        self.busy_ms = int(timeout * 1000)
        self.shared = shared  # False: a private in-memory database, reachable by one connection only
        self.uri = read_only_uri  # set: every connection opens the file read-only through it
        self.lock = threading.RLock()  # held by the thread that writes (and, unshared, by every reader)
        self.writer = connect(path, timeout, uri=read_only_uri)
        try:
            self.writer.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        except sqlite3.DatabaseError:
            pass  # a damaged schema: the store's checks at open say so in its own words
        self.tx_thread: int | None = None  # the thread inside a write transaction
        self.closed = False
        self.damaged: str | None = None  # why the file is known to be damaged
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self.max_begin_wait = 0.0  # the longest wait for the write lock so far (seconds)

    # -- failures ----------------------------------------------------------------------------
    def fail(self, exc: BaseException, doing: str) -> ZenBrainError:
        """The zenbrain error for a failure; damage is remembered (no further writes)."""
        if self.closed and isinstance(exc, sqlite3.ProgrammingError):
            return StoreClosedError(f"{self.path}: the store is closed")
        if is_damage(exc) and self.damaged is None:
            self.damaged = str(exc)
        return translate(exc, self.path, doing)

    def check_open(self) -> None:
        if self.closed:
            raise StoreClosedError(f"{self.path}: the store is closed")

    def check_writable(self) -> None:
        self.check_open()
        if self.uri is not None:
            raise ReadOnlyStoreError(f"{self.path} is open read-only: nothing can be written to it "
                                     "(open it without read_only to write)")
        if self.damaged is not None:
            raise DamagedStoreError(f"{self.path} is damaged ({self.damaged}); zenbrain writes nothing more into it: "
                                    f"{recovery_hint(self.path)}")

    # -- reading -----------------------------------------------------------------------------
    @contextmanager
    def reading(self, doing: str, *, snapshot: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection to read with: the writer inside this thread's own transaction (or
        for an unshared database); else, for a read that needs no snapshot, the writer while
        no other thread writes; else this thread's reader. ``snapshot``: the reads of the
        block see one committed state."""
        self.check_open()
        try:
            if not self.shared or self.tx_thread == threading.get_ident():
                with self.lock:
                    yield self.writer
                return
            if not snapshot and self.uri is None and self.lock.acquire(blocking=False):
                # No write in progress: read on the writer. Its page cache survives its own
                # commits, where a reader's is dropped whenever another connection commits
                # (SQLite then reads every page again: about 200 page reads of a recall on
                # the REST load test's store, after the previous recall's bookkeeping).
                try:
                    yield self.writer
                finally:
                    self.lock.release()
                return
            conn = self._thread_reader()
            if not snapshot:
                yield conn
                return
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except (sqlite3.Error, UnicodeEncodeError, OverflowError) as exc:
            raise self.fail(exc, doing) from exc

    def _thread_reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, self.timeout, read_only=True, uri=self.uri)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    # -- writing -----------------------------------------------------------------------------
    def begin(self) -> None:
        """``BEGIN IMMEDIATE`` on the writer, polling for the write lock up to the timeout."""
        db = self.writer
        deadline = time.monotonic() + self.timeout
        start = time.monotonic()
        wait = BEGIN_FIRST_WAIT
        db.execute("PRAGMA busy_timeout=0")
        try:
            while True:
                try:
                    db.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc) or time.monotonic() >= deadline:
                        raise
                time.sleep(wait * (0.5 + random.random()))  # jitter: waiters do not retry in step
                wait = min(wait * BEGIN_GROWTH, BEGIN_MAX_WAIT)
        finally:
            db.execute(f"PRAGMA busy_timeout={self.busy_ms}")
        self.max_begin_wait = max(self.max_begin_wait, time.monotonic() - start)

    def rollback(self, cause: BaseException) -> None:
        """Roll the writer back after ``cause``; if SQLite has rolled back already (a full
        disk) or the rollback fails too, ``cause`` stays the error raised (with a note)."""
        try:
            if self.writer.in_transaction:
                self.writer.execute("ROLLBACK")
        except sqlite3.Error as exc:
            cause.add_note(f"(the rollback after it failed too: {exc})")

    # -- closing -----------------------------------------------------------------------------
    def close(self, *extra: sqlite3.Connection) -> None:
        self.closed = True
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in {id(c): c for c in (*readers, *extra, self.writer)}.values():
            try:
                conn.close()
            except sqlite3.Error:
                pass


__all__ = ["Connections", "connect"]
