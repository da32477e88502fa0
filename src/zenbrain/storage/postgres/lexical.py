"""Lexical search on PostgreSQL: BM25 computed in SQL over per-partition term statistics.

PostgreSQL's own ``ts_rank`` is not BM25: it has no inverse document frequency and no
BM25 length normalisation. So every memory stores its terms (the SQLite store's FTS5
``porter unicode61`` analysis, see ``storage.lexical_terms``) with their counts and its
token count; ``lexical_terms`` and ``lexical_docs`` keep each partition's document
frequencies, documents and tokens. A query finds its candidates through a GIN index over
the terms and scores them with the formula FTS5 uses (k1 = 1.2, b = 0.75,
idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6), so both stores rank alike.

Terms are stored as 64-bit keyed hashes (BLAKE2b with a random key per store): a GIN index
never removes a key once added, and a hash of a stem is not the text of an erased memory.
Statistics are the partition's own: a score never depends on, or reveals, what another
user stored.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..base import Filter, Partition
from ..lexical_terms import query_terms
from .filters import where

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6  # FTS5's floor for terms in more than half the documents


class TermHasher:
    """Terms as signed 64-bit integers under the store's key."""

    def __init__(self, key: bytes) -> None:
        self._key = key[:64]
        self._cache: dict[str, int] = {}

    def __call__(self, term: str) -> int:
        h = self._cache.get(term)
        if h is None:
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8, key=self._key).digest()
            h = int.from_bytes(digest, "little", signed=True)
            if len(self._cache) < 200_000:
                self._cache[term] = h
        return h

    def counts(self, counts: Counter[str]) -> tuple[list[int], list[int]]:
        """Term hashes and their counts (hash collisions add up)."""
        merged: dict[int, int] = {}
        for term, n in counts.items():
            h = self(term)
            merged[h] = merged.get(h, 0) + n
        return list(merged), list(merged.values())

    def many(self, terms: Iterable[str]) -> list[int]:
        return list(dict.fromkeys(self(t) for t in terms))


def idf(docs: int, holding: int) -> float:
    value = math.log((docs - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else MIN_IDF


def search(conn: Any, hasher: TermHasher, partition: Partition, text: str, k: int,
           flt: Filter) -> list[tuple[str, float]]:
    """Top-k (memory id, BM25 score; higher is better) among the memories ``flt`` lets through."""
    terms = hasher.many(query_terms(text))
    if not terms or k <= 0:
        return []
    row = conn.execute("SELECT docs, tokens FROM lexical_docs WHERE user_id = %s AND agent_id = %s",
                       partition).fetchone()
    if row is None or not row[0]:
        return []
    docs, tokens = int(row[0]), int(row[1])
    found = dict(conn.execute(
        "SELECT term, docs FROM lexical_terms WHERE user_id = %s AND agent_id = %s AND term = ANY(%s)",
        (*partition, terms)).fetchall())
    terms = [t for t in terms if found.get(t)]
    if not terms:
        return []
    weights = [idf(docs, int(found[t])) for t in terms]
    avgdl = tokens / docs
    clause, args = where(partition, flt)
    # Each query term's count in a row is looked up in the row's own arrays (a few terms,
    # short arrays): no unnesting of every candidate's terms, no grouping.
    counts = ", ".join(f"COALESCE(m.lex_tf[array_position(m.lex_terms, %s::bigint)], 0)::float8 AS tf{i}"
                       for i in range(len(terms)))
    score = " + ".join(f"%s::float8 * tf{i} / (tf{i} + norm)" for i in range(len(terms)))
    rows = conn.execute(
        f"""
        SELECT id, {score} AS score FROM (
            SELECT m.id, m.seq, {counts}, {K1}::float8 * ({1 - B}::float8 + {B}::float8 * m.lex_len / %s::float8) AS norm
              FROM memories m
             WHERE m.lex_terms && %s::bigint[] AND {clause}) c
         ORDER BY score DESC, seq
         LIMIT %s""",
        (*[w * (K1 + 1) for w in weights], *terms, avgdl, terms, *args, int(k))).fetchall()
    return [(mid, float(score)) for mid, score in rows]
