"""SQLite helpers shared by the store and the embedding cache."""

from __future__ import annotations

import sqlite3
import time


def enable_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """Switch ``conn`` to WAL and return the journal mode now in force.

    While another process is switching the same new file, SQLite answers "database is
    locked" at once, without calling its busy handler; wait that out up to ``timeout``.
    """
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
