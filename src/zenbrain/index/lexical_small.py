"""BM25 over a small partition's texts, held in memory (no files).

A tantivy index on disk costs about 4 KB and 11 files however few texts it holds, which a
store of many small users would pay once per user; a partition of a few hundred texts is
scored as fast from postings in memory, and rebuilt from the store's texts when a process
first searches it (milliseconds). Scores are those :class:`~.lexical.LexicalIndex` gives
its uncommitted texts: BM25 (k1 1.2, b 0.75) with FTS5's idf over the partition's own
statistics, the same analyzer. Nothing of an erased text stays anywhere: its postings go
with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .lexical import KeyTable, LexicalIndex, analyzer, idf, query_words, text_key
from .source import IndexRow, Partition


class SmallLexical:
    """The lexical index of one small partition, in memory (see module docs)."""

    K1, B = LexicalIndex.K1, LexicalIndex.B
    deleted_documents = False  # an erased text's words leave with it: nothing to scrub
    has_writer = False
    dirty = False

    def __init__(self) -> None:
        self._analyzer = analyzer()
        self.keys = KeyTable()
        self._terms: dict[int, Counter[str]] = {}  # key -> its text's term counts
        self._postings: dict[str, dict[int, int]] = {}  # term -> key -> count

    def __len__(self) -> int:
        return len(self._terms)

    def _remove(self, k: int) -> None:
        for term in self._terms.pop(k, ()):
            posting = self._postings[term]
            del posting[k]
            if not posting:
                del self._postings[term]
        self.keys.kill(k)

    def _add(self, memory_id: str, text: str) -> None:
        k = self.keys.get_or_add(memory_id)
        self._remove(k)
        terms = self._analyzer.analyze(text)
        counts = Counter(terms)
        self._terms[k] = counts
        for term, n in counts.items():
            self._postings.setdefault(term, {})[k] = n
        self.keys.set_live(k, text_key(text), len(terms))

    def apply(self, partition: Partition, changed: Sequence[str], rows: Iterable[IndexRow]) -> None:
        """Bring ``changed`` ids to ``rows`` (an id without a row is deleted)."""
        current = {r.id: r for r in rows}
        for mid in changed:
            row = current.get(mid)
            k = self.keys.key.get(mid)
            if row is None:
                if k is not None:
                    self._remove(k)
            elif k is None or not self.keys.live[k] or self.keys.chash[k] != text_key(row.content):
                self._add(mid, row.content)

    def add_all(self, partition: Partition, texts: Iterable[tuple[str, str]]) -> None:
        for mid, text in texts:
            self._add(mid, text)

    def commit(self) -> None:
        pass

    def maybe_commit(self) -> None:
        pass

    def release_writer(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _statistics(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        return len(self._terms), {t: len(self._postings.get(t, ())) for t in terms}

    def search(self, partition: Partition, text: str, k: int,
               accept: Callable[[list[str]], np.ndarray] | None = None,
               only: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """Top-k (id, BM25 score) for the OR of the text's words, best first (as
        :meth:`LexicalIndex.search`)."""
        words = query_words(text)
        if not words or k <= 0:
            return []
        terms = list(dict.fromkeys(self._analyzer.analyze(" ".join(words))))
        n_docs, df = self._statistics(terms)
        allowed = None if only is None else {key for m in only if (key := self.keys.key.get(m)) is not None}
        if allowed == set():
            return []
        n = len(self.keys.ids)
        # Vectorised over each term's postings: in Python per posting a search of 1,000
        # texts took 0.28 ms, tantivy's 0.08.
        norm = self.K1 * (1 - self.B + self.B * self.keys.length[:n] / self.keys.mean_length())
        acc = np.zeros(n)
        matched = np.zeros(n, dtype=bool)
        for term in terms:
            posting = self._postings.get(term)
            if not posting:
                continue
            keys = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            tf = np.fromiter(posting.values(), dtype=np.float64, count=len(posting))
            acc[keys] += idf(n_docs, df[term]) * tf * (self.K1 + 1) / (tf + norm[keys])
            matched[keys] = True
        if allowed is not None:
            keep = np.zeros(n, dtype=bool)
            keep[list(allowed)] = True
            matched &= keep
        rows = np.flatnonzero(matched)
        order = rows[np.lexsort((rows, -acc[rows]))]  # best first, ties by key
        ids = self.keys.ids
        hits = [(ids[key], s) for key, s in zip(order.tolist(), acc[order].tolist())]
        if accept is None:
            return hits[:k]
        kept: list[tuple[str, float]] = []
        head = max(4 * k, 50)
        for start in range(0, len(hits), head):  # the filter asked about as few hits as it takes
            chunk = hits[start : start + head]
            ok = accept([mid for mid, _ in chunk])
            kept.extend(h for h, good in zip(chunk, ok) if good)
            if len(kept) >= k:
                break
        return kept[:k]
