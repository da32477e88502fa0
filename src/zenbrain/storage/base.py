"""The storage contract. The coordinator talks to storage only through this protocol,
so a PostgreSQL backend can replace SQLite without touching it.

A *partition* is (user_id, agent_id): every read and write names one, and no call
can reach another partition's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..model import Edge, HistoryEvent, Layer, MemoryItem

Partition = tuple[str, str]  # (user_id, agent_id)


@dataclass(frozen=True)
class Filter:
    """Which memories of a partition a read may see. ``None`` means "no restriction"."""

    layers: frozenset[Layer] | None = None
    contexts: frozenset[str] | None = None
    session_id: str | None = None  # restricts WORKING and SHORT_TERM items to this session
    include_archived: bool = False
    all_sessions: bool = False  # WORKING and SHORT_TERM items of every session (maintenance only)
    kinds: frozenset[str] | None = None
    event_after: float | None = None
    event_before: float | None = None
    ids: frozenset[str] | None = None


@dataclass
class StoreStats:
    memories: int = 0
    archived: int = 0
    edges: int = 0
    by_layer: dict[str, int] = field(default_factory=dict)
    by_context: dict[str, int] = field(default_factory=dict)
    cached_embeddings: int = 0
    file_bytes: int = 0


class Transaction(Protocol):
    """Writes of one operation. Everything commits together or not at all."""

    def put_memory(self, item: MemoryItem) -> None: ...

    def put_memories(self, items: Sequence[MemoryItem]) -> None:
        """``put_memory`` of each item, in order."""
        ...

    def update_memory(self, item: MemoryItem) -> None: ...

    def update_columns(self, partition: Partition, ids: Sequence[str], **columns: Sequence[Any]) -> None:
        """Vectorised update of plain columns (strength, stability, archived, ...) for many rows."""
        ...

    def update_state(self, partition: Partition, memory_id: str, state: dict[str, Any]) -> None:
        """Replace a memory's mechanism state (and its review due time, ``state["due_at"]``)."""
        ...

    def update_states(self, partition: Partition, states: Mapping[str, dict[str, Any]], **columns: Sequence[Any]) -> None:
        """``update_state`` of each memory of ``states`` (id -> state), in one go; with
        ``columns`` (values in the order of ``states``), ``update_columns`` of them first."""
        ...

    def delete_memory(self, partition: Partition, memory_id: str) -> None:
        """Erase: the row, its lexical entry, its edges, its history and snapshots, an orphaned vector."""
        ...

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None: ...

    def put_edges(self, partition: Partition, edges: Sequence[Edge]) -> None: ...

    def delete_edges(self, partition: Partition, keys: Sequence[tuple[str, str, str]]) -> None: ...

    def log(self, partition: Partition, event: HistoryEvent) -> None: ...

    def log_many(self, partition: Partition, events: Sequence[HistoryEvent]) -> None:
        """``log`` of each event, in order."""
        ...

    def touch_recalled(self, partition: Partition, ids: Sequence[str], now: float, stability: Sequence[Any],
                       states: Sequence[dict[str, Any]]) -> None:
        """What a recall writes of the memories it returned: ``increment_access(ids, now)``,
        then ``update_columns(ids, stability=stability)``, then ``update_state`` of each id
        with its state (``states`` in the order of ``ids``)."""
        ...

    def kv_put(self, partition: Partition, key: str, value: Any) -> None: ...

    def kv_put_many(self, partition: Partition, values: Mapping[str, Any]) -> None:
        """``kv_put`` of each key of ``values`` (key -> value), in one go."""
        ...

    def kv_clear(self, partition: Partition) -> None:
        """Erase every key of the partition."""
        ...

    def increment_access(self, partition: Partition, ids: Sequence[str], now: float) -> None:
        """Count one access of each memory atomically and move last_access forward."""
        ...


class Store(Protocol):
    """A memory store. Implementations: ``SQLiteStore`` (embedded default)."""

    embedder_name: str
    dim: int

    def transaction(self, *, durable: bool = True) -> AbstractContextManager[Transaction]: ...

    def get(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]: ...

    def get_shared(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        """``get`` for a caller that only reads the items' metadata and state: those dicts may
        be shared with the store (never change them in place; replacing them is fine). A store
        without such sharing returns what ``get`` does."""
        ...

    def detach(self, items: Iterable[MemoryItem]) -> None:
        """Give items from ``get_shared`` metadata and state dicts of their own."""
        ...

    def query(
        self,
        partition: Partition,
        flt: Filter = Filter(),
        *,
        order_by: str = "created_at",
        descending: bool = False,
        limit: int | None = None,
    ) -> list[MemoryItem]: ...

    def vector_search(
        self, partition: Partition, query: np.ndarray, k: int, flt: Filter = Filter(), *, per_layer: bool = False
    ) -> list[tuple[str, float]]:
        """Top-k (id, cosine) over the partition; with ``per_layer`` top-k of every layer."""
        ...

    def vector_search_many(
        self, partition: Partition, queries: np.ndarray, k: int, flt: Filter = Filter()
    ) -> list[list[tuple[str, float]]]:
        """``vector_search`` for every row of ``queries``, in one pass over the vectors."""
        ...

    def lexical_search(self, partition: Partition, text: str, k: int, flt: Filter = Filter()) -> list[tuple[str, float]]:
        """Top-k (id, BM25 score, higher is better)."""
        ...

    def vectors(self, partition: Partition, ids: Sequence[str]) -> np.ndarray: ...

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def edges(self, partition: Partition, ids: Iterable[str] | None = None) -> list[Edge]:
        """Edges touching any of ``ids`` (all edges of the partition when None)."""
        ...

    def edges_among(self, partition: Partition, ids: Iterable[str]) -> list[Edge]:
        """Edges whose two ends are both in ``ids``."""
        ...

    def history(self, partition: Partition, memory_id: str) -> list[HistoryEvent]: ...

    def kv_get(self, partition: Partition, key: str, default: Any = None) -> Any: ...

    def kv_get_many(self, partition: Partition, keys: Iterable[str]) -> dict[str, Any]:
        """``kv_get`` of several keys in one read: key -> value of the keys that are set."""
        ...

    def all_ids(self, partition: Partition) -> list[str]: ...

    def sample_ids(
        self, partition: Partition, k: int, rng: np.random.Generator, exclude: AbstractSet[str] = frozenset()
    ) -> list[str]:
        """Up to ``k`` distinct ids of the partition outside ``exclude``, drawn uniformly with
        ``rng``; all of them (and ``rng`` untouched) when there are no more than ``k``."""
        ...

    def due(self, partition: Partition, now: float, limit: int, flt: Filter = Filter()) -> list[MemoryItem]:
        """Memories whose review is due at ``now``, most overdue first."""
        ...

    def partitions(self) -> list[Partition]: ...

    def stats(self, partition: Partition | None = None, flt: Filter | None = None) -> StoreStats: ...

    def close(self) -> None: ...


def iter_chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]
