"""Fixtures for the integration tests: coordinators opened through the public entry point
on a temporary file, a simulated clock and a deterministic hashing embedder.

Every mechanism test runs one scenario twice, once with the default configuration and
once with the mechanism switched off by name, each run in its own store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from zenbrain.api import open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.coordinator import MemoryCoordinator
from zenbrain.providers.hashing import HashingEmbedder

T0 = 1_700_000_000.0

Opener = Callable[..., tuple[MemoryCoordinator, SimulatedClock]]


@pytest.fixture
def open_coord(tmp_path) -> Iterator[Opener]:
    """``open_coord(config, label, dim=384)`` -> (coordinator, clock), each label its own store."""
    opened: list[MemoryCoordinator] = []

    def _open(config: Config | None = None, label: str = "run", *, dim: int = 384) -> tuple[MemoryCoordinator, SimulatedClock]:
        folder = tmp_path / label
        folder.mkdir(exist_ok=False)
        clock = SimulatedClock(T0)
        coord = open_memory(folder / "m.db", embedder=HashingEmbedder(dim), clock=clock, config=config or Config())
        opened.append(coord)
        return coord, clock

    yield _open
    for coord in opened:
        coord.close()
