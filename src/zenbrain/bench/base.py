"""What every system compared in a benchmark implements: add documents, search them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Doc:
    """One retrievable unit (a dialogue turn, a fact)."""

    id: str
    text: str
    time: float | None = None  # event time, seconds since the Unix epoch
    speaker: str | None = None
    session: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class RetrievalSystem(Protocol):
    """A memory system under test. ``search`` returns doc ids, best first."""

    name: str

    def reset(self) -> None:
        """Forget everything (start of a new conversation or question)."""
        ...

    def add(self, docs: Sequence[Doc]) -> None:
        ...

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        ...

    def close(self) -> None:
        ...
