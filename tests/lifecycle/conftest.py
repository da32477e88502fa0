"""Fixtures for the lifecycle tests: a coordinator on a temporary SQLite file with a
simulated clock and the hashing embedder, built with all mechanisms on or with some off,
plus small helpers that set up state directly through the store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from zenbrain.api import open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.coordinator import MemoryCoordinator
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams
from zenbrain.model import Edge, MemoryItem, Scope
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.registry import Mechanisms

T0 = 1_700_000_000.0
DIM = 64


@dataclass
class World:
    """One memory store, its clock and a scope."""

    mem: MemoryCoordinator
    clock: SimulatedClock
    scope: Scope

    @property
    def part(self) -> tuple[str, str]:
        return (self.scope.user_id, self.scope.agent_id)

    def store(self, content: str, **kw: Any) -> MemoryItem:
        return self.mem.store(content, kw.pop("scope", self.scope), **kw)

    def get(self, mid: str) -> MemoryItem:
        return self.mem.storage.get(self.part, [mid])[0]

    def set(self, mid: str, **cols: Any) -> None:
        with self.mem.storage.transaction() as tx:
            tx.update_columns(self.part, [mid], **{k: [v] for k, v in cols.items()})

    def set_state(self, mid: str, **keys: Any) -> None:
        st = dict(self.get(mid).state)
        st.update(keys)
        with self.mem.storage.transaction() as tx:
            tx.update_states(self.part, {mid: st})

    def edges(self) -> dict[tuple[str, str, str], Edge]:
        return {(e.src, e.dst, e.relation): e for e in self.mem.storage.edges(self.part)}

    def put_edges(self, edges: Sequence[Edge]) -> None:
        with self.mem.storage.transaction() as tx:
            tx.put_edges(self.part, list(edges))

    def clear_edges(self) -> None:
        keys = list(self.edges())
        with self.mem.storage.transaction() as tx:
            tx.delete_edges(self.part, keys)

    def kv(self, key: str) -> Any:
        return self.mem.storage.kv_get(self.part, key)

    def kv_put(self, key: str, value: Any) -> None:
        with self.mem.storage.transaction() as tx:
            tx.kv_put(self.part, {key: value})


@pytest.fixture
def world(tmp_path: Path) -> Callable[..., World]:
    """``world()`` with every mechanism on; ``world("name", ...)`` with those switched off."""
    made: list[World] = []

    def make(*off: str, seed: int = 0, name: str | None = None, value_aware: bool = True,
             ebbinghaus: EbbinghausParams | None = None) -> World:
        """``value_aware=False``: decay archives every faded memory (the paper's rule);
        ``ebbinghaus``: other decay parameters."""
        clock = SimulatedClock(T0)
        ebb = ebbinghaus or (EbbinghausParams() if value_aware else EbbinghausParams(low_information_words=0.0))
        params = {"ebbinghaus_decay": ebb}
        config = Config(mechanisms=Mechanisms().without(*off), seed=seed, params=params)
        path = tmp_path / f"{name or ('on' if not off else 'off')}-{len(made)}.db"
        mem = open_memory(path, embedder=HashingEmbedder(DIM), clock=clock, config=config)
        w = World(mem, clock, Scope("alice"))
        made.append(w)
        return w

    yield make
    for w in made:
        w.mem.close()
