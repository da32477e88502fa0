"""Lexical search on PostgreSQL: BM25 computed in SQL over per-partition term statistics.

PostgreSQL's own ``ts_rank`` is not BM25: it has no inverse document frequency and no
length normalisation of the BM25 kind. So every memory stores its terms (the SQLite
store's FTS5 ``porter unicode61`` analysis, see ``storage.lexical_terms``) as a tsvector
whose positions give each term's count, plus its token count; ``lexical_terms`` and
``lexical_docs`` keep each partition's document frequencies, documents and tokens. A
query finds its candidates through the GIN index (``lex @@ query``) and scores them with
the formula FTS5 uses (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) floored at
1e-6), so both stores rank alike. Statistics are the partition's own: a score never
depends on, or reveals, what another user stored.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..base import Filter, Partition
from ..lexical_terms import query_terms
from .filters import where

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6  # FTS5's floor for terms in more than half the documents
MAX_POSITION = 16383  # the largest position a tsvector holds


def tsvector_text(counts: Counter[str]) -> str:
    """A tsvector literal holding each term ``count`` times (as positions)."""
    parts = []
    pos = 1
    for term, n in counts.items():
        positions = []
        for _ in range(min(n, 256)):  # a tsvector keeps at most 256 positions per term
            positions.append(str(min(pos, MAX_POSITION)))
            pos += 1
        pos += max(0, n - 256)
        quoted = term.replace("\\", "\\\\").replace("'", "''")
        parts.append(f"'{quoted}':{','.join(dict.fromkeys(positions))}")
    return " ".join(parts)


def tsquery_text(terms: Sequence[str]) -> str:
    """A tsquery literal matching any of ``terms``."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def idf(docs: int, holding: int) -> float:
    value = math.log((docs - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else MIN_IDF


def search(conn: Any, partition: Partition, text: str, k: int, flt: Filter) -> list[tuple[str, float]]:
    """Top-k (memory id, BM25 score; higher is better) among the memories ``flt`` lets through."""
    terms = query_terms(text)
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
    avgdl = tokens / docs if docs else 1.0
    clause, args = where(partition, flt)
    rows = conn.execute(
        f"""
        SELECT m.id, SUM(q.w * (cardinality(u.positions) * {K1 + 1})
                         / (cardinality(u.positions) + {K1} * ({1 - B} + {B} * m.lex_len / %s::float8))) AS score
          FROM memories m
          CROSS JOIN LATERAL unnest(m.lex) AS u
          JOIN unnest(%s::text[], %s::float8[]) AS q(term, w) ON q.term = u.lexeme
         WHERE m.lex @@ %s::tsquery AND {clause}
         GROUP BY m.id, m.seq
         ORDER BY score DESC, m.seq
         LIMIT %s""",
        (avgdl, terms, weights, tsquery_text(terms), *args, int(k))).fetchall()
    return [(mid, float(score)) for mid, score in rows]
