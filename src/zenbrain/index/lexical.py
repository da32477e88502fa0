"""BM25 top-k over memory texts with tantivy (Rust, on-disk segments, incremental).

Chosen by measurement (``scripts/bench_index_choice.py lexical``): at 100k real sentences
an OR-query's top 50 takes ~0.15 ms, where SQLite FTS5 ranking every match takes ~30 ms;
tantivy skips documents that cannot enter the top k (block-max WAND), so the cost is
bounded by the query, not by how many documents hold a common word.

A store keeps one index per partition (:mod:`.lexical_set`). A document holds its
partition key, an integer key of its memory id (mapped by :class:`KeyTable`; a key of each
text is kept there to skip rows whose text did not change) and its text (English stemming,
no positions). A query is its words' OR. Scores are BM25 (k1 1.2, b 0.75) with the idf SQLite FTS5 uses, ``ln((N - n + 0.5) / (n + 0.5))`` and 1e-6 where that is not
positive, so a word found in most texts weighs (next to) nothing: tantivy's own idf,
Lucene's ``ln(1 + (N - n + 0.5) / (n + 0.5))``, is never below ln 2 and let repeated
common words outrank the rare word a query is about (a turn indexed with the turns
before it holds the same common words twice). Each query word is a term query boosted
by the ratio of the two idfs; the statistics are those of the index, so with one index a
partition they are the partition's own.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .source import IndexRow, Partition

# Words zenbrain's lexical search ignores (the store's FTS query drops the same ones).
STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her hers him his how i in is it its "
    "me my of on or our she so that the their them they this to was we were what when where which who "
    "whom why will with you your".split()
)
# tantivy's tokenizer splits at every character that is not a letter or digit.
_TOKEN = re.compile(r"[^\W_]+")
WRITER_HEAP = 50_000_000


def query_words(text: str) -> list[str]:
    """The query's distinct words as the index splits them, stopwords dropped."""
    out: dict[str, None] = {}
    for w in _TOKEN.findall(text.lower()):
        if w not in STOPWORDS:
            out.setdefault(w, None)
    return list(out)


def text_key(text: str) -> int:
    """A 63-bit key of a text, to tell whether an indexed text changed."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def idf(n_docs: int, df: int) -> float:
    """The idf of a word in ``df`` of ``n_docs`` texts, as SQLite FTS5's bm25() has it."""
    w = math.log((n_docs - df + 0.5) / (df + 0.5)) if n_docs else 0.0
    return w if w > 0.0 else 1e-6


