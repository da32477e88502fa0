"""The engine context: everything an operation of the pipeline works with.

``MemoryCoordinator`` builds one ``Engine`` and hands it to the operations in
``zenbrain.pipeline``; they never see the facade. The engine holds the store, the
embedder, the optional chat model, the configuration, the clock and the random
generator, and the two embedding caches that every operation shares.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .clock import Clock
from .config import Config
from .providers.base import ChatModel, Embedder, embed_queries, releases_gil
from .registry import MechanismName
from .storage.base import Store

QUERY_CACHE_SIZE = 2048  # query vectors kept in memory: a query repeated within a session is embedded once
QUERY_BATCH = 256  # queries embedded ahead in one batch (well within the LRU)


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
    _background: ThreadPoolExecutor | None = field(default=None, repr=False)
    _background_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _background_pid: int = field(default=0, repr=False)

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only (reads leave no trace, writes are refused)."""
        return bool(getattr(self.store, "read_only", False))

    def on(self, mechanism: MechanismName) -> bool:
        """Whether a mechanism (by its registry name) is switched on."""
        return self.config.mechanisms.on(mechanism)

    def embed_query(self, query: str) -> np.ndarray:
        """A query's vector, from a small in-memory LRU when it was asked recently."""
        v = self._queries.get(query)
        if v is None:
            v = self._remember(query, embed_queries(self.embedder, [query])[0])
        else:
            self._queries.move_to_end(query)
        return v

    def query_vector_soon(self, query: str) -> QueryVector:
        """A query's vector, now or soon. When the embedder does its work outside Python's GIL
        (``releases_gil``: native inference, a network call) and the query is not in the LRU,
        it is embedded in a background thread from now on (``pending``), so the caller's work
        that does not need the vector (a recall's keyword search) runs meanwhile on the other
        core; calling the result waits for it. Otherwise it is embedded at once, as
        ``embed_query``."""
        if query in self._queries or not releases_gil(self.embedder):
            v = self.embed_query(query)
            return QueryVector(lambda: v, pending=False)
        with self._background_lock:
            # A forked child inherits the pool but not its thread: work sent there would wait forever.
            if self._background is None or self._background_pid != os.getpid():
                self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zenbrain-query")
                self._background_pid = os.getpid()
            future = self._background.submit(embed_queries, self.embedder, [query])
        return QueryVector(lambda: self._remember(query, future.result()[0]), pending=True)

    def embed_queries_ahead(self, queries: Sequence[str]) -> None:
        """Embed in one batch the queries that are not in the LRU (at most
        ``QUERY_BATCH`` at a time, so that none leaves it before it is recalled): a batch of
        short texts costs the embedder far less a text than one call each."""
        todo = list(dict.fromkeys(q for q in queries if q not in self._queries))
        if len(todo) > QUERY_BATCH:
            raise ValueError(f"at most {QUERY_BATCH} queries ahead at a time")
        if todo:
            for q, v in zip(todo, embed_queries(self.embedder, todo)):
                self._remember(q, v)

    def _remember(self, query: str, v: np.ndarray) -> np.ndarray:
        self._queries[query] = v
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return v

    def close(self) -> None:
        """Stop the background thread, if one was started (the store is closed by its owner)."""
        with self._background_lock:
            if self._background is not None and self._background_pid == os.getpid():
                self._background.shutdown(wait=True)
            self._background = None


class QueryVector:
    """A query's vector: call it to have it (waiting for a background embedding if ``pending``)."""

    def __init__(self, get: Callable[[], np.ndarray], *, pending: bool) -> None:
        self._get = get
        self.pending = pending

    def __call__(self) -> np.ndarray:
        return self._get()
