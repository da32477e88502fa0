"""The PostgreSQL store: for many users served by several processes or machines.

* Connections come from a psycopg 3 pool; reads run in autocommit, each operation's writes
  in one transaction (``PostgresTransaction``), writers of one partition one at a time.
* Metadata, state, history details and records are JSONB; vectors are pgvector columns,
  searched exactly in small partitions and through a partial HNSW index per large
  partition (``vectors``); lexical search is BM25 over per-partition term statistics
  (``lexical``).
* The schema lives in the connection's current schema and is created and upgraded by
  ordered migrations (``migrations``).
* Erasure: an erased memory leaves every table and index in its transaction (no query
  finds it). Its bytes leave the data files only when the pages that held them are
  rewritten: PostgreSQL has no secure delete, and every update of a row leaves a stale
  copy in its page's free space that VACUUM does not clear. So a memory's text lives in
  ``memory_texts``, written only when the text changes, apart from the columns recall and
  the lifecycle update all the time; the text tables (``memory_texts``, ``history``,
  ``kv``, ``requests``) have no vectors and no vector or GIN index, and are split into
  hash partitions by user. ``erase="full"`` (the default) rewrites (VACUUM FULL) the
  text tables' partitions of the erased user after the commit: the text is gone from the
  data files when forget() returns; those partitions are locked meanwhile, for a time
  proportional to their size. The other tables it touched are vacuumed. A rewrite keeps
  the rows a transaction older than the erasure may still see, so it waits
  (``scrub_wait_s``) for such transactions to end; if one outlives the wait the scrub
  stays *pending* (``Transaction.scrubbed`` is False, a mark per user in ``meta``) and
  the next write, open or close of any handle finishes it. ``erase="vacuum"`` only vacuums and
  ``erase="none"`` leaves it to autovacuum (no lock; the text stays pending until
  ``scrub()``, run on a schedule). Lexical terms are stored as keyed hashes, so a GIN
  index (which never drops a key) keeps no word of an erased memory.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigError, StorageError
from ...model import Edge, HistoryEvent, Kind, Layer, MemoryItem
from ...vecmath import row_cosines
from ..base import ORDERABLE, Filter, Partition, StoreStats
from ..records import EDGE_FIELDS, MEMORY_FIELDS
from . import lexical, vectors
from .filters import where
from .health import DatabaseHealth, check_database
from .migrations import MIGRATIONS, TEXT_PARTITIONS, partition_name
from .transaction import SCRUB_PENDING, TEXT_FIELDS, TEXT_TABLES, PostgresTransaction

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from psycopg_pool import ConnectionPool
except ImportError as _exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f'the PostgreSQL store needs psycopg, psycopg_pool and pgvector ({_exc}): '
                      'pip install "zenbrain[postgres]"') from _exc

# Planner statistics: gathered again once this handle has inserted as many rows as the
# table had at the last analysis (and at least ANALYZE_MIN_ROWS), so that the planner never
# plans a large table from the statistics of a small one (autovacuum would, within a minute).
# A table never analysed is analysed at once: without statistics the planner reads a
# memory by scanning its whole partition instead of the primary key, so that every store
# of a growing partition costs time in proportion to its size.
ANALYZE_MIN_ROWS = 500
SAMPLE_ROUNDS = 4  # rounds of random draws a large partition's sample may take before all its ids are read
_SELECT = ",".join(f"t.{c}" if c in TEXT_FIELDS else f"m.{c}" for c in MEMORY_FIELDS)
_FROM = "memories m JOIN memory_texts t ON t.user_id = m.user_id AND t.id = m.id"
_LAYER = MEMORY_FIELDS.index("layer")
_KIND = MEMORY_FIELDS.index("kind")
_VECTOR_KEY = MEMORY_FIELDS.index("vector_key")
_HASH = MEMORY_FIELDS.index("content_hash")
_MIGRATION_LOCK = "zenbrain:migrations"
ERASE_MODES = ("full", "vacuum", "none")
DURABILITY = {"full": "on", "process": "off"}  # durability -> synchronous_commit
SCRUB_WAIT_S = 2.0  # how long a scrub waits for transactions older than the erasure
_TABLES = ("memories", "memory_texts", "embeddings", "edges", "history", "kv", "requests", "lexical_terms",
           "lexical_docs", "vector_indexes", "meta", "schema_migrations")
# Transactions (of this database, or standbys and slots of the cluster) whose snapshots may
# still see rows that transaction %s deleted: a table rewrite must keep those rows for them.
# A session whose database is not shown (a standby's sender, or hidden from this role) counts.
_OLDER_READERS = (
    "SELECT (SELECT COUNT(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
    "AND (datname = current_database() OR datname IS NULL) "
    "AND (age(backend_xmin) >= age(x.id) OR age(backend_xid) >= age(x.id))) "
    "+ (SELECT COUNT(*) FROM pg_prepared_xacts WHERE database = current_database() AND age(transaction) >= age(x.id)) "
    "+ (SELECT COUNT(*) FROM pg_replication_slots WHERE age(xmin) >= age(x.id)) "
    "FROM (SELECT (%s::bigint %% 4294967296)::text::xid AS id) x"
)
CommitHook = Callable[[PostgresTransaction], None]


@dataclass(frozen=True)
class RequestRecord:
    """A write request recorded under its idempotency key (see ``PostgresStore.request``)."""

    fingerprint: str
    owner: str
    created_at: float
    memory_ids: list[str]
    status: int | None
    response: str | None


def item_from_row(row: Sequence[Any]) -> MemoryItem:
    vals = list(row)
    vals[_LAYER] = Layer(vals[_LAYER])
    vals[_KIND] = Kind(vals[_KIND])
    if vals[_VECTOR_KEY] == vals[_HASH]:
        vals[_VECTOR_KEY] = None  # the vector is its content's: the default
    return MemoryItem(*vals)


def _storage_error(what: str, exc: Exception) -> StorageError:
    return StorageError(f"{what}: {type(exc).__name__}: {str(exc).strip()}")


class PostgresStore:
    """A zenbrain store in a PostgreSQL database (with the pgvector extension). Safe to use
    from several threads, processes and machines at once."""

    def __init__(self, url: str, *, embedder_name: str, dim: int, timeout: float = 30.0, pool_size: int = 8,
                 hnsw_min_rows: int = vectors.HNSW_MIN_ROWS, erase: str = "full", scrub_wait_s: float = SCRUB_WAIT_S,
                 durability: str = "full") -> None:
        if erase not in ERASE_MODES:
            raise ConfigError(f"erase must be one of {', '.join(ERASE_MODES)}, got {erase!r}")
        if durability not in DURABILITY:
            raise ConfigError(f"durability must be 'full' or 'process', got {durability!r}")
        self.url = url
        self.path = url  # what tools print as the store's location
        self.embedder_name = embedder_name
        self.dim = int(dim)
        self.timeout = float(timeout)
        self.erase = erase
        self.scrub_wait_s = float(scrub_wait_s)
        self._synchronous_commit = DURABILITY[durability]
        self._local = threading.local()
        self._hooks = threading.local()  # this thread's before-commit hooks
        self._inserted = 0  # memory rows this handle inserted since the planner's statistics were gathered
        self._analyzed_rows = -1  # rows at the last analysis (-1: read when first needed)
        self._pool: ConnectionPool | None = None
        try:
            with self._connect() as conn:
                self._migrate(conn)
                self._check_meta(conn)
                if self.erase == "full":
                    self._finish_pending_scrub(conn, 0.0)
        except psycopg.Error as exc:
            raise _storage_error(f"cannot open the PostgreSQL store at {_safe(url)}", exc) from exc
        self._pool = ConnectionPool(url, min_size=1, max_size=max(1, int(pool_size)), timeout=self.timeout,
                                    configure=self._configure, kwargs={"autocommit": True}, open=False)
        try:
            self._pool.open(wait=True, timeout=self.timeout)
        except Exception as exc:
            self._pool.close()
            raise _storage_error(f"cannot open a connection pool to {_safe(url)}", exc) from exc
        self.indexes = vectors.PartitionIndexes(self._connect, self.dim, int(hnsw_min_rows))

    # -- connections -------------------------------------------------------------------
    def _configure(self, conn: Any) -> None:
        conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        conn.execute(f"SET synchronous_commit = {self._synchronous_commit}")
        conn.execute(f"SET hnsw.ef_search = {vectors.EF_SEARCH}")
        register_vector(conn)

    def _connect(self) -> Any:
        """A new autocommit connection outside the pool (migrations, index builds, vacuum)."""
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, int(self.timeout)))
        try:
            conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
            if conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone() is not None:
                register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """The connection of this thread's open transaction (reads see its writes), else a
        pooled one; database errors become StorageError."""
        conn = getattr(self._local, "conn", None)
        try:
            if conn is not None:
                yield conn
                return
            assert self._pool is not None
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise _storage_error("a PostgreSQL read failed", exc) from exc
        except TimeoutError as exc:
            raise StorageError(f"no PostgreSQL connection free within {self.timeout} s") from exc

    # -- opening and closing -------------------------------------------------------------
    def _migrate(self, conn: Any) -> None:
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s || current_schema(), 0))",
                             (_MIGRATION_LOCK,))
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                             "(version INTEGER PRIMARY KEY, name TEXT NOT NULL)")
                done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
                unknown = done - {name for name, _ in MIGRATIONS}
                if unknown:
                    raise StorageError(f"{_safe(self.url)} was written by a newer zenbrain (migrations "
                                       f"{sorted(unknown)}); upgrade zenbrain")
                for version, (name, script) in enumerate(MIGRATIONS, start=1):
                    if name not in done:
                        conn.execute(script)
                        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
        except psycopg.Error as exc:
            raise _storage_error(f"{_safe(self.url)} is not a usable zenbrain store", exc) from exc

    def _check_meta(self, conn: Any) -> None:
        with conn.transaction():
            conn.execute("INSERT INTO meta (key, value) VALUES ('embedder', %s), ('dim', %s), ('term_key', %s) "
                         "ON CONFLICT DO NOTHING", (self.embedder_name, str(self.dim), secrets.token_hex(32)))
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        self._terms = lexical.TermHasher(bytes.fromhex(rows["term_key"]))
        if rows.get("embedder") != self.embedder_name or int(rows.get("dim", -1)) != self.dim:
            raise ConfigError(
                f"{_safe(self.url)} holds vectors of embedder {rows.get('embedder')!r} (dim {rows.get('dim')}); "
                f"it cannot be opened with {self.embedder_name!r} (dim {self.dim}). Open it with the same "
                "embedder, or create a new store.")

    def close(self) -> None:
        if self._pool is None:
            return
        self.indexes.wait(timeout=self.timeout)
        if self.erase == "full":
            try:
                with self._pool.connection(timeout=self.timeout) as conn:
                    self._finish_pending_scrub(conn, self.scrub_wait_s)
            except (psycopg.Error, TimeoutError):
                pass  # the next open or write finishes it
        self._pool.close()
        self._pool = None

    def health(self) -> DatabaseHealth:
        """Whether the database answers (on a connection of its own, never waiting for the
        pool), its migration version, and the pool's state (``/health``, ``zenbrain check``)."""
        out = check_database(self.url, timeout_s=min(self.timeout, 5.0))
        if self._pool is None:
            out.ok, out.problem = False, "the store is closed"
            return out
        stats = self._pool.get_stats()
        out.pool = {"size": stats.get("pool_size", 0), "available": stats.get("pool_available", 0),
                    "max": stats.get("pool_max", 0), "waiting": stats.get("requests_waiting", 0)}
        return out

    def wait_for_indexes(self, timeout: float | None = None) -> None:
        """Wait for the HNSW index builds this handle started (tools and tests)."""
        self.indexes.wait(timeout)

    # -- writes --------------------------------------------------------------------------
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
    def transaction(self, *, durable: bool = True) -> Iterator[PostgresTransaction]:
        """One atomic write. A transaction opened inside another (same thread) joins it.
        ``durable=False`` commits without waiting for the WAL flush (still atomic; a crash
        of the server may lose it). After the commit, ``tx.scrubbed`` tells whether erased
        text has left the data files (None: nothing was erased)."""
        current = getattr(self._local, "tx", None)
        if current is not None:
            yield current
            return
        if self._pool is None:
            raise StorageError("the store is closed")
        try:
            with self._pool.connection() as conn:
                self._local.conn = conn
                try:
                    # Pipeline mode: statements whose results the transaction does not read
                    # (its updates, inserts, locks) are sent without waiting, and go with the
                    # next read or the COMMIT: a recall's bookkeeping is one round trip.
                    with conn.transaction(), conn.pipeline() as pipeline:
                        if not durable:
                            conn.execute("SET LOCAL synchronous_commit = off")
                        tx = self._local.tx = PostgresTransaction(conn, self.embedder_name, self._terms, pipeline)
                        yield tx
                        for hook in list(getattr(self._hooks, "list", ())):
                            hook(tx)
                        tx.finish()
                finally:
                    self._local.tx = None
                    self._local.conn = None
                if tx.dropped_indexes:
                    self.indexes.drop(conn, tx.dropped_indexes)
                if tx.erased or tx.pending_seen:
                    self._after_commit_scrub(conn, tx)
                if tx.grown:
                    self._keep_statistics(conn, tx.inserted)
                    self.indexes.grown(conn, tx.grown)
        except psycopg.Error as exc:
            raise _storage_error("a PostgreSQL write failed (nothing was written)", exc) from exc
        except TimeoutError as exc:
            raise StorageError(f"no PostgreSQL connection free within {self.timeout} s") from exc

    def _keep_statistics(self, conn: Any, inserted: int) -> None:
        self._inserted += inserted
        if self._inserted < ANALYZE_MIN_ROWS:
            return
        if self._analyzed_rows < 0:  # reltuples is -1 until the table was first analysed
            self._analyzed_rows = max(0, int(conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass").fetchone()[0]))
        if self._inserted >= self._analyzed_rows:
            conn.execute("ANALYZE memories, memory_texts")  # a memory is read from both, joined
            self._analyzed_rows += self._inserted
            self._inserted = 0

    def _after_commit_scrub(self, conn: Any, tx: PostgresTransaction) -> None:
        """After a commit: vacuum what an erasure touched, and with ``erase="full"`` rewrite
        the text tables' partitions of the users whose text it erased or overwrote (or of
        users another transaction left pending). All text tables: earlier versions of rows
        the erasure did not delete may quote the erased text too (a record rewritten
        without it, a debate log updated before)."""
        text = bool(tx.erased & TEXT_TABLES)
        if self.erase == "none":
            tx.scrubbed = False if text else None
            return
        if tx.erased - TEXT_TABLES:
            self._vacuum(conn, tx.erased - TEXT_TABLES, full=False)
        if self.erase == "vacuum":
            if text:
                self._vacuum(conn, self._text_partitions(conn, tx.text_users), full=False)
                tx.scrubbed = False
            return
        if text or tx.pending_seen:
            done = self._finish_pending_scrub(conn, self.scrub_wait_s if text else 0.0)
            if text:
                tx.scrubbed = done

    def _text_partitions(self, conn: Any, users: Iterable[str]) -> list[str]:
        """The partitions of the text tables that hold these users' rows."""
        remainders = [r for (r,) in conn.execute(
            "SELECT DISTINCT r FROM unnest(%s::text[]) u, generate_series(0, %s - 1) r "
            "WHERE satisfies_hash_partition('memory_texts'::regclass, %s, r, u) ORDER BY r",
            (sorted(users), TEXT_PARTITIONS, TEXT_PARTITIONS))]
        return [partition_name(t, r) for t in sorted(TEXT_TABLES) for r in remainders]

    def _pending(self, conn: Any) -> dict[str, int]:
        """The pending scrubs: mark key -> the newest transaction it waits for."""
        return {k: int(v) for k, v in conn.execute("SELECT key, value FROM meta WHERE key LIKE %s",
                                                    (SCRUB_PENDING + "%",))}

    def _finish_pending_scrub(self, conn: Any, wait_s: float) -> bool:
        """Rewrite the text partitions of every user with a pending scrub; True when none
        is left pending."""
        marks = self._pending(conn)
        if not marks:
            return True
        users = [k[len(SCRUB_PENDING):] for k in marks]
        xid = max(marks.values())
        if not self._rewrite(conn, self._text_partitions(conn, users), xid, wait_s):
            return False
        # A mark that a later erasure raised meanwhile stays: its transaction was not covered.
        conn.execute("DELETE FROM meta WHERE key = ANY(%s) AND value::bigint <= %s", (sorted(marks), xid))
        return True

    def _rewrite(self, conn: Any, tables: Iterable[str], xid: int, wait_s: float) -> bool:
        """VACUUM FULL ``tables`` once no transaction that may see the rows transaction
        ``xid`` (or an earlier one) erased is left (a rewrite keeps rows for them), waiting
        up to ``wait_s``. False when such a transaction outlived the wait or held a lock on
        a table past it."""
        deadline = time.monotonic() + wait_s
        while conn.execute(_OLDER_READERS, (xid,)).fetchone()[0]:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        wait_ms = max(100, int((deadline - time.monotonic()) * 1000))
        try:
            conn.execute(f"SET lock_timeout = {wait_ms}")
            self._vacuum(conn, tables, full=True)
        except psycopg.errors.LockNotAvailable:
            return False
        finally:
            conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        return True

    def _vacuum(self, conn: Any, tables: Iterable[str], *, full: bool) -> None:
        names = sql.SQL(", ").join(sql.Identifier(t) for t in sorted(tables))
        conn.execute(sql.SQL("VACUUM (FULL) {}" if full else "VACUUM (INDEX_CLEANUP ON) {}").format(names))

    def scrub(self, wait_s: float | None = None) -> bool:
        """Rewrite every table (VACUUM FULL), so nothing erased or overwritten lingers in
        their data files, waiting up to ``wait_s`` (default ``scrub_wait_s``) for
        transactions older than the last erasure; exclusive locks on the tables while it
        runs. True when no erasure is left pending."""
        if self._pool is None:
            raise StorageError("the store is closed")
        wait = self.scrub_wait_s if wait_s is None else float(wait_s)
        tables = sorted(TEXT_TABLES | {"memories", "edges", "embeddings", "lexical_terms"})
        try:
            with self._pool.connection() as conn:
                marks = self._pending(conn)
                row = conn.execute("SELECT txid_current()").fetchone()  # whatever lingers was written before now
                assert row is not None
                xid = max([int(row[0]), *marks.values()])
                if not self._rewrite(conn, tables, xid, wait):
                    return False
                conn.execute("DELETE FROM meta WHERE key = ANY(%s) AND value::bigint <= %s", (sorted(marks), xid))
                return True
        except psycopg.Error as exc:
            raise _storage_error("scrubbing the PostgreSQL store failed", exc) from exc

    # -- idempotency records -------------------------------------------------------------
    def request(self, partition: Partition, key: str) -> RequestRecord | None:
        """The write request recorded under an idempotency key (None when there is none)."""
        with self._reading() as conn:
            row = conn.execute("SELECT fingerprint, owner, created_at, memory_ids, status, response FROM requests "
                               "WHERE user_id = %s AND agent_id = %s AND key = %s", (*partition, key)).fetchone()
        return None if row is None else RequestRecord(row[0], row[1], row[2], list(row[3]), row[4], row[5])

    # -- memories ------------------------------------------------------------------------
    def get(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        ids = list(ids)
        if not ids:
            return []
        with self._reading() as conn:
            rows = conn.execute(f"SELECT {_SELECT} FROM {_FROM} WHERE m.user_id = %s AND m.agent_id = %s "
                                "AND m.id = ANY(%s)", (*partition, list(dict.fromkeys(ids)))).fetchall()
        found = {r[0]: item_from_row(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def query(self, partition: Partition, flt: Filter = Filter(), *, order_by: str = "created_at",
              descending: bool = False, limit: int | None = None,
              share: Callable[[MemoryItem], MemoryItem] | None = None) -> list[MemoryItem]:
        rows = self._query(_SELECT, partition, flt, order_by, descending, limit)
        if share is not None:
            return [share(item_from_row(r)) for r in rows]
        return [item_from_row(r) for r in rows]

    def query_metadata(self, partition: Partition, flt: Filter = Filter(), *, order_by: str = "created_at",
                       descending: bool = False, limit: int | None = None) -> list[tuple[str, dict[str, Any]]]:
        return [(r[0], r[1]) for r in self._query("m.id, t.metadata", partition, flt, order_by, descending, limit)]

    def _query(self, columns: str, partition: Partition, flt: Filter, order_by: str, descending: bool,
               limit: int | None) -> list[tuple[Any, ...]]:
        if order_by not in ORDERABLE:
            raise StorageError(f"cannot order by {order_by}")
        clause, args = where(partition, flt)
        order = "COALESCE(m.event_time, m.created_at)" if order_by == "event_time" else f"m.{order_by}"
        tie = "m.seq DESC" if descending else "m.seq" if order_by == "due_at" else "m.id"  # as SQLite's
        direction = "DESC" if descending else "ASC"
        stmt = f"SELECT {columns} FROM {_FROM} WHERE {clause} ORDER BY {order} {direction}, {tie}"
        if limit is not None:
            stmt += " LIMIT %s"
            args.append(int(limit))
        with self._reading() as conn:
            return conn.execute(stmt, args).fetchall()

    def lexical_search(self, partition: Partition, text: str, k: int, flt: Filter = Filter()) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        with self._reading() as conn:
            return lexical.search(conn, self._terms, partition, text, int(k), flt)

    # -- vectors -------------------------------------------------------------------------
    def vector_search(self, partition: Partition, query: np.ndarray, k: int, flt: Filter = Filter(), *,
                      per_layer: bool = False) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        with self._reading() as conn:
            if self.indexes.has_index(conn, partition):
                if not per_layer:
                    found = vectors.approximate(conn, partition, q, k, flt, self.dim)
                    if found is not None:
                        return found
                else:
                    return vectors.approximate_per_layer(conn, partition, q, k, flt, self.dim)
            return vectors.exact(conn, partition, q, k, flt, per_layer=per_layer)

    def vectors(self, partition: Partition, ids: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        if not ids:
            return out
        with self._reading() as conn:
            found = dict(conn.execute("SELECT id, embedding FROM memories WHERE user_id = %s AND agent_id = %s "
                                      "AND id = ANY(%s) AND embedding IS NOT NULL",
                                      (*partition, list(dict.fromkeys(ids))), binary=True).fetchall())
        for i, mid in enumerate(ids):
            v = found.get(mid)
            if v is not None:
                out[i] = _array(v)
        return out

    def cosines(self, partition: Partition, ids: Sequence[str], queries: np.ndarray) -> np.ndarray:
        return row_cosines(np.asarray(queries, dtype=np.float32), self.vectors(partition, ids))

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes or model != self.embedder_name:  # the store keeps its own embedder's vectors only
            return {}
        with self._reading() as conn:
            rows = conn.execute("SELECT hash, vector FROM embeddings WHERE model = %s AND hash = ANY(%s)",
                                (model, list(dict.fromkeys(hashes))), binary=True).fetchall()
        return {h: _array(v) for h, v in rows}

    # -- graph, history, records ---------------------------------------------------------
    def edges(self, partition: Partition, ids: Iterable[str] | None = None, *, both_ends: bool = False,
              relation: str | None = None, share: Callable[[Edge], Edge] | None = None) -> list[Edge]:
        cols = ", ".join(EDGE_FIELDS)
        only, only_args = ("", ()) if relation is None else (" AND relation = %s", (relation,))
        with self._reading() as conn:
            if ids is None:
                rows = conn.execute(f"SELECT {cols} FROM edges WHERE user_id = %s AND agent_id = %s{only} "
                                    "ORDER BY src, dst, relation", (*partition, *only_args)).fetchall()
            else:
                wanted = list(dict.fromkeys(ids))
                if not wanted:
                    return []
                if both_ends:
                    rows = conn.execute(f"SELECT {cols} FROM edges WHERE user_id = %s AND agent_id = %s "
                                        f"AND src = ANY(%s) AND dst = ANY(%s){only} ORDER BY dst, src, relation",
                                        (*partition, wanted, wanted, *only_args)).fetchall()
                else:
                    rows = conn.execute(
                        f"SELECT {cols} FROM edges WHERE user_id = %s AND agent_id = %s AND src = ANY(%s){only} UNION "
                        f"SELECT {cols} FROM edges WHERE user_id = %s AND agent_id = %s AND dst = ANY(%s){only} "
                        "ORDER BY src, dst, relation",
                        (*partition, wanted, *only_args, *partition, wanted, *only_args)).fetchall()
        if share is not None:
            return [share(Edge(*r)) for r in rows]
        return [Edge(*r) for r in rows]

    def history(self, partition: Partition, memory_id: str) -> list[HistoryEvent]:
        with self._reading() as conn:
            rows = conn.execute("SELECT memory_id, at, action, detail FROM history WHERE user_id = %s "
                                "AND agent_id = %s AND memory_id = %s ORDER BY seq", (*partition, memory_id)).fetchall()
        return [HistoryEvent(*r) for r in rows]

    def kv_get(self, partition: Partition, key: str | None = None, default: Any = None) -> Any:
        with self._reading() as conn:
            if key is None:
                return dict(conn.execute("SELECT key, value FROM kv WHERE user_id = %s AND agent_id = %s "
                                         "ORDER BY key", partition).fetchall())
            row = conn.execute("SELECT value FROM kv WHERE user_id = %s AND agent_id = %s AND key = %s",
                               (*partition, key)).fetchone()
        return default if row is None else row[0]

    def kv_get_many(self, partition: Partition, keys: Iterable[str]) -> dict[str, Any]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._reading() as conn:
            return dict(conn.execute("SELECT key, value FROM kv WHERE user_id = %s AND agent_id = %s "
                                     "AND key = ANY(%s)", (*partition, wanted)).fetchall())

    def sample_ids(self, partition: Partition, k: int, rng: np.random.Generator,
                   exclude: AbstractSet[str] = frozenset()) -> list[str]:
        """Up to ``k`` distinct ids of the partition outside ``exclude``, drawn uniformly with
        ``rng``; all of them (and ``rng`` untouched) when there are no more than ``k``. A
        large partition is sampled by random draws of the storage order (``seq``)."""
        k = int(k)
        if k <= 0:
            return []
        limit = k + len(exclude) + 1
        with self._reading() as conn:
            head = [r[0] for r in conn.execute("SELECT id FROM memories WHERE user_id = %s AND agent_id = %s "
                                               "ORDER BY seq LIMIT %s", (*partition, limit))]
            if len(head) == limit:
                picked = self._sample_by_seq(conn, partition, k, rng, exclude)
                if picked is not None:
                    return picked
                head = [r[0] for r in conn.execute("SELECT id FROM memories WHERE user_id = %s AND agent_id = %s "
                                                   "ORDER BY seq", partition)]
        ids = [i for i in head if i not in exclude]
        if len(ids) > k:
            pick = rng.choice(len(ids), size=k, replace=False)
            ids = [ids[i] for i in sorted(pick)]
        return ids

    def _sample_by_seq(self, conn: Any, partition: Partition, k: int, rng: np.random.Generator,
                       exclude: AbstractSet[str]) -> list[str] | None:
        top = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0]
        found: dict[int, str] = {}
        for _ in range(SAMPLE_ROUNDS):
            need = k - len(found)
            draws = [d for d in np.unique(rng.integers(1, top + 1, size=2 * need + 16)).tolist() if d not in found]
            for seq, mid in conn.execute("SELECT seq, id FROM memories WHERE seq = ANY(%s) AND user_id = %s "
                                         "AND agent_id = %s", (draws, *partition)):
                if mid not in exclude:
                    found[seq] = mid
            if len(found) >= k:
                keep = sorted(found)
                pick = sorted(rng.choice(len(keep), size=k, replace=False).tolist())
                return [found[keep[i]] for i in pick]
        return None

    def count(self) -> int:
        with self._reading() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    def stats(self, partition: Partition | None = None, flt: Filter | None = None) -> StoreStats:
        """Counts for the whole store, a partition, or what a filter lets a reader see."""
        if partition is not None:
            flt = Filter(**{**(flt or Filter(all_sessions=True, contexts=None)).__dict__, "include_archived": True})
            clause, args = where(partition, flt)
        else:
            clause, args = "TRUE", []
        s = StoreStats()
        with self._reading() as conn:
            for layer, archived, n in conn.execute(
                    f"SELECT layer, archived, COUNT(*) FROM memories m WHERE {clause} GROUP BY layer, archived", args):
                s.memories += n
                if archived:
                    s.archived += n
                s.by_layer[layer] = s.by_layer.get(layer, 0) + n
            for context, n in conn.execute(
                    f"SELECT context, COUNT(*) FROM memories m WHERE {clause} GROUP BY context", args):
                s.by_context[context] = n
            if partition is None:
                s.edges = conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
                s.cached_embeddings = conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
                s.file_bytes = int(conn.execute(
                    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND (c.relname = ANY(%s) "
                    "OR c.relispartition AND split_part(c.relname, '_p', 1) = ANY(%s))",
                    (list(_TABLES), sorted(TEXT_TABLES))).fetchone()[0])
            else:
                s.edges = conn.execute(
                    f"SELECT COUNT(*) FROM edges WHERE user_id = %s AND agent_id = %s "
                    f"AND src IN (SELECT m.id FROM memories m WHERE {clause})", [*partition, *args]).fetchone()[0]
                # Over the partition's own rows only: nothing here depends on another partition.
                vecs, text_bytes = conn.execute(
                    f"SELECT COUNT(DISTINCT m.vector_key), COALESCE(SUM(octet_length(t.content) "
                    f"+ octet_length(t.metadata::text) + octet_length(m.state::text)), 0) "
                    f"FROM {_FROM} WHERE {clause}", args).fetchone()
                s.cached_embeddings = int(vecs)
                s.stored_bytes = int(text_bytes) + int(vecs) * self.dim * 4
        return s

    def partitions(self) -> list[Partition]:
        """Every (user, agent) with memories, for maintenance tools."""
        with self._reading() as conn:
            return [(u, a) for u, a in conn.execute("SELECT DISTINCT user_id, agent_id FROM memories ORDER BY 1, 2")]


def _array(value: Any) -> np.ndarray:
    """A pgvector value as float32 numpy."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(url)
    except psycopg.Error:
        return "the PostgreSQL database"
    host = info.get("host") or "localhost"
    return f"postgresql://{info.get('user') or ''}@{host}/{info.get('dbname') or ''}"
