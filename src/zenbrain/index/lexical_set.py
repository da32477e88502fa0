"""One lexical index per partition: ``lexical/<stem>/`` (tantivy's segments) and
``lexical/<stem>.keys.npz`` (its id <-> key table) for each partition searched lexically.

A partition's BM25 statistics (how many texts, how many hold a word, their mean length)
are then its own: a score one user reads does not move with what another user stored,
and a word another user wrote cannot be inferred from it. An erasure rebuilds only the
erased memory's partition (tantivy keeps a deleted text's words until its segment merges,
which its Python API cannot start), so its cost follows that partition's size, not the
store's.

A partition of fewer than ``SMALL_MAX`` texts is held in memory instead
(:mod:`.lexical_small`: no files, rebuilt from the store on first use), and moves to an
index on disk once it grows past that. Writers hold a memory arena and threads; only the
most recently written ``OPEN_WRITERS`` partitions keep theirs open between commits.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from .lexical import KeyTable, LexicalIndex
from .lexical_small import SmallLexical
from .source import IndexRow, Partition, partition_stem

OPEN_WRITERS = 32
REBUILD_PREFIX = ".rebuild-"  # a partition's index being built beside the one in use
# Below this many texts a partition is scored in memory: a tantivy index of ten texts is
# ~4 KB in 11 files, and scoring 1,000 texts' postings with numpy takes ~0.1 ms.
SMALL_MAX = 1000

Shard = LexicalIndex | SmallLexical


class LexicalSet:
    """The lexical indexes of the partitions in ``root`` (see module docs). ``texts_of``
    gives a partition's (id, text) pairs from the store (to build a small partition held
    in memory, or move one that grew onto disk)."""

    def __init__(self, root: Path, texts_of: Callable[[Partition], Iterable[tuple[str, str]]]) -> None:
        self.root = root
        self._texts_of = texts_of
        self._shards: dict[Partition, Shard] = {}
        self._writing: OrderedDict[Partition, None] = OrderedDict()  # shards with an open writer, oldest first

    def __contains__(self, partition: Partition) -> bool:
        return partition in self._shards

    def __iter__(self) -> Iterator[Partition]:
        return iter(self._shards)

    def shard(self, partition: Partition) -> Shard:
        return self._shards[partition]

    def _dir(self, partition: Partition) -> Path:
        return self.root / partition_stem(partition)

    def _keys_path(self, partition: Partition) -> Path:
        return self.root / f"{partition_stem(partition)}.keys.npz"

    # -- opening and building -----------------------------------------------------------------
    def load(self, partition: Partition) -> bool:
        """Open the partition's saved index; False when it has no files (a small partition,
        held in memory: built from the store when first searched). Raises
        OSError/ValueError/KeyError when its files are incomplete or unreadable."""
        if not self._dir(partition).exists() and not self._keys_path(partition).exists():
            return False
        keys = KeyTable.load(self._keys_path(partition))
        self._close(partition)
        self._shards[partition] = LexicalIndex(self._dir(partition), keys, partition)
        return True

    def build(self, partition: Partition, texts: Iterable[tuple[str, str]]) -> None:
        """The partition's index anew from its (id, text) pairs (committed): in memory
        below ``SMALL_MAX`` texts, on disk from there."""
        stream = iter(texts)
        head = list(itertools.islice(stream, SMALL_MAX))  # the rest streams: a million texts are not held
        self.remove(partition)
        shard: Shard = SmallLexical() if len(head) < SMALL_MAX else LexicalIndex(self._dir(partition),
                                                                                 partition=partition)
        self._shards[partition] = shard
        shard.add_all(partition, itertools.chain(head, stream))
        shard.commit()
        self._release(partition)

    def build_apart(self, partition: Partition, texts: Iterable[tuple[str, str]]) -> tuple[Path, KeyTable] | None:
        """The partition's index anew, built in a directory of its own beside the one in
        use (which nothing here touches: searches go on meanwhile); ``install`` puts it in
        place. None when the texts are fewer than ``SMALL_MAX`` (such an index is held in
        memory: ``build`` it, which costs little)."""
        stream = iter(texts)
        head = list(itertools.islice(stream, SMALL_MAX))
        if len(head) < SMALL_MAX:
            return None
        apart = self.root / f"{REBUILD_PREFIX}{partition_stem(partition)}.{os.getpid()}.{threading.get_ident()}"
        LexicalIndex.remove_files(apart)
        index = LexicalIndex(apart, partition=partition)
        try:
            index.add_all(partition, itertools.chain(head, stream))
            index.close()  # committed, writer closed
        except BaseException:
            LexicalIndex.remove_files(apart)
            raise
        return apart, index.keys

    def install(self, partition: Partition, built: tuple[Path, KeyTable]) -> None:
        """Put an index ``build_apart`` made in the place of the partition's (closed, its
        files removed), with its key table written beside it."""
        apart, keys = built
        self._close(partition)
        LexicalIndex.remove_files(self._dir(partition))
        os.replace(apart, self._dir(partition))
        self._shards[partition] = LexicalIndex(self._dir(partition), keys, partition)
        tmp = self.root / f".{partition_stem(partition)}.keys.{os.getpid()}.tmp"
        keys.save(tmp)
        os.replace(tmp, self._keys_path(partition))

    def remove_apart(self) -> None:
        """Remove the directories of builds that never were installed (a process that
        ended while building: they may hold an erased memory's words)."""
        if self.root.exists():
            for leftover in self.root.glob(f"{REBUILD_PREFIX}*"):
                LexicalIndex.remove_files(leftover)

    def clear(self) -> None:
        """Close every index and remove every file."""
        self.close()
        LexicalIndex.remove_files(self.root)

    def _close(self, partition: Partition) -> None:
        shard = self._shards.pop(partition, None)
        self._writing.pop(partition, None)
        if shard is not None:
            shard.close()

    def _release(self, partition: Partition) -> None:
        self._writing.pop(partition, None)
        self._shards[partition].release_writer()

    def _wrote(self, partition: Partition) -> None:
        self._writing[partition] = None
        self._writing.move_to_end(partition)

    # -- changes --------------------------------------------------------------------------------
    def apply(self, partition: Partition, changed: Sequence[str], rows: Iterable[IndexRow]) -> None:
        shard = self._shards.get(partition)
        if shard is None:
            return
        shard.apply(partition, changed, rows)
        if isinstance(shard, SmallLexical) and len(shard) >= SMALL_MAX:
            self.build(partition, self._texts_of(partition))  # grown: onto disk
        elif shard.has_writer:
            self._wrote(partition)

    def maybe_commit(self) -> None:
        for partition in list(self._writing):
            self._shards[partition].maybe_commit()
        self._limit_writers()

    def commit(self) -> None:
        for shard in self._shards.values():
            shard.commit()
        self._limit_writers()

    def _limit_writers(self) -> None:
        """Close the writers of the least recently written partitions beyond the cap
        (only committed ones: a writer with uncommitted changes stays)."""
        excess = len(self._writing) - OPEN_WRITERS
        for partition in list(self._writing):
            if excess <= 0:
                break
            if not self._shards[partition].dirty:
                self._release(partition)
                excess -= 1

    def with_deleted_documents(self) -> list[Partition]:
        """The partitions whose index files still hold a deleted memory's text."""
        return [p for p, shard in self._shards.items() if shard.deleted_documents]

    # -- search ---------------------------------------------------------------------------------
    def search(self, partition: Partition, text: str, k: int,
               accept: Callable[[list[str]], np.ndarray] | None = None,
               only: Iterable[str] | None = None) -> list[tuple[str, float]]:
        return self._shards[partition].search(partition, text, k, accept, only=only)

    # -- persistence ----------------------------------------------------------------------------
    def save_keys(self) -> None:
        """Write each partition's key table beside its segments (atomically)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for partition, shard in self._shards.items():
            if isinstance(shard, SmallLexical):
                continue  # in memory: built from the store when next opened
            tmp = self.root / f".{partition_stem(partition)}.keys.{os.getpid()}.tmp"
            shard.keys.save(tmp)
            os.replace(tmp, self._keys_path(partition))

    def close(self) -> None:
        for partition in list(self._shards):
            self._close(partition)

    def remove(self, partition: Partition) -> None:
        """Close the partition's index and delete its files."""
        self._close(partition)
        LexicalIndex.remove_files(self._dir(partition))
        self._keys_path(partition).unlink(missing_ok=True)