def lucene_idf(n_docs: int, df: int) -> float:
    """The idf tantivy's BM25 applies (Lucene's)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def analyzer() -> Any:
    """The content field's analyzer (tantivy's en_stem), to score texts outside an index alike."""
    import tantivy

    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer("english")).build())


def partition_key(partition: Partition) -> str:
    return hashlib.sha1("\x1f".join(partition).encode()).hexdigest()


class KeyTable:
    """Memory ids to dense integer keys and back; per key the indexed text's key (to
    tell changed texts), its token count and whether it is live."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.key: dict[str, int] = {}
        self.chash = np.zeros(1024, dtype=np.int64)
        self.length = np.zeros(1024, dtype=np.int32)
        self.live = np.zeros(1024, dtype=bool)
        self.live_count = 0
        self.live_tokens = 0

    def get_or_add(self, memory_id: str) -> int:
        k = self.key.get(memory_id)
        if k is None:
            k = self.key[memory_id] = len(self.ids)
            self.ids.append(memory_id)
            if k >= len(self.chash):
                self.chash = np.concatenate([self.chash, np.zeros(len(self.chash), dtype=np.int64)])
                self.length = np.concatenate([self.length, np.zeros(len(self.length), dtype=np.int32)])
                self.live = np.concatenate([self.live, np.zeros(len(self.live), dtype=bool)])
        return k

    def set_live(self, k: int, chash: int, length: int) -> None:
        self.kill(k)
        self.chash[k], self.length[k], self.live[k] = chash, length, True
        self.live_count += 1
        self.live_tokens += length

    def kill(self, k: int) -> None:
        if self.live[k]:
            self.live[k] = False
            self.live_count -= 1
            self.live_tokens -= int(self.length[k])

    def mean_length(self) -> float:
        return self.live_tokens / self.live_count if self.live_count else 1.0

    def save(self, path: Path) -> None:
        n = len(self.ids)
        blob = "\n".join(self.ids).encode()
        with open(path, "wb") as fh:
            np.savez(fh, ids=np.frombuffer(blob, dtype=np.uint8), chash=self.chash[:n], length=self.length[:n],
                     live=self.live[:n])

    @classmethod
    def load(cls, path: Path) -> KeyTable:
        t = cls()
        with np.load(path) as z:
            blob = z["ids"].tobytes().decode()
            t.ids = blob.split("\n") if blob else []
            n = len(t.ids)
            if not len(z["chash"]) == len(z["length"]) == len(z["live"]) == n:
                raise ValueError("key table is inconsistent")
            cap = max(1024, n)
            t.chash = np.zeros(cap, dtype=np.int64)
            t.length = np.zeros(cap, dtype=np.int32)
            t.live = np.zeros(cap, dtype=bool)
            t.chash[:n], t.length[:n], t.live[:n] = z["chash"], z["length"], z["live"]
        t.key = dict(zip(t.ids, range(len(t.ids))))  # (a comprehension takes twice as long)
        t.live_count = int(t.live[:n].sum())
        t.live_tokens = int(t.length[:n][t.live[:n]].sum())
        return t


