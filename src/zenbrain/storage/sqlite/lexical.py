"""Lexical search: FTS5 BM25 (porter stemming) over the memories' text."""

from __future__ import annotations

import re
import sqlite3

from ...errors import StorageError
from ..base import Filter, Partition
from .filters import where

_TOKEN = re.compile(r"[\w]+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her hers him his how i in is it its "
    "me my of on or our she so that the their them they this to was we were what when where which who "
    "whom why will with you your".split()
)


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


def lexical_search(db: sqlite3.Connection, partition: Partition, query: str, k: int,
                   flt: Filter) -> list[tuple[str, float]]:
    """Top-k (memory id, BM25 score; higher is better) of the FTS query ``query`` among the
    memories ``flt`` lets through."""
    clause, args = where(partition, flt, alias="m")
    try:
        rows = db.execute(
            "SELECT f.memory_id, -bm25(memories_fts) FROM memories_fts f JOIN memories m ON m.id = f.memory_id "
            f"WHERE memories_fts MATCH ? AND f.user_id=? AND f.agent_id=? AND {clause} "
            "ORDER BY bm25(memories_fts) LIMIT ?", (query, *partition, *args, k)).fetchall()
    except sqlite3.OperationalError as exc:
        raise StorageError(f"lexical search failed: {exc}") from exc
    return [(mid, float(score)) for mid, score in rows]
