"""zenbrain: a long-term memory engine for LLM agents.

    from zenbrain import open_memory, Scope
    memory = open_memory("memory.db")
    memory.store("Alice prefers tea over coffee", Scope("alice"))
    hits = memory.recall("what does Alice drink?", Scope("alice"))

The names below are imported from their modules on first use (PEP 562), so that
``import zenbrain`` (and the ``zenbrain`` command's start-up) costs next to nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "AsyncMemory": "aio",
    "open_async_memory": "aio",
    "open_memory": "api",
    "Clock": "clock",
    "SimulatedClock": "clock",
    "SystemClock": "clock",
    "Config": "config",
    "LayerParams": "config",
    "RecallParams": "config",
    "MemoryCoordinator": "coordinator",
    "ConfigError": "errors",
    "DamagedStoreError": "errors",
    "ErasurePendingError": "errors",
    "NotFoundError": "errors",
    "ProviderError": "errors",
    "ScopeError": "errors",
    "StorageError": "errors",
    "StoreClosedError": "errors",
    "UnknownLayerError": "errors",
    "ValidationError": "errors",
    "ZenBrainError": "errors",
    "Edge": "model",
    "HistoryEvent": "model",
    "Kind": "model",
    "Layer": "model",
    "MemoryItem": "model",
    "RecallHit": "model",
    "Scope": "model",
    "ScoreBreakdown": "model",
    "ErasureReceipt": "pipeline.erase",
    "ALL_MECHANISMS": "registry",
    "Mechanisms": "registry",
    "RecallResult": "results",
    "Report": "results",
}

__all__ = [
    "ALL_MECHANISMS",
    "AsyncMemory",
    "Clock",
    "Config",
    "ConfigError",
    "DamagedStoreError",
    "Edge",
    "ErasurePendingError",
    "ErasureReceipt",
    "HistoryEvent",
    "Kind",
    "Layer",
    "LayerParams",
    "Mechanisms",
    "MemoryCoordinator",
    "MemoryItem",
    "NotFoundError",
    "ProviderError",
    "RecallHit",
    "RecallParams",
    "RecallResult",
    "Report",
    "Scope",
    "ScopeError",
    "ScoreBreakdown",
    "SimulatedClock",
    "StorageError",
    "StoreClosedError",
    "SystemClock",
    "UnknownLayerError",
    "ValidationError",
    "ZenBrainError",
    "open_async_memory",
    "open_memory",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zenbrain' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next access is a plain attribute lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from .aio import AsyncMemory, open_async_memory
    from .api import open_memory
    from .clock import Clock, SimulatedClock, SystemClock
    from .config import Config, LayerParams, RecallParams
    from .coordinator import MemoryCoordinator
    from .errors import (
        ConfigError,
        DamagedStoreError,
        ErasurePendingError,
        NotFoundError,
        ProviderError,
        ScopeError,
        StorageError,
        StoreClosedError,
        UnknownLayerError,
        ValidationError,
        ZenBrainError,
    )
    from .model import (
        Edge,
        HistoryEvent,
        Kind,
        Layer,
        MemoryItem,
        RecallHit,
        Scope,
        ScoreBreakdown,
    )
    from .pipeline.erase import ErasureReceipt
    from .registry import ALL_MECHANISMS, Mechanisms
    from .results import RecallResult, Report
