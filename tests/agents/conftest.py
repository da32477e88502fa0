"""Fixtures for the agent-facing layer: stores on temporary files with a fast deterministic
embedder and a simulated clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from zenbrain import MemoryCoordinator, SimulatedClock, open_memory
from zenbrain.providers.hashing import HashingEmbedder

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
DIM = 64


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[Callable[..., MemoryCoordinator]]:
    """Open coordinators on files in a temporary folder; every one is closed at teardown."""
    opened: list[MemoryCoordinator] = []

    def make(name: str = "memory.db", *, clock: SimulatedClock | None = None) -> MemoryCoordinator:
        m = open_memory(tmp_path / name, embedder=HashingEmbedder(DIM), clock=clock or SimulatedClock(T0))
        opened.append(m)
        return m

    yield make
    for m in opened:
        m.close()  # closing twice is harmless
