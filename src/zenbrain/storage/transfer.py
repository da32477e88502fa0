"""Copying a store to another backend (``zenbrain migrate SRC DST``): SQLite to PostgreSQL
and back, through the Store protocol alone.

Partition by partition, each in one transaction on the destination: the embedding-cache
entries its memories use, its memories (every column, metadata and state), edges, history
and records, and a progress record naming the partitions copied so far. A crash loses at
most the partition being copied; running the same migration again skips the partitions
the progress record names. Afterwards ``verify`` compares counts per partition and the
top-10 results of dense and lexical search for sample queries in both stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, StorageError
from .base import Filter, Partition, Store, iter_chunks
from .locations import is_postgres, open_store, recorded_meta

# Progress records live in a partition no scope can name (scopes refuse spaces).
PROGRESS_PARTITION: Partition = ("zenbrain migrate", "progress")
EVERYTHING = Filter(include_archived=True, all_sessions=True)
CHUNK = 500


@dataclass
class PartitionCounts:
    memories: int = 0
    vectors: int = 0
    edges: int = 0
    events: int = 0
    records: int = 0

    def row(self) -> tuple[int, int, int, int, int]:
        return (self.memories, self.vectors, self.edges, self.events, self.records)


@dataclass
class Report:
    copied: list[Partition] = field(default_factory=list)
    skipped: list[Partition] = field(default_factory=list)
    counts: dict[Partition, PartitionCounts] = field(default_factory=dict)


def source_key(location: str) -> str:
    """How the progress record names a source (a URL without its password)."""
    if not is_postgres(location):
        import os

        return "file:" + os.path.abspath(location)
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(location)
    info.pop("password", None)
    return "postgresql:" + " ".join(f"{k}={v}" for k, v in sorted(info.items()))


@contextmanager
def open_pair(src: str, dst: str, **dst_options: object) -> Iterator[tuple[Store, Store]]:
    """The source (which must exist) and the destination (created with the source's
    embedder when new; refused when it holds another embedder's vectors)."""
    meta = recorded_meta(src)
    if meta is None:
        raise StorageError(f"no zenbrain store at {src}")
    name, dim = meta
    if source_key(src) == source_key(dst):
        raise ConfigError("the source and the destination are the same store")
    source = open_store(src, embedder_name=name, dim=dim)
    try:
        dest = open_store(dst, embedder_name=name, dim=dim, **dst_options)
        try:
            yield source, dest
        finally:
            dest.close()
    finally:
        source.close()


def copy_partition(source: Store, dest: Store, part: Partition, progress_key: str, done: list[Partition]) -> PartitionCounts:
    items = source.query(part, EVERYTHING)
    ids = [i.id for i in items]
    keys = list(dict.fromkeys((i.vector_key or i.content_hash) for i in items))
    cached = source.cached_embeddings(source.embedder_name, keys)
    edges = source.edges(part)
    events = [ev for mid in ids for ev in source.history(part, mid)]
    records = source.kv_get(part)
    with dest.transaction() as tx:
        for chunk in iter_chunks([k for k in keys if k in cached], CHUNK):
            tx.put_embeddings(dest.embedder_name, list(chunk), np.stack([cached[k] for k in chunk]))
        for chunk in iter_chunks(items, CHUNK):
            tx.put_memories(list(chunk))
        if edges:
            tx.put_edges(part, edges)
        if events:
            tx.log(part, events)
        if records:
            tx.kv_put(part, records)
        tx.kv_put(PROGRESS_PARTITION, {progress_key: [list(p) for p in [*done, part]]})
    return PartitionCounts(len(items), len(cached), len(edges), len(events), len(records))


def migrate(source: Store, dest: Store, progress_key: str, *,
            on_partition: Callable[[Partition, PartitionCounts | None], None] | None = None) -> Report:
    """Copy every partition of ``source`` not yet recorded as copied into ``dest``."""
    done = [tuple(p) for p in (dest.kv_get(PROGRESS_PARTITION, progress_key) or [])]
    report = Report()
    for part in source.partitions():
        if part in done:
            report.skipped.append(part)
            if on_partition:
                on_partition(part, None)
            continue
        counts = copy_partition(source, dest, part, progress_key, done)
        done.append(part)
        report.copied.append(part)
        report.counts[part] = counts
        if on_partition:
            on_partition(part, counts)
    return report


def counts(store: Store, part: Partition) -> PartitionCounts:
    items = store.query(part, EVERYTHING)
    keys = list(dict.fromkeys((i.vector_key or i.content_hash) for i in items))
    return PartitionCounts(len(items), len(store.cached_embeddings(store.embedder_name, keys)), len(store.edges(part)),
                           sum(len(store.history(part, i.id)) for i in items), len(store.kv_get(part)))


@dataclass
class Verification:
    mismatched: dict[Partition, tuple[PartitionCounts, PartitionCounts]] = field(default_factory=dict)
    totals: tuple[PartitionCounts, PartitionCounts] = field(default_factory=lambda: (PartitionCounts(), PartitionCounts()))
    queries: int = 0
    dense_same: int = 0
    lexical_same: int = 0
    dense_overlap: float = 0.0
    lexical_overlap: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatched


def verify(source: Store, dest: Store, *, queries_per_partition: int = 3, max_partitions: int = 50,
           seed: int = 0) -> Verification:
    """Counts of every partition in both stores, and the top-10 of dense search (by a stored
    memory's vector) and of lexical search (by its text) for sample memories of up to
    ``max_partitions`` partitions."""
    v = Verification()
    total_src, total_dst = PartitionCounts(), PartitionCounts()
    parts = source.partitions()
    for part in parts:
        a, b = counts(source, part), counts(dest, part)
        for total, c in ((total_src, a), (total_dst, b)):
            for name in ("memories", "vectors", "edges", "events", "records"):
                setattr(total, name, getattr(total, name) + getattr(c, name))
        if a.row() != b.row():
            v.mismatched[part] = (a, b)
    v.totals = (total_src, total_dst)
    rng = np.random.default_rng(seed)
    sample = [parts[i] for i in sorted(rng.choice(len(parts), size=min(max_partitions, len(parts)), replace=False))] \
        if parts else []
    dense_overlap, lexical_overlap = [], []
    for part in sample:
        ids = source.sample_ids(part, queries_per_partition, rng)
        for item, vec in zip(source.get(part, ids), source.vectors(part, ids)):
            flt = Filter(include_archived=True, session_id=item.session_id)
            d1 = [i for i, _ in source.vector_search(part, vec, 10, flt)]
            d2 = [i for i, _ in dest.vector_search(part, vec, 10, flt)]
            l1 = [i for i, _ in source.lexical_search(part, item.content, 10, flt)]
            l2 = [i for i, _ in dest.lexical_search(part, item.content, 10, flt)]
            v.queries += 1
            v.dense_same += d1 == d2
            v.lexical_same += l1 == l2
            dense_overlap.append(len(set(d1) & set(d2)) / max(1, len(d1)))
            lexical_overlap.append(len(set(l1) & set(l2)) / max(1, len(l1)))
    v.dense_overlap = float(np.mean(dense_overlap)) if dense_overlap else 1.0
    v.lexical_overlap = float(np.mean(lexical_overlap)) if lexical_overlap else 1.0
    return v
