"""The embedded default store: one SQLite file in WAL mode.

* Every operation's writes run in one ``BEGIN IMMEDIATE`` transaction; reads run on a
  read connection of the calling thread (``connections``), so they run beside a write.
* Vectors live in a content-hash keyed embedding table that doubles as the embedding
  cache, so no text is embedded twice.
* Search runs on ``zenbrain.index``: a vector index per partition (exact below 5k rows,
  HNSW with an exact re-rank above) and, for partitions from 2k memories on, a tantivy
  BM25 index (below, FTS5 ranks the partition's matches in its rowid range), derived
  from committed rows, kept in step through the ``changes`` log (so several processes can
  share one file and a crash never leaves them disagreeing with the data), persisted in
  ``<database>.idx`` so that reopening does not rebuild them.
* Health (``health``): a file left by a crash is checked when it is next opened, a damaged
  file gets no further writes, ``check`` runs every integrity check, and an erasure is
  scrubbed out of the files (or stays pending until it can be).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Any

import numpy as np

from ..._sqlite import enable_wal
from ...errors import (
    ConfigError,
    DamagedStoreError,
    ReadOnlyStoreError,
    StorageError,
    ZenBrainError,
)
from ...index import AnnParams, IndexSet
from ...index.sqlite_source import (
    CHANGES_PRUNED,
    LEXICAL_EXTRA,
    SQLiteIndexSource,
    new_store_id,
)
from ...index.vector_keys import key_blob
from ...index.vectors import blob_vector
from ...model import Edge, HistoryEvent, MemoryItem
from ..base import ORDERABLE, Filter, Partition, StoreStats, iter_chunks
from . import health, migrations, opening
from .checkpoints import FALLBACK_PAGES, Checkpointer
from .codec import (
    EDGE_COLUMNS,
    SELECT,
    VECTOR_KEY,
    decode,
    edge_from_row,
    id_key,
    item_from_row,
)
from .connections import Connections, connect
from .filters import turn_runs, where
from .guard import TRANSLATED, recovery_hint
from .lexical import (
    fts_query,
    fts_retired,
    lexical_search,
    partition_number,
    retire_fts,
)
from .transaction import SQLiteTransaction

CommitHook = Callable[[SQLiteTransaction], None]

# Planner statistics: gathered once the memories table has this many rows and again each
# time it has grown by this factor, from this many rows per index (PRAGMA analysis_limit).
ANALYZE_MIN_ROWS = 10_000
ANALYZE_GROWTH = 2
ANALYZE_LIMIT = 1000
INDEX_SUFFIX = ".idx"  # the search indexes' directory: <database>.idx
# Stores (or partitions) from this many memories on are searched lexically by the tantivy
# index, smaller ones by FTS5, whose cost grows with the whole store. tantivy is faster at
# every size (scripts/bench_lexical_paths.py, top 50: 0.16 against 0.33 ms at 1k, 0.65
# against 2.4 ms at 10k, 1.1 against 17 ms at 50k) and ranks
# as well (LoCoMo evidence_recall@5 0.726 against 0.724), but its scores of texts not yet
# committed differ slightly from those it gives once they are (it keeps lengths in one
# byte; commits come every 1000 texts or 5 s), so a small store's results would depend on
# the wall clock: a test that stores and recalls could pass or fail with the machine's
# speed. Below this size FTS5 costs under half a millisecond and its results are exact and
# the same every time. (The experiment suite's fingerprint is unchanged either way.)
LEXICAL_INDEX_MIN_ROWS = 2_000
# How long an erasure waits for readers of older snapshots before it reports its scrub pending.
SCRUB_WAIT_S = 2.0
# The change log (table changes) tells every process's search indexes which rows changed.
# Once the index files have been saved past a row, it is kept only while another process
# may still be behind: the newest CHANGE_LOG_KEEP rows stay, older ones go when the indexes
# are saved (on close and save_indexes). A process further behind than that rebuilds its
# in-memory indexes (replaying as many changes costs about as much). Without it the log
# grows by a row for every change of every memory (55 bytes a memory at 100k).
CHANGE_LOG_KEEP = 100_000


class RequestRecord:
    """A write request recorded under its idempotency key (see ``SQLiteStore.request``)."""

    __slots__ = ("created_at", "fingerprint", "memory_ids", "owner", "response", "status")

    def __init__(self, fingerprint: str, owner: str, created_at: float, memory_ids: list[str], status: int | None,
                 response: str | None) -> None:
        self.fingerprint = fingerprint
        self.owner = owner
        self.created_at = created_at
        self.memory_ids = memory_ids
        self.status = status
        self.response = response


def _highest_rowid(db: sqlite3.Connection) -> int:
    """The memories table's highest rowid: how many memories the store has held (one seek)."""
    return int(db.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchone()[0])


