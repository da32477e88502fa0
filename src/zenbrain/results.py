"""Result records returned by coordinator operations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import MemoryItem, RecallHit


class RecallResult(list):
    """The top-k hits, best first, plus what recall understood about the query.

    ``core`` holds the scope's pinned core memories, which are always available to
    the caller whether or not they ranked among the hits.
    """

    def __init__(self, hits: list[RecallHit], *, query_type: str, core: list[MemoryItem], info: dict[str, Any]):
        super().__init__(hits)
        self.query_type = query_type
        self.core = core
        self.info = info


@dataclass
class Report:
    """What an operation (decay, consolidate, sleep, ...) changed, stage by stage."""

    operation: str
    at: float
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stage(self, name: str) -> dict[str, Any]:
        return self.stages.setdefault(name, {})

    def as_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "at": self.at, "stages": self.stages}
