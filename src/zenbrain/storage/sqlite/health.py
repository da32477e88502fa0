"""The SQLite store's health: whether the last user closed it cleanly, integrity checks,
and scrubbing erased text out of the files.

* Unclean shutdown. Every store holds a shared ``flock`` on the database file while it is
  open (SQLite itself uses POSIX record locks, which on Linux do not interact with
  ``flock``). The first opener takes it exclusively for a moment: if it is alone and a
  non-empty WAL is left over, the last user did not close the file (a crash, ``kill -9``,
  a power cut), and the store runs ``PRAGMA quick_check`` before it is used.
* ``check_connection`` is the full check behind ``zenbrain check``: SQLite's integrity
  check, the FTS index's own check, and the store's cross-table invariants.
* Scrubbing. ``secure_delete`` zeroes erased rows in the pages they leave, but until a
  checkpoint copies those pages into the database file the old versions stay in it, and
  FTS5 keeps erased words in its segments until they are merged. ``scrub`` merges the FTS
  segments and checkpoints the WAL with truncation; a reader holding an older snapshot
  can prevent that, and then the erasure stays *pending* (a row in ``meta``, so any
  process completes it at its next write, open or close).
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from ...index import vector_keys
from . import codec
from .lexical import fts_retired

try:  # POSIX only; elsewhere an unclean shutdown is left to SQLite's own recovery
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

SCRUB_PENDING = "scrub_pending"  # meta key: erased text may still be in the files
MAX_PROBLEMS = 50  # problems listed by one check


@dataclass
class CheckReport:
    """What ``zenbrain check`` found: ``ok`` when no check found a problem."""

    path: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # what was checked
    memories: int = 0
    scrub_pending: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "ok": self.ok, "problems": list(self.problems), "checks": list(self.checks),
                "memories": self.memories, "scrub_pending": self.scrub_pending, "seconds": round(self.seconds, 3)}


class OpenLock:
    """A ``flock`` on the database file held while a store has it open."""

    def __init__(self, path: str) -> None:
        self.fd: int | None = os.open(path, os.O_RDONLY) if fcntl is not None else None

    def alone(self) -> bool:
        """Take the lock exclusively if nobody else holds it: True when this is the only opener."""
        if self.fd is None:
            return False
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def share(self) -> None:
        """Hold the lock shared (waits while a first opener checks the file)."""
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_SH)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the flock
            self.fd = None


def left_unclean(path: str) -> bool:
    """Whether a WAL with content is left beside ``path`` (its last user did not close it)."""
    wal = path + "-wal"
    return os.path.exists(wal) and os.path.getsize(wal) > 0


def quick_check(db: sqlite3.Connection) -> list[str]:
    """SQLite's quick check (page structure, no index-to-table comparison): problems, or []."""
    rows = [str(r[0]) for r in db.execute(f"PRAGMA quick_check({MAX_PROBLEMS})")]
    return [] if rows == ["ok"] else rows


