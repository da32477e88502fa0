"""What the indexes of this package need from a store: committed rows and a change log.

A store (SQLite today, PostgreSQL later) feeds the indexes through :class:`IndexSource`.
The indexes never read a table themselves, so they stay correct for any store that
keeps a monotonic change log: every committed change to a memory row appends
``(seq, partition, memory_id)``, with ``seq`` increasing. An index records the last
``seq`` it reflects; on the next use it asks for the ids changed since, reads their
current rows and applies them (a missing row is a deletion). Applying a row twice is
harmless, so rows read after the log position may be newer than it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

Partition = tuple[str, str]  # (user_id, agent_id)


def partition_stem(partition: Partition) -> str:
    """The name of a partition's index files (a hash: no user id in a file name)."""
    return "p-" + hashlib.sha1("\x1f".join(partition).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class IndexRow:
    """One memory as the indexes see it. ``vector`` is float32 of the source's width, or
    None when the memory has no embedding under the source's embedder (such a memory is
    lexical only). ``content`` is the text lexical search indexes; ``content_hash`` the
    key of the vector (a changed key means a changed vector). ``position`` is the turn's
    place in its session (None: not a turn), ``valid_until`` when the memory was
    superseded (None: still current)."""

    id: str
    content: str
    content_hash: str
    vector: np.ndarray | None
    layer: str
    context: str
    session_id: str | None
    archived: bool
    kind: str
    event_time: float
    position: int | None = None
    valid_until: float | None = None


def erased_partition(number: int) -> Partition:
    """How the store's bookkeeping names a partition once it is erased (its ``partitions``
    row and its change-log rows): no user or agent, only its number."""
    return ("", f"{_ERASED}{int(number)}")


def erased_number(partition: Partition) -> int | None:
    """The number of an erased partition's name (``erased_partition``); None for any other."""
    user, agent = partition
    if user or not agent.startswith(_ERASED) or not agent[len(_ERASED):].isdigit():
        return None
    return int(agent[len(_ERASED):])


_ERASED = "erased "


@dataclass(frozen=True)
class ChangeBatch:
    """The ids changed after one log position, up to ``seq`` (inclusive)."""

    seq: int
    changed: Sequence[tuple[Partition, str]]


@runtime_checkable
class IndexSource(Protocol):
    """The store's side of the indexes.

    ``store_id`` names this database for good (a random id kept in the database): an
    index file written for another database, or for a copy restored from a backup whose
    log went another way, is rejected by it. ``embedder_name`` and ``dim`` say which
    vectors ``rows`` returns.
    """

    store_id: str
    embedder_name: str
    dim: int

    def log_seq(self) -> int:
        """The newest committed change log position (0 for an empty log)."""
        ...

    def changes_since(self, seq: int) -> ChangeBatch | None:
        """The distinct (partition, id) changed after ``seq``, up to the newest committed
        position; None when the log no longer reaches back to ``seq`` (it was truncated)
        or ``seq`` is beyond the log's end: then the indexes rebuild."""
        ...

    def rows(self, partition: Partition, ids: Sequence[str]) -> list[IndexRow]:
        """The committed rows of ``ids`` that exist (an absent id has been deleted)."""
        ...

    def all_rows(self, partition: Partition) -> Iterable[IndexRow]:
        """Every committed row of the partition, read in one snapshot."""
        ...

    def all_texts(self, partition: Partition) -> Iterable[tuple[str, str]]:
        """(id, text the lexical index holds) of every committed row of the partition,
        read in one snapshot: what a build of the lexical index reads, without vectors."""
        ...

    def texts_apart(self, partition: Partition) -> Iterable[tuple[str, str]] | None:
        """``all_texts`` read on a connection of their own, so that a long build can read
        them while other threads use this source; None when the database cannot be opened
        twice (in memory): then the build reads ``all_texts``."""
        ...

    def partitions(self) -> list[Partition]:
        """Every partition that holds a row."""
        ...

    def partition_number(self, partition: Partition) -> int | None:
        """The partition's number in the store's bookkeeping (None: it never wrote). Once
        the partition is erased, its change-log rows name it ``erased_partition(number)``."""
        ...
