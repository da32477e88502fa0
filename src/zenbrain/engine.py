"""The engine context: everything an operation of the pipeline works with.

``MemoryCoordinator`` builds one ``Engine`` and hands it to the operations in
``zenbrain.pipeline``; they never see the facade. The engine holds the store, the
embedder, the optional chat model, the configuration, the clock and the random
generator, and the two embedding caches that every operation shares.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .clock import Clock
from .config import Config
from .providers.base import ChatModel, Embedder, embed_queries
from .registry import MechanismName
from .storage.base import Store
from .text import content_hash

QUERY_CACHE_SIZE = 2048  # query vectors kept in memory: a query repeated within a session is embedded once


@dataclass
class Embedded:
    """Vectors of a batch of texts, and those of them that were not cached yet."""

    vectors: np.ndarray  # (n, dim) float32, in the order of the texts
    hashes: list[str]  # content hash of every text
    fresh: dict[str, np.ndarray]  # hash -> vector, to be written to the store's cache


@dataclass
class Engine:
    """The explicit context of every pipeline operation."""

    store: Store
    embedder: Embedder
    config: Config
    clock: Clock
    chat: ChatModel | None
    rng: np.random.Generator
    _queries: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict, repr=False)

    def on(self, mechanism: MechanismName) -> bool:
        """Whether a mechanism (by its registry name) is switched on."""
        return self.config.mechanisms.on(mechanism)

    def embed_texts(self, texts: Sequence[str]) -> Embedded:
        """Vectors for texts through the store's content-hash cache: each distinct text not
        cached yet is embedded once, in one batch."""
        hashes = [content_hash(t) for t in texts]
        cached = self.store.cached_embeddings(self.embedder.name, hashes)
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts):
            if h not in cached and h not in missing:
                missing[h] = t
        fresh: dict[str, np.ndarray] = {}
        if missing:
            fresh = dict(zip(missing.keys(), self.embedder.embed(list(missing.values()))))
        if not texts:
            return Embedded(np.zeros((0, self.embedder.dim), np.float32), hashes, fresh)
        out = np.stack([cached[h] if h in cached else fresh[h] for h in hashes])
        return Embedded(out.astype(np.float32, copy=False), hashes, fresh)

    def embed_query(self, query: str) -> np.ndarray:
        """A query's vector, from a small in-memory LRU when it was asked recently."""
        v = self._queries.get(query)
        if v is None:
            v = embed_queries(self.embedder, [query])[0]
            self._queries[query] = v
            if len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        else:
            self._queries.move_to_end(query)
        return v