def check_connection(db: sqlite3.Connection, path: str, embedder_name: str | None, *,
                     fts_db: sqlite3.Connection | None = None, fts_check: bool = True) -> CheckReport:
    """Every check on an open connection (it writes nothing). FTS5 runs its own check as an
    INSERT, which SQLite refuses on a read-only connection: ``fts_db`` (a writable connection
    to the same file) runs it then, in a write transaction that is rolled back; without one a
    read-only file skips that check (``fts_check=False``)."""
    t0 = time.perf_counter()
    codec.register(db)  # the SQL functions the checks call
    report = CheckReport(path=path, ok=True)

    def run(name: str, fn: Any) -> None:
        report.checks.append(name)
        try:
            found = fn()
        except sqlite3.DatabaseError as exc:
            found = [f"{name} could not run: {exc}"]
        report.problems.extend(str(p) for p in found[:MAX_PROBLEMS])

    def integrity() -> list[str]:
        rows = [str(r[0]) for r in db.execute(f"PRAGMA integrity_check({MAX_PROBLEMS})")]
        return [] if rows == ["ok"] else rows

    def fts() -> list[str]:
        if fts_db is None:
            db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")  # raises on a problem
            return []
        fts_db.execute("BEGIN IMMEDIATE")
        try:
            fts_db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        finally:
            fts_db.execute("ROLLBACK")
        return []

    def counted(sql: str, what: str, *args: Any) -> Any:
        def one() -> list[str]:
            n = db.execute(sql, args).fetchone()[0]
            return [f"{n} {what}"] if n else []
        return one

    run("sqlite integrity_check", integrity)
    if not report.problems:  # the checks below read the tables; on a broken file they only add noise
        if fts_check:
            run("fts5 integrity-check", fts)
        if fts_retired(db):  # text is searched through the index files only
            run("no lexical entries in a retired FTS5 table", counted(
                "SELECT COUNT(*) FROM memories_fts", "lexical entries in the retired FTS5 table"))
        else:
            run("lexical entries of every memory", counted(
                "SELECT COUNT(*) FROM memories WHERE id NOT IN (SELECT memory_id FROM memories_fts)",
                "memories without a lexical entry"))
        run("no lexical entry without its memory", counted(
            "SELECT COUNT(*) FROM memories_fts f LEFT JOIN memories m ON m.id = f.memory_id WHERE m.id IS NULL",
            "lexical entries without a memory"))
        run("lexical entries in their partition's rowid range", counted(
            "SELECT COUNT(*) FROM memories_fts f LEFT JOIN partitions p ON p.user_id = f.user_id "
            "AND p.agent_id = f.agent_id WHERE p.id IS NULL OR f.rowid NOT BETWEEN (p.id << 32) + 1 "
            "AND (p.id << 32) + 4294967295", "lexical entries outside their partition's range"))
        if embedder_name is not None:
            run("a vector for every memory", lambda: counted(*_vector_check(db, embedder_name))())
        run("both ends of every edge", counted(
            "SELECT COUNT(*) FROM edges g WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id=zb_id_text(g.src)) "
            "OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id=zb_id_text(g.dst))", "edges with a missing end"))
        try:
            report.memories = int(db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
            report.scrub_pending = scrub_pending(db)
        except sqlite3.DatabaseError as exc:
            report.problems.append(f"cannot count memories: {exc}")
    report.ok = not report.problems
    report.seconds = time.perf_counter() - t0
    return report


def _vector_check(db: sqlite3.Connection, embedder_name: str) -> tuple[Any, ...]:
    """The count of memories without a vector, in the vectors table's layout of the file
    (one not yet migrated keys vectors by embedder and hex hash)."""
    columns = {r[1] for r in db.execute("PRAGMA table_info(embeddings)")}
    if "key" in columns:
        return ("SELECT COUNT(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                f"WHERE e.key={vector_keys.SQL_FUNCTION}(COALESCE(m.vector_key, m.content_hash)))",
                "memories without a vector")
    return ("SELECT COUNT(*) FROM memories m WHERE NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model=? AND e.hash=COALESCE(m.vector_key, m.content_hash))",
            "memories without a vector", embedder_name)


def check_file(path: str | os.PathLike[str]) -> CheckReport:
    """Check a store's file without opening it as a store (no embedder needed, nothing
    written, works on a damaged file): what ``zenbrain check`` runs."""
    path = str(path)
    if not os.path.exists(path):
        return CheckReport(path=path, ok=False, problems=[f"no such file: {path}"])
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=30.0)
    except sqlite3.Error as exc:
        return CheckReport(path=path, ok=False, problems=[f"cannot open: {exc}"])
    try:
        try:
            row = db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
            embedder = str(row[0]) if row else None
        except sqlite3.DatabaseError as exc:
            return CheckReport(path=path, ok=False, problems=[f"not a readable zenbrain store: {exc}"],
                               checks=["open"])
        # FTS5's check needs a writable connection; it is closed while this read-only one still
        # holds the file (in WAL mode a reader keeps a shared lock), so closing it checkpoints nothing.
        writer = None
        if os.access(path, os.W_OK):
            try:
                writer = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None, timeout=30.0)
            except sqlite3.Error:
                writer = None
        try:
            return check_connection(db, path, embedder, fts_db=writer, fts_check=writer is not None)
        finally:
            if writer is not None:
                writer.close()
    finally:
        db.close()


def scrub_pending(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM meta WHERE key=?", (SCRUB_PENDING,)).fetchone() is not None


def mark_scrub_pending(db: sqlite3.Connection, now: float) -> None:
    """Inside an erasing transaction: the files may hold erased text until ``scrub`` succeeds."""
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (SCRUB_PENDING, repr(now)))


def scrub(db: sqlite3.Connection, wait_s: float, busy_ms: int) -> bool:
    """Merge the FTS segments and checkpoint the WAL with truncation, waiting up to
    ``wait_s`` for readers of older snapshots; True when erased text is gone from the
    files (and the pending mark cleared). Runs outside any transaction of ``db``."""
    db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
    db.execute(f"PRAGMA busy_timeout={max(0, int(wait_s * 1000))}")
    try:
        busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    finally:
        db.execute(f"PRAGMA busy_timeout={busy_ms}")
    if busy:
        return False
    db.execute("DELETE FROM meta WHERE key=?", (SCRUB_PENDING,))
    # The deletion above wrote only the meta page; fold it in too when nobody reads.
    db.execute("PRAGMA busy_timeout=0")
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError:
        pass
    finally:
        db.execute(f"PRAGMA busy_timeout={busy_ms}")
    return True


__all__ = ["SCRUB_PENDING", "CheckReport", "OpenLock", "check_connection", "check_file", "left_unclean",
           "mark_scrub_pending", "quick_check", "scrub", "scrub_pending"]
