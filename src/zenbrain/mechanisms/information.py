"""How much a memory says, measured against the rest of its store.

    information(m) = sum over the distinct words w of m of idf(w),   idf(w) = ln((N + 1) / (df(w) + 0.5))

with ``N`` memories in the store and ``df(w)`` of them containing ``w``. Words every memory
uses ("thanks", "so", "the") carry almost nothing; names, places, numbers and rare words
carry most.

**The unit.** ``information_words`` divides by ``word_unit(N) = ln((N + 1) / 1.5)``, the idf of
a word the store holds once: a memory "says k words" when its information equals that of k
words nobody else said. The unit grows with the store exactly as every idf does, so the
measure does not move when the store grows, and it does not move with what the store is
full of: injecting chatter that doubles a conversation's store leaves the median of its
own turns where it was (``docs/experiments.md`` section 10). A reference taken from the store's
own median (``relative_information``) drifts instead: once chatter is most of the store,
the median memory is chatter.

Decay uses ``information_words`` to tell small talk ("Thanks, that's so sweet!") from
statements worth keeping, and recall uses ``InformationReference.shared_words`` to decide whether a recall
rehearsed a hit (``pipeline.lifecycle.decay``, ``pipeline.recall_effects``). Both read
the document frequencies through an ``InformationReference``, which the nightly decay
saves for recall.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "InformationReference",
    "information",
    "information_words",
    "rehearses",
    "relative_information",
    "word_unit",
]


def word_unit(n: int) -> float:
    """The idf of a word that one of ``n`` memories holds: the unit of ``information_words``."""
    return math.log((max(0, n) + 1.0) / 1.5)


@dataclass(frozen=True)
class InformationReference:
    """Document frequencies of a store's words: what ``information`` needs to price any text."""

    n: int
    df: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, token_sets: Sequence[Iterable[str]]) -> InformationReference:
        sets = [frozenset(t) for t in token_sets]
        return cls(len(sets), dict(Counter(itertools.chain.from_iterable(sets))))

    def idf(self, word: str) -> float:
        return math.log((self.n + 1.0) / (self.df.get(word, 0) + 0.5))

    def words(self, tokens: Iterable[str]) -> float:
        """The information of the distinct ``tokens`` in words said once (see the module)."""
        unit = word_unit(self.n)
        return sum(self.idf(w) for w in set(tokens)) / unit if unit > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "df": dict(self.df)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> InformationReference:
        """From ``to_dict``'s output; the frequency map is used as it is (not copied)."""
        df = raw.get("df")
        return cls(int(raw.get("n", 0)), df if isinstance(df, Mapping) else {})

    def with_sets(self, token_sets: Sequence[Iterable[str]]) -> InformationReference:
        """The frequencies with these memories' words counted as well: the same as ``of``
        over the memories counted before and these, without reading the former again."""
        if not token_sets:
            return self
        df = Counter(self.df)
        df.update(itertools.chain.from_iterable(frozenset(s) for s in token_sets))
        return InformationReference(self.n + len(token_sets), dict(df))

    def without(self, token_sets: Sequence[Iterable[str]]) -> InformationReference:
        """The frequencies with these memories' words taken out (an erased memory's words
        must not outlive it, not even as a count)."""
        df = dict(self.df)
        for s in token_sets:
            for w in frozenset(s):
                left = df.get(w, 0) - 1
                if left > 0:
                    df[w] = left
                else:
                    df.pop(w, None)
        return InformationReference(max(0, self.n - len(token_sets)), df)

    def shared_words(self, a: Iterable[str], b: Iterable[str]) -> float:
        """What two texts' common words say, in words said once: how much a recall with
        words ``a`` carried to a memory with words ``b``."""
        return self.words(set(a) & set(b))


def rehearses(reference: InformationReference, query: Iterable[str], memory: Iterable[str], *,
               min_shared: float) -> bool:
    """Whether a recall with words ``query`` that found a memory with words ``memory`` is
    practice of that memory: what their common words say reaches ``min_shared`` words said
    once. Small talk finding small talk shares words every piece of small talk uses and
    falls short; a question sharing a memory's rare words reaches it, however short."""
    return reference.shared_words(query, memory) >= min_shared


def information(token_sets: Sequence[Iterable[str]], reference: InformationReference | None = None) -> np.ndarray:
    """The summed inverse document frequency of each memory's distinct words, the
    frequencies counted over ``token_sets`` themselves (one set per memory) unless a
    ``reference`` is given."""
    sets = [frozenset(t) for t in token_sets]
    if not sets:
        return np.zeros(0)
    ref = reference or InformationReference.of(sets)
    idf = {w: ref.idf(w) for w in set().union(*sets)}
    return np.fromiter((sum(map(idf.__getitem__, s)) for s in sets), dtype=float, count=len(sets))


def information_words(token_sets: Sequence[Iterable[str]], reference: InformationReference | None = None) -> np.ndarray:
    """``information`` in words said once: divided by ``word_unit`` of the reference's size."""
    sets = [frozenset(t) for t in token_sets]
    ref = reference or InformationReference.of(sets)
    unit = word_unit(ref.n)
    info = information(sets, ref)
    return info / unit if unit > 0 else np.zeros_like(info)


def relative_information(token_sets: Sequence[Iterable[str]]) -> np.ndarray:
    """``information`` divided by its median over the same memories (1 = a typical memory);
    all ones when the median is 0 (nothing to tell the memories apart by). This reference
    moves with what the store is full of; decay uses ``information_words`` instead."""
    info = information(token_sets)
    if info.size == 0:
        return info
    med = float(np.median(info))
    return info / med if med > 0 else np.ones_like(info)