class LexicalIndex:
    """tantivy BM25 over memory texts in ``directory`` (created if missing).

    A tantivy commit makes changes visible but costs a segment write and an fsync (about
    0.25 s measured here under load), too much to pay on the next search after every
    new memory. So changes are committed in batches (``COMMIT_DOCS`` documents or
    ``COMMIT_SECONDS`` after the first); until then the index hides the committed
    versions of changed memories and scores their new texts itself, with BM25 over the
    same tokens and the index's statistics (tantivy's formula; its one-byte length
    encoding aside, the scores match). A search never misses or shows a stale text.
    """

    COMMIT_DOCS = 1000
    COMMIT_SECONDS = 5.0
    K1, B = 1.2, 0.75

    def __init__(self, directory: Path, keys: KeyTable | None = None, partition: Partition | None = None) -> None:
        import tantivy

        self._t = tantivy
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("part", tokenizer_name="raw", index_option="basic")
        sb.add_integer_field("key", indexed=True, fast=True)
        sb.add_text_field("content", tokenizer_name="en_stem", index_option="freq")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema, path=str(directory))
        self._analyzer = analyzer()
        self.keys = keys or KeyTable()
        # The key of the one partition whose texts it holds (None: the first one added).
        self._partition: str | None = None if partition is None else partition_key(partition)
        self._writer: Any = None
        self._dirty = False  # writer operations not yet committed
        self._pending: dict[int, tuple[Counter[str], int]] = {}  # key -> (term counts, length), in order
        self._pending_df: Counter[str] = Counter()  # term -> uncommitted texts holding it
        self._hidden: set[int] = set()  # keys whose committed document is outdated
        self._since: float | None = None  # when the first uncommitted change came
        # A deleted memory's document stays in its segment (its words in the term
        # dictionary and postings) until tantivy merges the segment, which nothing here can
        # make it do: an erasure rebuilds the index instead (``IndexSet.scrub``).
        self.deleted_documents = False
        self.index.reload()
        self._searcher = self.index.searcher()

    def _w(self) -> Any:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        return self._writer

    @property
    def has_writer(self) -> bool:
        return self._writer is not None

    @property
    def dirty(self) -> bool:
        """Whether changes wait for a commit."""
        return self._dirty

    def release_writer(self) -> None:
        """Close the writer (its arena and threads) after a commit; the next change opens one."""
        self.commit()
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None

    def _changed(self) -> None:
        self._dirty = True
        if self._since is None:
            self._since = time.monotonic()

    def _own(self, partition: Partition) -> str:
        """The partition's key; an index holds one partition's texts (searches rely on it)."""
        pk = partition_key(partition)
        if self._partition is None:
            self._partition = pk
        elif pk != self._partition:
            raise ValueError("a lexical index holds one partition's texts")
        return pk

    def apply(self, partition: Partition, changed: Sequence[str], rows: Iterable[IndexRow]) -> None:
        """Bring ``changed`` ids of the partition to ``rows`` (their current rows; an id
        without one is deleted). Rows whose text did not change cost nothing."""
        pk = self._own(partition)
        current = {r.id: r for r in rows}
        for mid in changed:
            row = current.get(mid)
            k = self.keys.key.get(mid)
            if row is None:
                if k is not None and self.keys.live[k]:
                    self._w().delete_documents_by_term("key", k)
                    self.deleted_documents = True
                    self.keys.kill(k)
                    self._hidden.add(k)
                    self._unpend(k)
                    self._changed()
                continue
            ck = text_key(row.content)
            if k is not None and self.keys.live[k] and self.keys.chash[k] == ck:
                continue
            # An edit's old text also stays in its segment until a merge; an edit is not
            # an erasure, so it does not count as a deleted document.
            k = self.keys.get_or_add(mid)
            w = self._w()
            w.delete_documents_by_term("key", k)
            w.add_document(self._t.Document(part=pk, key=k, content=row.content))
            terms = self._analyzer.analyze(row.content)
            self.keys.set_live(k, ck, len(terms))
            self._hidden.add(k)
            self._pend(k, Counter(terms), len(terms))
            self._changed()

    def _pend(self, k: int, counts: Counter[str], length: int) -> None:
        old = self._pending.get(k)
        if old is not None:  # a text changed twice before a commit: it keeps its place
            self._pending_df.subtract(old[0].keys())
        self._pending[k] = (counts, length)
        self._pending_df.update(counts.keys())

    def _unpend(self, k: int) -> None:
        old = self._pending.pop(k, None)
        if old is not None:
            self._pending_df.subtract(old[0].keys())

    def add_all(self, partition: Partition, texts: Iterable[tuple[str, str]]) -> None:
        """Add a partition's (id, text) pairs (a fresh build); visible after :meth:`commit`."""
        pk = self._own(partition)
        w = self._w()
        for mid, text in texts:
            k = self.keys.get_or_add(mid)
            if self.keys.live[k]:
                w.delete_documents_by_term("key", k)
            w.add_document(self._t.Document(part=pk, key=k, content=text))
            self.keys.set_live(k, text_key(text), len(self._analyzer.analyze(text)))
            self._changed()

    def commit(self) -> None:
        """Make applied changes part of the index (and durable in its files)."""
        if self._dirty:
            self._w().commit()
            self._dirty = False
            self.index.reload()
            self._searcher = self.index.searcher()
        self._pending.clear()
        self._pending_df.clear()
        self._hidden.clear()
        self._since = None

    def maybe_commit(self) -> None:
        """Commit when enough changes have gathered, or the oldest has waited long enough."""
        if self._since is not None and (len(self._hidden) >= self.COMMIT_DOCS
                                        or time.monotonic() - self._since >= self.COMMIT_SECONDS):
            self.commit()

    def close(self) -> None:
        self.commit()
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None

    def _statistics(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """The number of texts and each term's document frequency: the committed index's
        and the uncommitted texts' together."""
        searcher = self._searcher
        n_docs = searcher.num_docs + len(self._pending)
        df = {t: searcher.doc_freq("content", t) + self._pending_df[t] for t in terms}
        return n_docs, df

    def _pending_hits(self, terms: list[str], n_docs: int, df: dict[str, int]) -> list[tuple[int, float]]:
        """BM25 of the uncommitted texts, with the index's statistics."""
        mine = []
        for key, (counts, length) in self._pending.items():
            if any(t in counts for t in terms):
                mine.append((key, counts, length))
        if not mine:
            return []
        mean_length = self.keys.mean_length()
        out = []
        for key, counts, length in mine:
            score = 0.0
            norm = self.K1 * (1 - self.B + self.B * length / mean_length)
            for t in terms:
                tf = counts.get(t, 0)
                if tf:
                    score += idf(n_docs, df[t]) * tf * (self.K1 + 1) / (tf + norm)
            out.append((key, score))
        return out

    def _query(self, terms: list[str], n_docs: int, df: dict[str, int],
               only: list[int] | None = None) -> Any:
        """The partition's texts holding any of the terms, each term's BM25 weighted by
        FTS5's idf over tantivy's (tantivy computes its own from the committed index)."""
        t = self._t
        searcher = self._searcher
        should = []
        for term in terms:
            committed = searcher.doc_freq("content", term)
            if not committed:
                continue
            q = t.Query.term_query(self.schema, "content", term, index_option="freq")
            boost = idf(n_docs, df[term]) / lucene_idf(searcher.num_docs, committed)
            should.append((t.Occur.Should, t.Query.boost_query(q, boost)))
        if not should:
            return None
        # Every document is the partition's (``_own``): no clause requires it, which leaves the
        # query a pure disjunction that block-max WAND prunes (a partition of a million
        # texts: p50 1.18 -> 0.69 ms, the same hits and scores).
        words = t.Query.boolean_query(should)
        if only is None:
            return words
        # These documents only: the others are never scored.
        ids = t.Query.const_score_query(t.Query.term_set_query(self.schema, "key", only), 0.0)
        return t.Query.boolean_query([(t.Occur.Must, words), (t.Occur.Must, ids)])

    def search(self, partition: Partition, text: str, k: int,
               accept: Callable[[list[str]], np.ndarray] | None = None,
               only: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """Top-k (id, BM25 score) of the partition for the OR of the text's words, best
        first. ``accept`` (ids -> bool mask) drops memories a filter hides: the head asked
        of the index grows until k are accepted or no match is left. ``only``: score these
        memories alone (a filter's short id list), whatever else matches."""
        words = query_words(text)
        if not words or k <= 0:
            return []
        if partition_key(partition) != self._partition:
            return []  # another partition's texts are never here
        terms = list(dict.fromkeys(self._analyzer.analyze(" ".join(words))))
        n_docs, df = self._statistics(terms)
        only_keys = None if only is None else [key for m in only if (key := self.keys.key.get(m)) is not None]
        if only_keys == []:
            return []
        query = self._query(terms, n_docs, df, only_keys)
        pending = self._pending_hits(terms, n_docs, df) if self._pending else []
        # With a filter, enough hits that k pass it if it keeps its share of them (1.5x).
        share = getattr(accept, "share", 0.25)
        head = (k if accept is None else min(max(k + 10, math.ceil(1.5 * k / max(share, 1e-3))), 50 * k + 1000)) \
            + len(self._hidden)  # outdated documents may fill the head
        searcher = self._searcher
        while True:
            hits = searcher.search(query, head, count=False).hits if query is not None else []
            keys = searcher.fast_field_values("key", [a for _, a in hits]) if hits else []
            found = [(int(key), float(s)) for key, (s, _) in zip(keys, hits)  # type: ignore[arg-type]
                     if int(key) not in self._hidden]  # type: ignore[arg-type]
            merged = sorted(found + pending, key=lambda h: -h[1])
            ids = [self.keys.ids[key] for key, _ in merged]
            scores = [s for _, s in merged]
            if accept is None:
                return list(zip(ids, scores))[:k]
            ok = accept(ids) if ids else np.zeros(0, dtype=bool)
            kept = [(mid, s) for mid, s, good in zip(ids, scores, ok) if good]
            if len(kept) >= k or len(hits) < head:
                return kept[:k]
            head *= 4

    @staticmethod
    def remove_files(directory: Path) -> None:
        shutil.rmtree(directory, ignore_errors=True)
