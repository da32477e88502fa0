"""The engine context: everything an operation of the pipeline works with.

``MemoryCoordinator`` builds one ``Engine`` and hands it to the operations in
``zenbrain.pipeline``; they never see the facade. The engine holds the store, the
embedder, the optional chat model, the configuration, the clock and the random
generator, and the two embedding caches that every operation shares.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .clock import Clock
from .config import Config
from .providers.base import ChatModel, Embedder, embed_queries
from .registry import MechanismName
from .storage.base import Store

QUERY_CACHE_SIZE = 2048  # query vectors kept in memory: a query repeated within a session is embedded once


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
