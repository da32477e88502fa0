"""zenbrain itself as a benchmark system: every document becomes an episodic memory."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from ..clock import SimulatedClock
from ..config import Config
from ..coordinator import MemoryCoordinator
from ..ids import seeded_ids
from ..model import Kind, Layer, Scope
from ..providers.base import Embedder
from ..storage.locations import is_postgres, open_store
from .base import Doc


class ZenBrainSystem:
    """Ingests docs as episodic memories (speaker, session date and doc id in metadata)
    and answers with ``MemoryCoordinator.recall``. Recall is the real one, side effects
    included, so what one question does to memory can affect the next, as in use.

    ``store``: None keeps the memories in a temporary SQLite file; a PostgreSQL URL keeps
    them in that database, every reset in a fresh schema that is dropped afterwards."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        config: Config | None = None,
        name: str = "zenbrain",
        workdir: str | None = None,
        touch: bool = True,
        store: str | None = None,
    ) -> None:
        self.name = name
        self.embedder = embedder
        self.config = config or Config()
        self.touch = touch
        self.store_url = store if store is not None and is_postgres(store) else None
        self._schema: str | None = None
        self._own_dir = workdir is None
        self._dir = workdir or tempfile.mkdtemp(prefix="zenbrain-bench-")
        self._n = 0
        self.scope = Scope("bench")
        self.clock = SimulatedClock()
        self._open()

    def _open(self) -> None:
        self._n += 1
        location = os.path.join(self._dir, f"store-{self._n}.db")
        if self.store_url is not None:
            from ..storage.postgres.schemas import create_schema

            self._schema, location = create_schema(self.store_url, prefix="zb_bench")
        store = open_store(location, embedder_name=self.embedder.name, dim=self.embedder.dim)
        self.memory = MemoryCoordinator(store, self.embedder, config=self.config, clock=self.clock)
        self._doc_of: dict[str, str] = {}
        self._adds = 0

    def _drop_schema(self) -> None:
        if self.store_url is not None and self._schema is not None:
            from ..storage.postgres.schemas import drop_schema

            drop_schema(self.store_url, self._schema)
            self._schema = None

    def reset(self) -> None:
        old = self.memory
        old.close()
        self._drop_schema()
        for suffix in ("", "-wal", "-shm"):
            p = os.path.join(self._dir, f"store-{self._n}.db{suffix}")
            if os.path.exists(p):
                os.remove(p)
        self._open()

    def add(self, docs: Sequence[Doc]) -> None:
        if not docs:
            return
        latest = max((d.time for d in docs if d.time is not None), default=None)
        if latest is not None and latest > self.clock.now():
            # The conversation happened in the past: let "now" be just after its last turn.
            self.clock.set(latest + 3600.0)
        # Each conversation session is stored as the session it was, its turns in order, as
        # an application that records a conversation would.
        sessions: dict[str | None, list[Doc]] = {}
        for d in docs:
            sessions.setdefault(d.session, []).append(d)
        # Ids from a generator seeded by the config's seed, the store and the batch: a rerun
        # stores the same ids, so every tie broken by id falls the same way (which memories
        # of equal last access a new one links to, and what recall makes of those links).
        self._adds += 1
        with seeded_ids(hash((self.config.seed, self._n, self._adds))):  # ints hash alike in every run
            self._add_sessions(sessions)

    def _add_sessions(self, sessions: dict[str | None, list[Doc]]) -> None:
        for session, part in sessions.items():
            records = []
            for d in part:
                meta: dict[str, Any] = {"doc_id": d.id}
                if d.session:
                    meta["session"] = d.session
                rec: dict[str, Any] = dict(content=d.text, kind=Kind.EPISODE, layer=Layer.EPISODIC, metadata=meta,
                                           event_time=d.time)
                if d.speaker:
                    rec["speaker"] = d.speaker
                records.append(rec)
            scope = self.scope if session is None else self.scope.with_session(str(session))
            for item in self.memory.store_many(records, scope):
                self._doc_of[item.id] = item.metadata["doc_id"]

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        hits = self.memory.recall(query, self.scope, k=k, touch=self.touch)
        return [self._doc_of[h.item.id] for h in hits if h.item.id in self._doc_of]

    def close(self) -> None:
        self.memory.close()
        self._drop_schema()
        if self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)
