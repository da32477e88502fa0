"""Dense search on PostgreSQL with pgvector: exact below a size per partition, HNSW above.

pgvector 0.6 has no iterative index scans: an HNSW scan yields its ``ef_search`` nearest
rows and a filter applied after it may leave fewer than k (a filter keeping 1% of the
rows returns about 0.3 of 10). So:

* a partition below ``hnsw_min_rows`` memories is searched exactly (its rows found by the
  partition index, every vector compared: a few milliseconds at 5k rows);
* a partition that grows past it gets an HNSW index of its own, a *partial* index whose
  predicate is the partition (``WHERE user_id = ... AND agent_id = ...``), built
  concurrently in the background; until it is valid the search stays exact;
* a search through that index asks for more than k neighbours (``ef_search``), and when
  the filter leaves fewer than k of them it is answered exactly over the rows the filter
  admits (few rows, else the index would have found k).

Scores are inner products, as in the SQLite store (vectors are unit length).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from psycopg import sql

from ...model import Layer
from ..base import Filter, Partition
from .filters import where

log = logging.getLogger(__name__)

# Exact search reads every vector of the partition: ~8 ms at 5k rows here, ~32 ms at 20k
# (an HNSW search ~4 ms): partitions from this size on get an index.
HNSW_MIN_ROWS = 5_000
EF_SEARCH = 100  # the session's ef_search: enough for k up to EF_SEARCH // EF_SEARCH_FACTOR
EF_SEARCH_FACTOR = 4
NEGATIVE_TTL = 30.0  # seconds an "is there an index?" answer of no is trusted
_LAYER_ORDER = [layer.value for layer in Layer]


def index_name(partition: Partition) -> str:
    digest = hashlib.sha256("\x1f".join(partition).encode("utf-8")).hexdigest()[:20]
    return f"memories_hnsw_{digest}"


def exact(conn: Any, partition: Partition, query: np.ndarray, k: int, flt: Filter, *,
          per_layer: bool) -> list[tuple[str, float]]:
    clause, args = where(partition, flt)
    if not per_layer:
        rows = conn.execute(
            f"SELECT id, -d FROM (SELECT m.id, m.seq, m.embedding <#> %s AS d FROM memories m "
            f"WHERE {clause} AND m.embedding IS NOT NULL) t ORDER BY d, seq LIMIT %s",
            (query, *args, int(k))).fetchall()
        return [(mid, float(s)) for mid, s in rows]
    return [(mid, s) for mid, _, s in _exact_per_layer(conn, partition, query, k, flt)]


def _exact_per_layer(conn: Any, partition: Partition, query: np.ndarray, k: int,
                     flt: Filter) -> list[tuple[str, str, float]]:
    """(id, layer, score): the exact top-k of every layer, layers in their order."""
    clause, args = where(partition, flt)
    rows = conn.execute(
        f"SELECT id, layer, -d FROM (SELECT m.id, m.layer, d, "
        f"row_number() OVER (PARTITION BY m.layer ORDER BY d, m.seq) AS r "
        f"FROM memories m CROSS JOIN LATERAL (SELECT m.embedding <#> %s AS d) x "
        f"WHERE {clause} AND m.embedding IS NOT NULL) t WHERE r <= %s "
        f"ORDER BY array_position(%s::text[], layer), r",
        (query, *args, int(k), _LAYER_ORDER)).fetchall()
    return [(mid, layer, float(s)) for mid, layer, s in rows]


def approximate(conn: Any, partition: Partition, query: np.ndarray, k: int, flt: Filter, dim: int,
                ) -> list[tuple[str, float]] | None:
    """Top-k through the partition's HNSW index; None when the filter left fewer than k."""
    clause, args = where(partition, flt)
    # The partition as literals: the planner matches them to the partial index's predicate.
    head = sql.SQL("m.user_id = {} AND m.agent_id = {}").format(sql.Literal(partition[0]), sql.Literal(partition[1]))
    dist = sql.SQL("(m.embedding::vector({}))").format(sql.Literal(int(dim)))
    stmt = sql.SQL("SELECT m.id, -({d} <#> %s) FROM memories m WHERE {head} AND {clause} "
                   "ORDER BY {d} <#> %s LIMIT %s").format(d=dist, head=head, clause=sql.SQL(clause))
    ef = EF_SEARCH_FACTOR * k
    if ef <= EF_SEARCH:  # the connection's own setting suffices: one round trip
        rows = conn.execute(stmt, (query, *args, query, int(k))).fetchall()
    else:
        with conn.transaction():
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            rows = conn.execute(stmt, (query, *args, query, int(k))).fetchall()
    if len(rows) < k:
        return None
    return [(mid, float(s)) for mid, s in rows]


