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
    """Top-k (memory id, BM25 score; higher is better) among the memories ``flt`` lets through.

    One statement: the partition's statistics and the query terms' document frequencies
    (``st``, ``q``: each term's idf, computed as ``idf`` does) are read in the same round
    trip as the candidates are scored. Each query term's count in a row is looked up in the
    row's own arrays (a few terms, short arrays): no unnesting of every candidate's terms."""
    terms = hasher.many(query_terms(text))
    if not terms or k <= 0:
        return []
    clause, args = where(partition, flt)
    rows = conn.execute(
        f"""
        WITH st AS MATERIALIZED (
            SELECT docs::float8 AS n, tokens::float8 / docs::float8 AS avgdl FROM lexical_docs
             WHERE user_id = %s AND agent_id = %s AND docs > 0),
        q AS MATERIALIZED (
            SELECT t.i, t.term, (CASE WHEN x.v > 0 THEN x.v ELSE {MIN_IDF}::float8 END) * {K1 + 1}::float8 AS w
              FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(term, i)
              JOIN lexical_terms lt ON lt.user_id = %s AND lt.agent_id = %s AND lt.term = t.term AND lt.docs > 0
             CROSS JOIN st
             CROSS JOIN LATERAL (SELECT ln((st.n - lt.docs + 0.5::float8) / (lt.docs + 0.5::float8)) AS v) x)
        SELECT id, score FROM (
            SELECT m.id, m.seq,
                   (SELECT SUM(q.w * f.tf / (f.tf + nm.norm)) FROM q CROSS JOIN LATERAL (
                        SELECT COALESCE(m.lex_tf[array_position(m.lex_terms, q.term)], 0)::float8 AS tf) f) AS score
              FROM memories m CROSS JOIN st
             CROSS JOIN LATERAL (SELECT {K1}::float8 * ({1 - B}::float8 + {B}::float8 * m.lex_len / st.avgdl) AS norm) nm
             WHERE m.lex_terms && %s::bigint[] AND {clause}) c
         WHERE score IS NOT NULL
         ORDER BY score DESC, seq
         LIMIT %s""",
        (*partition, terms, *partition, terms, *args, int(k))).fetchall()
    return [(mid, float(score)) for mid, score in rows]
