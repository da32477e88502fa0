"""zenbrain: a long-term memory engine for LLM agents."""

from .clock import Clock, SimulatedClock, SystemClock
from .errors import (
    ConfigError,
    NotFoundError,
    ProviderError,
    ScopeError,
    StorageError,
    UnknownLayerError,
    ValidationError,
    ZenBrainError,
)
from .model import Edge, Kind, Layer, MemoryItem, RecallHit, Scope, ScoreBreakdown
from .registry import ALL_MECHANISMS, Mechanisms

__version__ = "0.1.0"

__all__ = [
    "Clock",
    "SimulatedClock",
    "SystemClock",
    "ZenBrainError",
    "ValidationError",
    "ScopeError",
    "UnknownLayerError",
    "ConfigError",
    "NotFoundError",
    "StorageError",
    "ProviderError",
    "Edge",
    "Kind",
    "Layer",
    "MemoryItem",
    "RecallHit",
    "Scope",
    "ScoreBreakdown",
    "ALL_MECHANISMS",
    "Mechanisms",
]
