"""zenbrain: a long-term memory engine for LLM agents.

    from zenbrain import open_memory, Scope
    memory = open_memory("memory.db")
    memory.store("Alice prefers tea over coffee", Scope("alice"))
    hits = memory.recall("what does Alice drink?", Scope("alice"))
"""

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

__version__ = "0.1.0"

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
