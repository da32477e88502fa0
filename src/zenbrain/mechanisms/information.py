"""How much a memory says, relative to the rest of its store.

    information(m) = sum over the distinct words w of m of idf(w),   idf(w) = ln((N + 1) / (df(w) + 0.5))

with ``N`` memories in the store and ``df(w)`` of them containing ``w``. Words every memory
uses ("thanks", "so", "the") carry almost nothing; names, places, numbers and rare words
carry most. ``relative_information`` divides by the store's median, so "less than half of a
typical memory" means the same in a store of fifty memories and one of fifty thousand, in
any language the tokeniser splits into words. Decay uses it to tell small talk ("Thanks,
that's so sweet!") from statements worth keeping (``pipeline.lifecycle.decay``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["information", "relative_information"]


def information(token_sets: Sequence[Iterable[str]]) -> np.ndarray:
    """The summed inverse document frequency of each memory's distinct words, the
    frequencies counted over ``token_sets`` themselves (one set per memory)."""
    sets = [frozenset(t) for t in token_sets]
    n = len(sets)
    if n == 0:
        return np.zeros(0)
    df = Counter(w for s in sets for w in s)
    idf = {w: float(np.log((n + 1.0) / (d + 0.5))) for w, d in df.items()}
    return np.fromiter((sum(idf[w] for w in s) for s in sets), dtype=float, count=n)


def relative_information(token_sets: Sequence[Iterable[str]]) -> np.ndarray:
    """``information`` divided by its median over the same memories (1 = a typical memory);
    all ones when the median is 0 (nothing to tell the memories apart by)."""
    info = information(token_sets)
    if info.size == 0:
        return info
    med = float(np.median(info))
    return info / med if med > 0 else np.ones_like(info)