class SQLiteStore:
    """One SQLite file. Safe to open from several processes at once; one store object may
    be used from several threads: reads run at once (one read connection per thread),
    writes one at a time.

    ``allow_damaged`` opens a file that fails its integrity check for reading only (to
    salvage it); otherwise opening it raises ``DamagedStoreError``. ``scrub_wait_s``: how
    long an erasure waits for readers before its scrub is reported pending.
    ``durability``: ``"full"`` (default) flushes every commit to disk, so a committed
    memory survives a power cut; ``"process"`` flushes at checkpoints only: a commit
    survives a crash of the process but a power cut may undo the last ones, and writers
    hold the write lock for less time (no fsync inside it). ``ann`` and
    ``lexical_index_min_rows``: when and how the search indexes approximate (defaults
    measured, see docs/indexes.md); once the store has held that many memories its FTS5
    table is emptied for good (every lexical search then runs on the index), unless
    ``keep_fts`` (for comparing the two lexical paths on one file).

    ``create``: None (default) makes a new store where the path is free; True also makes
    one of an empty file; False opens an existing store only. A file that is not a store
    (another application's database, not SQLite) is refused either way: ``NotAStoreError``,
    nothing written (``opening``). ``read_only``: open an existing store through a read-only
    connection (nothing is written, a write raises ``ReadOnlyStoreError``); a file that
    cannot be written must be opened so."""

    def __init__(self, path: str | os.PathLike[str], *, embedder_name: str, dim: int, timeout: float = 30.0,
                 allow_damaged: bool = False, scrub_wait_s: float = SCRUB_WAIT_S, durability: str = "full",
                 create: bool | None = None, read_only: bool = False, ann: AnnParams | None = None,
                 lexical_index_min_rows: int = LEXICAL_INDEX_MIN_ROWS, keep_fts: bool = False,
                 change_log_keep: int = CHANGE_LOG_KEEP) -> None:
        if durability not in ("full", "process"):
            raise ConfigError(f"durability must be 'full' or 'process', got {durability!r}")
        if create is not None and not isinstance(create, bool):
            raise ConfigError(f"create must be True, False or None, got {create!r}")
        self._synchronous = "FULL" if durability == "full" else "NORMAL"
        self.path = str(path)
        self.embedder_name = embedder_name
        self.dim = int(dim)
        self.scrub_wait_s = float(scrub_wait_s)
        self._shared = self.path != ":memory:"  # a private in-memory database has no other connection
        self._search: IndexSet | None = None  # see _index_set
        self._ann = ann
        self.lexical_index_min_rows = int(lexical_index_min_rows)
        self.change_log_keep = max(1, int(change_log_keep))
        self._lexical_large = False  # see _lexical_indexed
        self._fts_off = False  # the FTS5 table is retired (lexical.retire_fts); once true it stays so
        self._keep_fts = bool(keep_fts)
        self._tx: SQLiteTransaction | None = None
        self._checkpoints: Checkpointer | None = None  # see below, once the file is open
        self._stats_rows = -1  # memory rows at the last ANALYZE; read when first needed
        self._hooks = threading.local()  # per thread: callables run before each commit (see before_commit)
        self._open_lock: health.OpenLock | None = None
        self.opened_unclean = False  # the last user of the file did not close it (crash); it was checked
        self.read_only = bool(read_only)
        uri = None
        if self._shared:
            uri = opening.prepare(self.path, create=create, read_only=self.read_only,
                                  build=lambda conn: self._build(conn, timeout))
            self._open_lock = health.OpenLock(self.path)
            self.opened_unclean = self._open_lock.alone() and health.left_unclean(self.path)
        elif self.read_only:
            raise ConfigError("a private in-memory store cannot be opened read-only")
        try:
            self._c = Connections(self.path, timeout, shared=self._shared, read_only_uri=uri)
        except sqlite3.Error as exc:
            self._release_open_lock()
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        self._lock = self._c.lock
        self._db = self._c.writer
        try:
            self._open(timeout, allow_damaged)
        except BaseException:
            self._c.close()
            self._release_open_lock()
            raise
        # Indexes are built and synced through a connection of their own, which only ever
        # sees committed rows, so they cannot pick up a write that is later rolled back.
        self._reader = connect(self.path, timeout, read_only=True, uri=uri) if self._shared else self._db
        self._index_lock = threading.RLock() if self._shared else self._lock
        # The WAL folded back into the file by a thread of its own, not inside a commit.
        if self._shared and not self.read_only:
            path = self.path  # not the store: its thread must not keep the store alive
            self._checkpoints = Checkpointer(lambda: connect(path, timeout, uri=uri), synchronous=self._synchronous)
            self._db.execute(f"PRAGMA wal_autocheckpoint={FALLBACK_PAGES}")
            weakref.finalize(self, self._checkpoints.stop)  # a store dropped unclosed leaves no thread behind

    # -- opening and closing -----------------------------------------------------------------
    def _build(self, conn: sqlite3.Connection, timeout: float) -> None:
        """Write a new store's schema and embedder into ``conn`` (see ``opening.create_new``)."""
        enable_wal(conn, timeout)
        conn.execute("BEGIN IMMEDIATE")
        migrations.apply(conn, self.path)
        conn.execute("INSERT INTO meta (key, value) VALUES ('embedder', ?), ('dim', ?)",
                     (self.embedder_name, str(self.dim)))
        conn.execute("COMMIT")

    def _open(self, timeout: float, allow_damaged: bool) -> None:
        try:
            mode = "wal" if self.read_only else enable_wal(self._db, timeout)  # read-only: the file's mode as it is
            if self._shared and mode.lower() != "wal":
                raise StorageError(f"{self.path}: could not enable WAL (journal_mode={mode})")
            # FULL: a committed memory survives a power cut too, not only a process crash.
            self._db.execute(f"PRAGMA synchronous={self._synchronous}")
            # Overwrite deleted content with zeros so erasure also leaves the file.
            self._db.execute("PRAGMA secure_delete=ON")
            if self.opened_unclean:
                problems = health.quick_check(self._db)
                if problems:
                    self._c.damaged = "; ".join(problems[:3])
                    if not allow_damaged:
                        raise DamagedStoreError(
                            f"{self.path} was not closed cleanly and fails its integrity check "
                            f"({self._c.damaged}): {recovery_hint(self.path)}")
            if self._c.damaged is None:
                self._migrate()
        except sqlite3.DatabaseError as exc:
            err = self._c.fail(exc, "opening it")
            if isinstance(err, ReadOnlyStoreError):
                raise err from exc
            if not isinstance(err, DamagedStoreError):
                raise StorageError(f"{self.path} is not a usable zenbrain store: {exc}") from exc
            if not allow_damaged:
                raise err from exc
        if self._open_lock is None and self._shared:
            self._open_lock = health.OpenLock(self.path)
        if self._open_lock is not None:
            self._open_lock.share()
        if self._c.damaged is not None:
            return  # opened to salvage what is readable: nothing is checked or written
        try:
            self._check_meta()
            if not self.read_only and health.scrub_pending(self._db):
                self._scrub(0.0)  # an erasure another process could not finish
        except sqlite3.DatabaseError as exc:
            raise self._c.fail(exc, "opening it") from exc

    def _release_open_lock(self) -> None:
        if self._open_lock is not None:
            self._open_lock.close()
            self._open_lock = None

    def _migrate(self) -> None:
        if self.read_only:
            pending = migrations.missing(self._db, self.path)
            if pending:
                raise StorageError(f"{self.path} was written by an older zenbrain and needs its schema upgraded "
                                   f"({', '.join(pending)}), which a read-only store cannot do: open it once for "
                                   "writing")
            return
        with self._lock:
            self._c.begin()
            try:
                migrations.apply(self._db, self.path)
                self._db.execute("COMMIT")
            except BaseException as exc:
                self._c.rollback(exc)
                raise

    def _check_meta(self) -> None:
        with self._lock:
            rows = dict(self._db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')").fetchall())
            if not rows and self._c.damaged is None and not self.read_only:
                self._c.begin()
                self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('embedder', ?), ('dim', ?)",
                                 (self.embedder_name, str(self.dim)))
                self._db.execute("COMMIT")
                rows = dict(self._db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')").fetchall())
            if self._c.damaged is None and not self.read_only and self._db.execute(
                    "SELECT 1 FROM meta WHERE key='store_id'").fetchone() is None:
                # Names this database for good: index files of another one are never taken for its own.
                self._c.begin()
                self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?)", (new_store_id(),))
                self._db.execute("COMMIT")
            if rows and rows.get("embedder") != self.embedder_name or int(rows.get("dim", -1)) != self.dim:
                raise ConfigError(
                    f"{self.path} holds vectors of embedder {rows.get('embedder')!r} (dim {rows.get('dim')}); "
                    f"it cannot be opened with {self.embedder_name!r} (dim {self.dim}). Open it with the same "
                    "embedder, or create a new store.")
            self._fts_off = fts_retired(self._db)
        self._keep_lexical()  # a store that grew large before the FTS5 table could be retired

    def close(self) -> None:
        with self._lock:
            if self._c.closed:
                return
            if self._checkpoints is not None:
                self._checkpoints.close()
            if self._shared and self._tx is None and self._c.damaged is None and not self.read_only:
                try:
                    if health.scrub_pending(self._db):
                        self._scrub(self.scrub_wait_s)
                    # Keeps the planner's statistics current (cheap when nothing changed much).
                    self._db.execute(f"PRAGMA analysis_limit={ANALYZE_LIMIT}")
                    self._db.execute("PRAGMA optimize")
                except (sqlite3.Error, ZenBrainError):
                    pass
            if self._search is not None:
                self._search.wait_rebuilds()  # they take the index lock: not waited for under it
            with self._index_lock:
                if self._search is not None:
                    try:
                        self._search.close()
                        self._prune_change_log()
                    except (OSError, RuntimeError, ValueError, sqlite3.Error, ZenBrainError):
                        pass  # derived files: the next open rebuilds or replays what they lack
                    self._search = None
                self._c.close(self._reader)
            self._release_open_lock()

    @property
    def closed(self) -> bool:
        return self._c.closed

    @property
    def damaged(self) -> str | None:
        """Why the file is known to be damaged (no further writes), or None."""
        return self._c.damaged

    # -- health ------------------------------------------------------------------------------
    def check(self) -> health.CheckReport:
        """Every integrity check (SQLite's, the FTS index's, the store's own invariants) on
        the file as it is on disk (a connection of its own, no cached pages), inside one
        write transaction that is rolled back: nothing changes under it, nothing is
        written. A damaged file found here gets no further writes."""
        self._c.check_open()
        try:
            conn = connect(self.path, self._c.timeout, uri=self._c.uri) if self._shared else self._db
        except sqlite3.Error as exc:
            raise self._c.fail(exc, "checking it") from exc
        try:
            with self._lock:
                # Read-only: one read transaction, without FTS5's own check (it runs as an INSERT).
                conn.execute("BEGIN" if self.read_only else "BEGIN IMMEDIATE")
                try:
                    report = health.check_connection(conn, self.path, self.embedder_name,
                                                     fts_check=not self.read_only)
                finally:
                    conn.execute("ROLLBACK")
        except sqlite3.DatabaseError as exc:
            report = health.CheckReport(path=self.path, ok=False, problems=[f"cannot check: {exc}"])
        finally:
            if conn is not self._db:
                conn.close()
        if not report.ok and self._c.damaged is None:
            self._c.damaged = report.problems[0]
        return report

    def scrub(self, wait_s: float | None = None) -> bool:
        """Finish scrubbing erased text out of the files, waiting up to ``wait_s`` (default
        ``scrub_wait_s``) for readers of older snapshots. True when no erasure is pending."""
        self._c.check_writable()
        with self._lock:
            if self._tx is not None:
                return False  # inside a transaction: its own erasures are not committed yet
            try:
                if not health.scrub_pending(self._db):
                    return True
                return self._scrub(self.scrub_wait_s if wait_s is None else float(wait_s))
            except TRANSLATED as exc:
                raise self._c.fail(exc, "scrubbing erased text") from exc

    def _scrub(self, wait_s: float) -> bool:
        # Our own checkpoint thread paused: its checkpoint would leave the log busy.
        with self._checkpoints.paused() if self._checkpoints is not None else nullcontext():
            return health.scrub(self._db, wait_s, self._c.busy_ms)

    @property
    def max_lock_wait_s(self) -> float:
        """The longest this store has waited for the write lock (seconds)."""
        return self._c.max_begin_wait

    # -- writes ------------------------------------------------------------------------------
    @contextmanager
    def before_commit(self, hook: CommitHook) -> Iterator[None]:
        """Run ``hook(tx)`` right before each outermost transaction of this thread commits,
        while the block runs: it may write into the transaction, or raise to roll it back
        (an idempotency record, a deadline that has passed)."""
        hooks: list[CommitHook] = self._hooks.__dict__.setdefault("list", [])
        hooks.append(hook)
        try:
            yield
        finally:
            hooks.remove(hook)

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[SQLiteTransaction]:
        """One atomic write. A transaction opened inside another (same thread) joins it:
        everything commits together at the outermost exit, or nothing does.

        ``durable=False`` skips the fsync at commit (WAL, synchronous=NORMAL): the write is
        still atomic and survives a process crash, but a power cut may undo it. Recall uses
        it for access bookkeeping; memories themselves are always written durably."""
        self._c.check_open()
        with self._lock:
            if self._tx is not None:
                yield self._tx
                return
            self._c.check_writable()
            durable = durable or not self._shared  # an in-memory database is never synced
            pending = False
            try:
                if not durable:
                    self._db.execute("PRAGMA synchronous=NORMAL")
                self._c.begin()
                if not self._fts_off:  # another process may have retired it since
                    self._fts_off = fts_retired(self._db)
                tx = self._tx = SQLiteTransaction(self._db, self.lexical_text, self._c.fail,
                                                  model=self.embedder_name, fts=not self._fts_off)
                self._c.tx_thread = threading.get_ident()
                try:
                    yield tx
                    for hook in list(getattr(self._hooks, "list", ())):
                        hook(tx)
                    if tx.touched:
                        self._db.executemany("INSERT INTO changes (user_id, agent_id, memory_id) VALUES (?,?,?)",
                                             tx.logged())
                    if tx.erased:
                        health.mark_scrub_pending(self._db, time.time())
                    pending = health.scrub_pending(self._db)
                    self._db.execute("COMMIT")
                except BaseException as exc:
                    self._c.rollback(exc)
                    raise
                finally:
                    self._tx = None
                    self._c.tx_thread = None
            except TRANSLATED as exc:
                raise self._c.fail(exc, "writing") from exc
            finally:
                if not durable and not self._c.closed:
                    self._db.execute(f"PRAGMA synchronous={self._synchronous}")
            if self._checkpoints is not None:
                self._checkpoints.committed(tx.inserted)
            # Index files saved by an earlier process hold the erased memories too, though
            # nothing has searched them here yet: opened to be scrubbed.
            index_scrub = tx.erased and (self._search is not None or (tx.deleted and self._index_files_exist()))
            try:
                if pending:
                    tx.scrubbed = self._scrub(self.scrub_wait_s if tx.erased else 0.0)
                if tx.inserted:
                    top = _highest_rowid(self._db)
                    self._keep_statistics(top)
                    self._keep_lexical(top)
            except TRANSLATED as exc:
                raise self._c.fail(exc, "scrubbing erased text") from exc
        if index_scrub:
            # Past the write lock, and the index lock only in its steps: rebuilding a large
            # partition's lexical index takes seconds, while writes and searches go on.
            try:
                with self._index_lock:
                    idx = self._index_set()
                idx.scrub(files=tx.deleted)
            except TRANSLATED as exc:
                raise self._c.fail(exc, "scrubbing erased text") from exc

    def _keep_lexical(self, top: int | None = None) -> None:
        """Retire the FTS5 table once the store has held ``lexical_index_min_rows`` memories
        (``top``: its highest rowid, read here when not given): from then on every lexical
        search runs on the index (``lexical_search``), so the table's copy of each text would
        only take space and time."""
        if self._fts_off or self._keep_fts or self.read_only or self._c.damaged is not None:
            return
        with self._lock:
            if (_highest_rowid(self._db) if top is None else top) < self.lexical_index_min_rows:
                return
            self._c.begin()
            try:
                retire_fts(self._db, time.time())
                self._db.execute("COMMIT")
            except BaseException as exc:
                self._c.rollback(exc)
                raise
            self._fts_off = True

    def _keep_statistics(self, rows: int) -> None:
        """ANALYZE (sampled) whenever the memories table has doubled since it last ran (``rows``:
        its highest rowid), so the planner never works from statistics of a much smaller
        table, or from none at all."""
        if rows < ANALYZE_MIN_ROWS or rows < ANALYZE_GROWTH * self._stats_rows:
            return
        self._stats_rows = self._analyzed_rows()
        if rows < ANALYZE_GROWTH * self._stats_rows:
            return  # another connection has analyzed meanwhile
        try:
            self._db.execute(f"PRAGMA analysis_limit={ANALYZE_LIMIT}")
            self._db.execute("ANALYZE")
        except sqlite3.Error:
            return  # statistics only guide the planner: the write itself has committed
        self._stats_rows = rows

    def _analyzed_rows(self) -> int:
        """Memory rows when the planner's statistics were last gathered (0: never)."""
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE name='sqlite_stat1'").fetchone() is None:
            return 0
        row = self._db.execute("SELECT stat FROM sqlite_stat1 WHERE tbl='memories' LIMIT 1").fetchone()
        try:
            return int(str(row[0]).split()[0]) if row is not None else 0
        except (ValueError, IndexError):
            return 0

    def lexical_text(self, item: MemoryItem) -> str:
        """What lexical search indexes of a memory: its index text (the turn with the turns
        before it) or its content, and the words an application put in
        ``metadata["lexical_extra"]``."""
        text = item.index_text or item.content
        extra = item.metadata.get(LEXICAL_EXTRA)
        return text if not extra else f"{text}\n{extra}"

    # -- idempotency records --------------------------------------------------------------
    def request(self, partition: Partition, key: str) -> RequestRecord | None:
        """The write request recorded under an idempotency key (None when there is none)."""
        with self._c.reading("reading a request record") as db:
            row = db.execute("SELECT fingerprint, owner, created_at, memory_ids, status, response FROM requests "
                             "WHERE user_id=? AND agent_id=? AND key=?", (*partition, key)).fetchone()
        if row is None:
            return None
        return RequestRecord(row[0], row[1], row[2], decode(row[3]), row[4], row[5])

    # -- memories ----------------------------------------------------------------------------
    def get(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        ids = list(ids)
        found: dict[str, MemoryItem] = {}
        with self._c.reading("reading memories", snapshot=len(ids) > 500) as db:
            for chunk in iter_chunks(list(dict.fromkeys(ids)), 500):
                marks = ",".join("?" * len(chunk))
                # "+column": look rows up by the primary key, not by the partition index.
                for row in db.execute(
                        f"SELECT {SELECT} FROM memories WHERE +user_id=? AND +agent_id=? AND id IN ({marks})",
                        (*partition, *chunk)):
                    found[row[0]] = item_from_row(row)
        return [found[i] for i in ids if i in found]

    def query(self, partition: Partition, flt: Filter = Filter(), *, order_by: str = "created_at",
              descending: bool = False, limit: int | None = None,
              share: Callable[[MemoryItem], MemoryItem] | None = None) -> list[MemoryItem]:
        convert = item_from_row if share is None else lambda r: share(item_from_row(r))
        return self._query(SELECT, partition, flt, order_by, descending, limit, convert)

    def query_metadata(self, partition: Partition, flt: Filter = Filter(), *, order_by: str = "created_at",
                       descending: bool = False, limit: int | None = None) -> list[tuple[str, dict[str, Any]]]:
        return [(r[0], decode(r[1])) for r in self._query("id, metadata", partition, flt, order_by, descending, limit)]

    def _query(self, columns: str, partition: Partition, flt: Filter, order_by: str, descending: bool,
               limit: int | None, convert: Callable[[Any], Any] | None = None) -> list[Any]:
        """The rows, or each row through ``convert`` as it is read (a large result is then
        never held twice, as rows and as what they become)."""
        if order_by not in ORDERABLE:
            raise StorageError(f"cannot order by {order_by}")
        order = "COALESCE(event_time, created_at)" if order_by == "event_time" else order_by
        # Ties: equally due memories in the order they were stored (rowid), others by id; in
        # a descending order, newest stored first. (last_access DESC with ties by id could
        # not be read off the recently-used index: a batch stored at one instant is a tie
        # group, sorted whole for the 256 most recent - 135 ms at 200k memories.)
        tie = "rowid DESC" if descending else "rowid" if order_by == "due_at" else "id"
        runs = turn_runs(partition, flt)
        with self._c.reading("querying memories", snapshot=runs is not None) as db:
            if runs is not None:  # named turns: looked up run by run, not by a walk of the partition
                lookup, run_args = runs
                rowids = [r[0] for a in run_args for r in db.execute(lookup, a)]
                clause = "rowid IN (SELECT value FROM json_each(?))"
                args: list[Any] = [json.dumps(rowids)]
            else:
                # Given content hashes or ids, rows are looked up by them: planner statistics
                # sampled from a large file can put a partition at a thousand rows, and the
                # planner then walked the whole partition for a batch's thousand hashes
                # (105 ms at 200k memories, twice per store_many).
                clause, args = where(partition, flt, use_indexes=flt.content_hashes is None and flt.ids is None)
            sql = f"SELECT {columns} FROM memories WHERE {clause} ORDER BY {order} {'DESC' if descending else 'ASC'}, {tie}"
            if limit is not None:
                sql += " LIMIT ?"
                args.append(int(limit))
            if convert is not None:
                return [convert(r) for r in db.execute(sql, args)]
            return db.execute(sql, args).fetchall()

    # -- search indexes ----------------------------------------------------------------------
    def _index_files_exist(self) -> bool:
        return self._shared and not self.read_only and os.path.exists(os.path.join(self.path + INDEX_SUFFIX,
                                                                                   "manifest.json"))

    def _index_set(self) -> IndexSet:
        """The search indexes (``zenbrain.index``), opened on first use: files in
        ``<database>.idx`` beside a file database, memory only for ":memory:" and for a
        read-only store (nothing is written beside it)."""
        idx = self._search
        if idx is None:
            source = SQLiteIndexSource(embedder_name=self.embedder_name, db=self._reader)
            on_disk = self._shared and not self.read_only
            idx = self._search = IndexSet(source, self.path + INDEX_SUFFIX if on_disk else None, self._ann,
                                          lock=self._index_lock)
        return idx

    def _search_filter(self, db: sqlite3.Connection, partition: Partition, flt: Filter) -> Filter:
        """``flt`` as the indexes take it: a review's due time is not an index column (it
        changes on every recall), so ``due_before`` becomes the ids SQL finds."""
        if flt.due_before is None:
            return flt
        clause, args = where(partition, Filter(due_before=flt.due_before, all_sessions=True, include_archived=True))
        due = frozenset(r[0] for r in db.execute(f"SELECT id FROM memories WHERE {clause}", args))
        return replace(flt, due_before=None, ids=due if flt.ids is None else due & flt.ids)

    def lexical_search(self, partition: Partition, text: str, k: int, flt: Filter = Filter()) -> list[tuple[str, float]]:
        """BM25 top-k. In a store below ``lexical_index_min_rows`` memories a partition is
        ranked by FTS5 in its rowid range (exact, and the same whatever happened before;
        about half a millisecond there); in a larger one by the tantivy index, whose cost
        follows the query rather than the number of matches (see docs/indexes.md). The
        store's size decides, not the partition's: FTS5's doclists and segments span every
        partition, so a partition of 1,000 memories among 10,000 took 1.3-1.9 ms in FTS5
        and 0.5 ms in tantivy."""
        q = fts_query(text)
        if q is None or k <= 0:
            return []
        with self._indexing("searching text"):
            idx = self._index_set()
            if self._lexical_indexed() or len(idx.partition(partition)) >= self.lexical_index_min_rows:
                return idx.lexical_search(partition, text, int(k), self._search_filter(self._reader, partition, flt))
        with self._c.reading("searching text", snapshot=True) as db:
            return lexical_search(db, partition, q, int(k), flt, partition_number(db, partition))

    def _lexical_indexed(self) -> bool:
        """Whether the store has held ``lexical_index_min_rows`` memories (its highest
        rowid, one index seek; once true it stays so)."""
        if not self._lexical_large:
            self._lexical_large = self._fts_off or _highest_rowid(self._reader) >= self.lexical_index_min_rows
        return self._lexical_large

    def vector_search(self, partition: Partition, query: np.ndarray, k: int, flt: Filter = Filter(), *,
                      per_layer: bool = False) -> list[tuple[str, float]]:
        with self._indexing("searching vectors"):
            return self._index_set().vector_search(partition, query, int(k),
                                                   self._search_filter(self._reader, partition, flt),
                                                   per_layer=per_layer)

    def vectors(self, partition: Partition, ids: Sequence[str]) -> np.ndarray:
        with self._indexing("reading vectors"):
            return self._index_set().partition(partition).vectors(ids)

    def cosines(self, partition: Partition, ids: Sequence[str], queries: np.ndarray) -> np.ndarray:
        with self._indexing("comparing vectors"):
            return self._index_set().partition(partition).cosines(ids, queries)

    def save_indexes(self) -> None:
        """Write the search indexes' files now (a checkpoint; ``close`` does it too), so
        that the next open replays only the changes after this point."""
        with self._indexing("saving search indexes"):
            if self._search is not None:
                self._search.save()
                self._prune_change_log()

    def _prune_change_log(self) -> None:
        """Delete the change log's rows the saved index files no longer need, keeping the
        newest ``change_log_keep`` (CHANGE_LOG_KEEP); the position goes to ``meta`` so a
        reader behind it rebuilds instead of missing changes."""
        saved = None if self._search is None else self._search.persisted_seq()
        if saved is None or self.read_only or self._c.damaged is not None or self._tx is not None:
            return
        latest = int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])
        through = min(saved, latest - self.change_log_keep)
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (CHANGES_PRUNED,)).fetchone()
        if through <= (0 if row is None else int(row[0])):
            return
        with self._lock:
            self._c.begin()
            try:
                self._db.execute("DELETE FROM changes WHERE seq <= ?", (through,))
                self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (CHANGES_PRUNED, str(through)))
                self._db.execute("COMMIT")
            except BaseException as exc:
                self._c.rollback(exc)
                raise

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if model != self.embedder_name:  # the store keeps its own embedder's vectors only
            return out
        with self._c.reading("reading cached vectors") as db:
            for chunk in iter_chunks(list(dict.fromkeys(hashes)), 500):
                keys = {key_blob(h): h for h in chunk}
                marks = ",".join("?" * len(keys))
                for key, blob in db.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", tuple(keys)):
                    out[keys[key]] = blob_vector(blob)
        return out

    # -- graph, history, records -------------------------------------------------------------
    def edges(self, partition: Partition, ids: Iterable[str] | None = None, *, both_ends: bool = False,
              relation: str | None = None, share: Callable[[Edge], Edge] | None = None) -> list[Edge]:
        only, only_args = ("", ()) if relation is None else (" AND relation=?", (relation,))
        with self._c.reading("reading edges", snapshot=True) as db:
            number = partition_number(db, partition)
            if number is None:  # a partition that never wrote has no edges
                return []
            if ids is None:
                return [edge_from_row(r, share) for r in db.execute(
                    f"SELECT {EDGE_COLUMNS} FROM edges WHERE part=?{only} ORDER BY src, dst, relation",
                    (number, *only_args))]
            wanted = list(dict.fromkeys(ids))
            keys = [id_key(i) for i in wanted]
            if both_ends and len(wanted) <= 450:
                marks = ",".join("?" * len(wanted))
                # One primary-key range per src, its dst tested against the list; sorted here, as
                # an ORDER BY dst leads the planner to scan the partition's edges by edges_dst.
                found = [edge_from_row(r, share) for r in db.execute(
                    f"SELECT {EDGE_COLUMNS} FROM edges WHERE part=? AND src IN ({marks}) "
                    f"AND +dst IN ({marks}){only}", (number, *keys, *keys, *only_args))]
                return sorted(found, key=lambda e: (e.dst, e.src, e.relation))
            out: list[Edge] = []
            seen: set[tuple[str, str, str]] = set()
            for chunk in iter_chunks(keys, 400):
                marks = ",".join("?" * len(chunk))
                # Two indexed lookups; an OR across both columns would scan the table. The dst
                # lookup names its index: with statistics from a smaller partition (or a long
                # IN list) the planner scans the whole partition instead (10 ms at 46k edges).
                for table, column in (("edges", "src"), ("edges INDEXED BY edges_dst", "dst")):
                    for r in db.execute(
                            f"SELECT {EDGE_COLUMNS} FROM {table} WHERE part=? AND {column} IN ({marks})"
                            f"{only}", (number, *chunk, *only_args)):
                        e = edge_from_row(r, share)
                        if (e.src, e.dst, e.relation) not in seen:
                            seen.add((e.src, e.dst, e.relation))
                            out.append(e)
        if both_ends:
            keep = set(wanted)
            out = [e for e in out if e.src in keep and e.dst in keep]
        return out

    def history(self, partition: Partition, memory_id: str) -> list[HistoryEvent]:
        # No snapshot needed: a partition's number, once committed, never changes.
        with self._c.reading("reading history") as db:
            number = partition_number(db, partition)
            if number is None:  # a partition that never wrote has no history
                return []
            rows = db.execute("SELECT at, action, detail FROM history WHERE part=? AND memory_id=? ORDER BY seq",
                              (number, id_key(memory_id))).fetchall()
        return [HistoryEvent(memory_id, at, action, decode(detail)) for at, action, detail in rows]

    def kv_get(self, partition: Partition, key: str | None = None, default: Any = None) -> Any:
        with self._c.reading("reading records") as db:
            if key is None:
                return {k: decode(v) for k, v in db.execute(
                    "SELECT key, value FROM kv WHERE user_id=? AND agent_id=? ORDER BY key", partition)}
            row = db.execute("SELECT value FROM kv WHERE user_id=? AND agent_id=? AND key=?",
                                   (*partition, key)).fetchone()
        return default if row is None else decode(row[0])

    def kv_get_many(self, partition: Partition, keys: Iterable[str]) -> dict[str, Any]:
        wanted = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        if not wanted:
            return out
        with self._c.reading("reading records") as db:
            for chunk in iter_chunks(wanted, 500):
                marks = ",".join("?" * len(chunk))
                out.update((k, decode(v)) for k, v in db.execute(
                    f"SELECT key, value FROM kv WHERE user_id=? AND agent_id=? AND key IN ({marks})",
                    (*partition, *chunk)))
        return out

    def sample_ids(self, partition: Partition, k: int, rng: np.random.Generator,
                   exclude: AbstractSet[str] = frozenset()) -> list[str]:
        """Up to ``k`` distinct ids of the partition outside ``exclude``, drawn uniformly with
        ``rng``; all of them (and ``rng`` untouched) when there are no more than ``k``."""
        k = int(k)
        if k <= 0:
            return []
        with self._indexing("sampling memories"):
            index = self._index_set().partition(partition)
            if len(index) > k + len(exclude):
                # From the partition's ids in the vector index, which the caller reads the
                # sample's vectors from: a read of rows by id took 4 ms a store for 1,100
                # memories among 11,000 (and random rowids of the file mostly miss them).
                return index.sample_ids(k, rng, exclude)
            # The index holds a row for every memory of the partition: when all of them are
            # the sample, its ids are the answer (reading them from the table took 1.4 ms
            # for 1,000 memories); order does not matter when nothing is drawn.
            everyone = [i for i in index.pos if i not in exclude]
            if len(everyone) <= k:
                return everyone
        with self._c.reading("sampling memories") as db:
            head = [r[0] for r in db.execute("SELECT id FROM memories WHERE user_id=? AND agent_id=?", partition)]
        ids = [i for i in head if i not in exclude]
        if len(ids) > k:
            pick = rng.choice(len(ids), size=k, replace=False)
            ids = [ids[i] for i in sorted(pick)]
        return ids

    def count(self) -> int:
        with self._c.reading("counting memories") as db:
            return int(db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    def stats(self, partition: Partition | None = None, flt: Filter | None = None) -> StoreStats:
        """Counts for the whole file, or for a partition (what ``flt`` lets a reader see).

        A partition's figures are computed over its own rows only - nothing in them
        depends on another partition (which texts it stored, how large the file is):
        ``cached_embeddings`` counts the distinct vectors its memories use, ``stored_bytes``
        the bytes of its memories' text, metadata, state and vectors. ``file_bytes`` (the
        database file and its WAL) is reported for the whole file only."""
        if partition is not None:
            flt = Filter(**{**(flt or Filter(all_sessions=True, contexts=None)).__dict__, "include_archived": True})
            clause, args = where(partition, flt)
        else:
            clause, args = "1=1", []
        s = StoreStats()
        with self._c.reading("counting memories", snapshot=True) as db:
            for layer, archived, n in db.execute(
                    f"SELECT layer, archived, COUNT(*) FROM memories WHERE {clause} GROUP BY layer, archived", args):
                s.memories += n
                if archived:
                    s.archived += n
                s.by_layer[layer] = s.by_layer.get(layer, 0) + n
            for context, n in db.execute(
                    f"SELECT context, COUNT(*) FROM memories WHERE {clause} GROUP BY context", args):
                s.by_context[context] = n
            if partition is None:
                s.edges = db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
                s.cached_embeddings = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            else:
                number = partition_number(db, partition)
                s.edges = 0 if number is None else db.execute(
                    f"SELECT COUNT(*) FROM edges WHERE part=? "
                    f"AND src IN (SELECT zb_id(id) FROM memories WHERE {clause})", [number, *args]).fetchone()[0]
                vectors, text_bytes = db.execute(
                    f"SELECT COUNT(DISTINCT {VECTOR_KEY}), COALESCE(SUM(length(CAST(content AS BLOB)) "
                    f"+ length(metadata) + length(state)), 0) FROM memories WHERE {clause}", args).fetchone()
                s.cached_embeddings = int(vectors)
                s.stored_bytes = int(text_bytes) + int(vectors) * self.dim * 2  # float16 vectors
        if self._shared and partition is None:
            s.file_bytes = sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))
        return s

    def partitions(self) -> list[Partition]:
        """Every (user, agent) with memories, for maintenance tools."""
        with self._c.reading("listing partitions") as db:
            return [(u, a) for u, a in db.execute("SELECT DISTINCT user_id, agent_id FROM memories ORDER BY 1, 2")]

    def raw_connection(self) -> sqlite3.Connection:
        """For tests and maintenance tools only."""
        return self._db

    @contextmanager
    def _indexing(self, doing: str) -> Iterator[None]:
        """The vector indexes are built and synced under their own lock (not the writer's:
        a search runs beside a write), with failures translated."""
        self._c.check_open()
        with self._index_lock:
            try:
                yield
            except TRANSLATED as exc:
                raise self._c.fail(exc, doing) from exc
