"""The storage contract. The pipeline talks to storage only through this protocol, so a
PostgreSQL backend can replace SQLite without touching it.

A *partition* is (user_id, agent_id): every read and write names one, and no call can
reach another partition's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..model import Edge, HistoryEvent, Layer, MemoryItem

Partition = tuple[str, str]  # (user_id, agent_id)

ORDERABLE = frozenset({"created_at", "event_time", "last_access", "due_at", "strength", "updated_at", "position"})


@dataclass(frozen=True)
class Filter:
    """Which memories of a partition a read may see. ``None`` means "no restriction"."""

    layers: frozenset[Layer] | None = None
    contexts: frozenset[str] | None = None
    session_id: str | None = None  # restricts WORKING and SHORT_TERM items to this session
    include_archived: bool = False
    all_sessions: bool = False  # WORKING and SHORT_TERM items of every session (maintenance only)
    kinds: frozenset[str] | None = None
    event_after: float | None = None  # event time (creation time when there is none) at or after
    event_before: float | None = None
    due_before: float | None = None  # review due at or before this time
    ids: frozenset[str] | None = None
    sessions: frozenset[str] | None = None  # memories of these sessions (any layer)
    turns: frozenset[tuple[str, int]] | None = None  # memories at these (session, position)
    # Only what still held at this time: memories superseded at or before it are left out.
    current_at: float | None = None
    content_hashes: frozenset[str] | None = None  # memories with these content hashes (queries only)


@dataclass
class StoreStats:
    memories: int = 0
    archived: int = 0
    edges: int = 0
    by_layer: dict[str, int] = field(default_factory=dict)
    by_context: dict[str, int] = field(default_factory=dict)
    cached_embeddings: int = 0  # a partition's: the distinct vectors its memories use
    file_bytes: int = 0  # the whole file only (0 for a partition)
    stored_bytes: int = 0  # a partition's text, metadata, state and vectors


class Transaction(Protocol):
    """The writes of one operation: everything commits together or not at all."""

    # Set once the outermost transaction has committed: whether erased content is gone
    # from the store's files too (False: it stays pending until readers of older snapshots
    # end; the store finishes it later). None while uncommitted or when nothing was erased.
    scrubbed: bool | None

    def lock(self, partitions: Sequence[Partition]) -> None:
        """Wait until no other transaction writes these partitions, and keep them until this
        one ends: what the transaction reads afterwards stays true until it commits (a check
        before a write, such as the exact-repeat lookup). Every write takes its partition's
        lock anyway; this takes it before the first read."""
        ...

    def put_memories(self, items: Sequence[MemoryItem]) -> None:
        """Write whole memories (insert, or replace the stored row): columns, metadata,
        state, and the lexical entry of the content."""
        ...

    def update_columns(self, partition: Partition, ids: Sequence[str], **columns: Sequence[Any]) -> None:
        """Set plain columns (strength, stability, archived, layer, ...) of many memories;
        each column's values are in the order of ``ids``."""
        ...

    def update_states(self, partition: Partition, states: Mapping[str, Mapping[str, Any]]) -> None:
        """Replace the mechanism state of memories (id -> state), and with it their review
        due time (``state["due_at"]``)."""
        ...

    def record_access(self, partition: Partition, ids: Sequence[str], now: float, *,
                      states: Mapping[str, Mapping[str, Any]] | None = None, **columns: Sequence[Any]) -> None:
        """Count one access of each memory and move its last access forward to ``now``,
        atomically (concurrent recalls from other processes are not lost). ``states`` (id ->
        state, one for every id) and ``columns`` (values in the order of ``ids``, as
        ``update_columns`` takes them) are written by the same statement, so a recall's
        bookkeeping updates each row once; ids then must not repeat."""
        ...

    def delete_memory(self, partition: Partition, memory_id: str) -> dict[str, int]:
        """Erase: the row, its lexical entry, its edges, its history, an orphaned vector.
        Returns what was removed: ``memories``, ``lexical_entries``, ``edges``,
        ``history_rows``, ``requests`` and ``vectors`` (vectors this partition no longer
        uses; whether another partition keeps the same vector does not show)."""
        ...

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Cache vectors by the content hash of their text. A store keeps the vectors of the
        embedder it was created with (``model``); another model's are refused with
        ``ValidationError``."""
        ...

    def put_edges(self, partition: Partition, edges: Sequence[Edge]) -> None:
        """Insert edges, or replace those with the same (src, dst, relation)."""
        ...

    def delete_edges(self, partition: Partition, keys: Sequence[tuple[str, str, str]]) -> None:
        """Delete edges by (src, dst, relation)."""
        ...

    def log(self, partition: Partition, events: Sequence[HistoryEvent]) -> None:
        """Append history events, in order."""
        ...

    def kv_put(self, partition: Partition, values: Mapping[str, Any]) -> None:
        """Set partition records (key -> JSON-able value)."""
        ...

    def kv_clear(self, partition: Partition) -> int:
        """Erase every record of the partition; returns how many."""
        ...

    def forget_partition(self, partition: Partition) -> bool:
        """After everything of the partition is erased: remove what still names it in the
        store's own bookkeeping. True when something was removed."""
        ...