def approximate_per_layer(conn: Any, partition: Partition, query: np.ndarray, k: int, flt: Filter, dim: int,
                          ) -> list[tuple[str, float]]:
    """Top-k of every layer: one HNSW scan per layer in one statement, then an exact search
    over the layers that came back with fewer than k (small layers, selective filters)."""
    layers = [layer for layer in Layer if flt.layers is None or layer in flt.layers]
    if not layers:
        return []
    clause, args = where(partition, flt)
    head = sql.SQL("m.user_id = {} AND m.agent_id = {}").format(sql.Literal(partition[0]), sql.Literal(partition[1]))
    dist = sql.SQL("(m.embedding::vector({}))").format(sql.Literal(int(dim)))
    branch = sql.SQL("(SELECT m.id, m.layer, -({d} <#> %s) AS s FROM memories m WHERE {head} AND {clause} "
                     "AND m.layer = %s ORDER BY {d} <#> %s LIMIT %s)").format(d=dist, head=head, clause=sql.SQL(clause))
    stmt = sql.SQL(" UNION ALL ").join([branch] * len(layers))
    params: list[Any] = []
    for layer in layers:
        params.extend([query, *args, layer.value, query, int(k)])
    ef = EF_SEARCH_FACTOR * k
    if ef <= EF_SEARCH:
        rows = conn.execute(stmt, params).fetchall()
    else:
        with conn.transaction():
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            rows = conn.execute(stmt, params).fetchall()
    by_layer: dict[str, list[tuple[str, float]]] = {}
    for mid, name, s in rows:
        by_layer.setdefault(name, []).append((mid, float(s)))
    short = frozenset(layer for layer in layers if len(by_layer.get(layer.value, [])) < k)
    if short:
        for layer in short:
            by_layer.pop(layer.value, None)
        for mid, name, s in _exact_per_layer(conn, partition, query, k, Filter(**{**flt.__dict__, "layers": short})):
            by_layer.setdefault(name, []).append((mid, s))
    return [hit for name in _LAYER_ORDER for hit in by_layer.get(name, [])]


class PartitionIndexes:
    """Which partitions have a valid HNSW index, and building them as partitions grow."""

    def __init__(self, connect: Callable[[], Any], dim: int, min_rows: int) -> None:
        self._connect = connect  # a new autocommit connection (index builds run outside transactions)
        self.dim = dim
        self.min_rows = min_rows
        self._valid: dict[Partition, float] = {}  # partition -> when it was last found without an index
        self._lock = threading.Lock()
        self._builders: list[threading.Thread] = []
        self._building: set[Partition] = set()
        self._attempted: dict[Partition, float] = {}

    def has_index(self, conn: Any, partition: Partition) -> bool:
        now = time.monotonic()
        checked = self._valid.get(partition)
        if checked == float("inf"):
            return True
        if checked is not None and now - checked < NEGATIVE_TTL:
            return False
        row = conn.execute(
            "SELECT i.indisvalid FROM vector_indexes v JOIN pg_class c ON c.relname = v.name "
            "AND c.relnamespace = current_schema()::regnamespace JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE v.user_id = %s AND v.agent_id = %s", partition).fetchone()
        valid = bool(row and row[0])
        self._valid[partition] = float("inf") if valid else now
        return valid

    def drop(self, conn: Any, indexes: dict[Partition, str]) -> None:
        """Drop erased partitions' indexes (``conn`` outside a transaction), which the
        commit took out of ``vector_indexes``."""
        for partition, name in indexes.items():
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
            self._valid.pop(partition, None)
            self._attempted.pop(partition, None)

    def grown(self, conn: Any, partitions: set[Partition]) -> None:
        """After a commit: start building the index of every partition that has outgrown
        exact search and has no valid index (a build that was interrupted is redone)."""
        if not partitions:
            return
        parts = sorted(partitions)
        rows = conn.execute(
            "SELECT user_id, agent_id FROM lexical_docs "
            "WHERE (user_id, agent_id) IN (SELECT * FROM unnest(%s::text[], %s::text[])) AND docs >= %s",
            ([p[0] for p in parts], [p[1] for p in parts], self.min_rows)).fetchall()
        for user, agent in rows:
            part = (user, agent)
            recent = time.monotonic() - self._attempted.get(part, -NEGATIVE_TTL) < NEGATIVE_TTL
            if not recent and part not in self._building and not self.has_index(conn, part):
                self._attempted[part] = time.monotonic()
                self.start_build(part)

    def start_build(self, partition: Partition) -> None:
        with self._lock:
            self._builders = [t for t in self._builders if t.is_alive()]
            self._building.add(partition)
            t = threading.Thread(target=self._build, args=(partition,), name="zenbrain-hnsw-build", daemon=True)
            self._builders.append(t)
            t.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for index builds this handle started."""
        with self._lock:
            builders = list(self._builders)
        for t in builders:
            t.join(timeout)

    def _build(self, partition: Partition) -> None:
        name = index_name(partition)
        key = f"hnsw:{name}"
        try:
            with self._connect() as conn:
                if not conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchone()[0]:
                    return  # another handle is building it
                try:
                    conn.execute("INSERT INTO vector_indexes (user_id, agent_id, name) VALUES (%s, %s, %s) "
                                 "ON CONFLICT DO NOTHING", (*partition, name))
                    row = conn.execute(
                        "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                        "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace", (name,)).fetchone()
                    if row is not None and not row[0]:  # a build that was interrupted
                        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
                    if row is None or not row[0]:
                        conn.execute(sql.SQL(
                            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories USING hnsw "
                            "((embedding::vector({dim})) vector_ip_ops) WHERE user_id = {u} AND agent_id = {a}").format(
                            name=sql.Identifier(name), dim=sql.Literal(int(self.dim)),
                            u=sql.Literal(partition[0]), a=sql.Literal(partition[1])))
                        # Fresh planner statistics, so that the planner weighs the new index
                        # against a scan of the partition with the partition's real size.
                        conn.execute("ANALYZE memories")
                    self._valid.pop(partition, None)
                finally:
                    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
        except Exception:  # the search stays exact; the next growth tries again
            log.exception("building the HNSW index of partition %s failed", partition)
        finally:
            self._valid.pop(partition, None)
            self._building.discard(partition)
