"""Lexical search: FTS5 BM25 (porter stemming) over the memories' text.

A partition's lexical entries have rowids in a range of their own (``entry_range``), so a
search is an FTS query with a rowid range: FTS5 seeks into its doclists and ranks only the
partition's matches. BM25's statistics stay those of the whole index."""

from __future__ import annotations

import re
import sqlite3

from ...errors import StorageError
from ..base import Filter, Partition, iter_chunks
from .filters import where

_TOKEN = re.compile(r"[\w]+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her hers him his how i in is it its "
    "me my of on or our she so that the their them they this to was we were what when where which who "
    "whom why will with you your".split()
)
# The search first ranks this many FTS matches per result asked for (see lexical_search).
HEAD_FACTOR = 4
HEAD_MIN = 100


def fts_query(text: str) -> str | None:
    """An FTS5 OR-query of the text's distinct words (stopwords dropped), each quoted."""
    words = []
    seen = set()
    for w in _TOKEN.findall(text.lower()):
        if w in _STOPWORDS or w in seen:
            continue
        seen.add(w)
        words.append('"' + w.replace('"', "") + '"')
    return " OR ".join(words) if words else None


# The meta row that says the store's lexical search runs on its index (``zenbrain.index``)
# for good: its FTS5 table is then empty and stays so (it held a second copy of every text,
# about 250 bytes a memory, and cost a store about a tenth of its CPU).
FTS_RETIRED = "lexical_fts_retired"


def fts_retired(db: sqlite3.Connection) -> bool:
    """Whether the store searches text through its index only (its FTS5 table retired)."""
    return db.execute("SELECT 1 FROM meta WHERE key=?", (FTS_RETIRED,)).fetchone() is not None


def retire_fts(db: sqlite3.Connection, now: float) -> None:
    """Empty the FTS5 table for good and say so in ``meta`` (inside the caller's write
    transaction). The table is dropped and made again from its own definition, which
    frees its pages at once (``secure_delete`` zeroes them) where deleting row by row
    would rewrite its segments."""
    if fts_retired(db):
        return
    (sql,) = db.execute("SELECT sql FROM sqlite_schema WHERE name='memories_fts'").fetchone()
    db.execute("DROP TABLE memories_fts")
    db.execute(sql)
    db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (FTS_RETIRED, repr(now)))


ENTRY_BITS = 32  # a partition's entries: rowids number * 2^32 + 1 ... number * 2^32 + 2^32 - 1


def partition_number(db: sqlite3.Connection, partition: Partition) -> int | None:
    """The partition's number in the ``partitions`` table (None: it never wrote). Read with
    the rows it keys, never cached: an erased partition's row stops naming it."""
    row = db.execute("SELECT id FROM partitions WHERE user_id=? AND agent_id=?", partition).fetchone()
    return None if row is None else int(row[0])


def entry_range(number: int) -> tuple[int, int]:
    """The first and last rowid of a partition's lexical entries."""
    lo = int(number) << ENTRY_BITS
    return lo, lo + (1 << ENTRY_BITS) - 1


def lexical_search(db: sqlite3.Connection, partition: Partition, query: str, k: int,
                   flt: Filter, part_number: int | None) -> list[tuple[str, float]]:
    """Top-k (memory id, BM25 score; higher is better) of the FTS query ``query`` among the
    memories ``flt`` lets through.

    FTS5 alone first ranks the partition's best matches (ranking through a join with the
    memories table costs about twice as much: recall at 10k memories takes half the time,
    measured with scripts/bench_speed.py), then the memories table keeps those the filter
    allows. Every allowed memory outside that head ranks below all of it, so when k
    survive they are exactly the joined query's top k; otherwise the joined query runs."""
    if part_number is None:
        return []  # the partition has never stored anything
    lo, hi = entry_range(part_number)
    try:
        head = max(HEAD_FACTOR * k, HEAD_MIN)
        # The rowid range is the partition: reading each match's row to compare its user
        # and agent (or its memory id before the head is cut) cost as much as the ranking
        # itself; ``bm25()`` in ORDER BY is cheaper than the ``rank`` column (same score).
        ranked = db.execute(
            "SELECT rowid, -bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? "
            "AND rowid BETWEEN ? AND ? ORDER BY bm25(memories_fts) LIMIT ?", (query, lo, hi, head)).fetchall()
        clause, args = where(partition, flt, alias="m", use_indexes=False)
        allowed: dict[int, str] = {}
        for chunk in iter_chunks([rowid for rowid, _ in ranked], 500):
            marks = ",".join("?" * len(chunk))
            allowed.update(db.execute(
                f"SELECT f.rowid, m.id FROM memories_fts f JOIN memories m ON m.id = f.memory_id "
                f"WHERE f.rowid IN ({marks}) AND {clause}", (*chunk, *args)))
        kept = [(allowed[rowid], float(score)) for rowid, score in ranked if rowid in allowed]
        if len(ranked) < head or len(kept) >= k:  # the head holds every match, or enough of them
            return kept[:k]
        clause, args = where(partition, flt, alias="m")
        rows = db.execute(
            "SELECT f.memory_id, -bm25(memories_fts) FROM memories_fts f JOIN memories m ON m.id = f.memory_id "
            f"WHERE memories_fts MATCH ? AND f.rowid BETWEEN ? AND ? AND f.user_id=? AND f.agent_id=? AND {clause} "
            "ORDER BY bm25(memories_fts) LIMIT ?", (query, lo, hi, *partition, *args, k)).fetchall()
    except sqlite3.OperationalError as exc:
        raise StorageError(f"lexical search failed: {exc}") from exc
    return [(mid, float(score)) for mid, score in rows]