class Store(Protocol):
    """A memory store. Implementations: ``SQLiteStore`` (embedded default)."""

    embedder_name: str
    dim: int

    def transaction(self, *, durable: bool = True) -> AbstractContextManager[Transaction]:
        """One atomic write; a transaction opened inside another joins it. ``durable=False``
        may skip the flush to disk at commit (the write stays atomic)."""
        ...

    def get(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        """The memories of ``ids`` that exist, in the order of ``ids``."""
        ...

    def query(
        self,
        partition: Partition,
        flt: Filter = Filter(),
        *,
        order_by: str = "created_at",
        descending: bool = False,
        limit: int | None = None,
        share: Callable[[MemoryItem], MemoryItem] | None = None,
    ) -> list[MemoryItem]:
        """The memories ``flt`` lets through, ordered by one of ``ORDERABLE``; ties by id,
        except that equally due memories (``order_by="due_at"``) come in the order they
        were stored, and that a descending order puts the newest stored of equals first.
        Each memory goes through ``share`` as its row is read (a caller holding many
        memories makes equal values one object: what the row brought is freed at once,
        not after the whole result)."""
        ...

    def query_metadata(
        self,
        partition: Partition,
        flt: Filter = Filter(),
        *,
        order_by: str = "created_at",
        descending: bool = False,
        limit: int | None = None,
    ) -> list[tuple[str, dict[str, Any]]]:
        """The id and metadata of each memory ``query`` returns, in its order (the rest of
        the row is neither read nor decoded)."""
        ...

    def vector_search(
        self, partition: Partition, query: np.ndarray, k: int, flt: Filter = Filter(), *, per_layer: bool = False
    ) -> list[tuple[str, float]]:
        """Top-k (id, cosine) over the partition; with ``per_layer`` top-k of every layer."""
        ...

    def lexical_search(self, partition: Partition, text: str, k: int, flt: Filter = Filter()) -> list[tuple[str, float]]:
        """Top-k (id, BM25 score, higher is better)."""
        ...

    def vectors(self, partition: Partition, ids: Sequence[str]) -> np.ndarray:
        """The vectors of ``ids`` (rows of zeros for unknown ids)."""
        ...

    def cosines(self, partition: Partition, ids: Sequence[str], queries: np.ndarray) -> np.ndarray:
        """(m, len(ids)) cosines of unit float32 ``queries`` (m, d) with the stored vectors of
        ``ids`` (``vecmath.row_cosines``; 0 for unknown ids)."""
        ...

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors by content hash (the hashes that are cached; none for a model other
        than the store's embedder)."""
        ...

    def edges(self, partition: Partition, ids: Iterable[str] | None = None, *, both_ends: bool = False,
              relation: str | None = None, share: Callable[[Edge], Edge] | None = None) -> list[Edge]:
        """Edges touching any of ``ids`` (all edges of the partition when None); with
        ``both_ends`` only those whose two ends are both in ``ids``; with ``relation`` only
        edges of that relation (filtered in the database: a well-linked memory has
        thousands of edges). Each edge goes through ``share`` as its row is read (a caller
        that holds the ids already puts its own strings in: the strings read are freed at
        once, not after the whole result, leaving gaps in memory that later objects rarely
        fill)."""
        ...

    def history(self, partition: Partition, memory_id: str) -> list[HistoryEvent]:
        ...

    def kv_get(self, partition: Partition, key: str | None = None, default: Any = None) -> Any:
        """The partition record ``key`` (``default`` when unset); with no key, every record
        of the partition as a dict (key -> value)."""
        ...

    def kv_get_many(self, partition: Partition, keys: Iterable[str]) -> dict[str, Any]:
        """The partition records of ``keys`` that are set (key -> value), in one read."""
        ...

    def sample_ids(
        self, partition: Partition, k: int, rng: np.random.Generator, exclude: AbstractSet[str] = frozenset()
    ) -> list[str]:
        """Up to ``k`` distinct ids of the partition outside ``exclude``, drawn uniformly with
        ``rng``; all of them (and ``rng`` untouched) when there are no more than ``k``."""
        ...

    def stats(self, partition: Partition | None = None, flt: Filter | None = None) -> StoreStats:
        ...

    def count(self) -> int:
        """Memories in the whole store, every partition: one count, without the rest of
        ``stats`` (which groups every row by layer and context and counts edges and vectors)."""
        ...

    def partitions(self) -> list[Partition]:
        """Every (user, agent) holding memories, for the application's own maintenance."""
        ...

    def close(self) -> None:
        ...


def iter_chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]
