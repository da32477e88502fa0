"""One exception tree for everything zenbrain raises on purpose.

Catch ``ZenBrainError`` to catch them all. Every error that comes from bad input
is raised before anything is written, so a failed call changes nothing.
"""

from __future__ import annotations

from typing import Any


class ZenBrainError(Exception):
    """Root of every error raised by zenbrain."""


class ValidationError(ZenBrainError, ValueError):
    """Input that zenbrain refuses: empty or non-text content, bad metadata, non-finite numbers, ..."""


class ScopeError(ValidationError):
    """A scope (user, agent, session, context) that is missing, malformed or not allowed."""


class UnknownLayerError(ValidationError):
    """A layer name that is not one of the seven layers."""


class ConfigError(ZenBrainError, ValueError):
    """A configuration value outside its legal bounds, or an unknown mechanism name."""


class NotFoundError(ZenBrainError, KeyError):
    """A memory, edge or snapshot id that does not exist in this scope."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class StorageError(ZenBrainError):
    """The storage backend failed (locked database, corrupt file, schema too new, ...)."""


class DamagedStoreError(StorageError):
    """The store's file is damaged (failed an integrity check, or SQLite found it
    malformed). The store refuses further writes into it; the message says how to recover."""


class StoreClosedError(StorageError):
    """An operation on a store (or memory) that has been closed."""


class ErasurePendingError(StorageError):
    """An erasure committed, but erased text could not yet be scrubbed from the files
    (another connection still reads an older snapshot). The scrub completes at a later
    write or ``scrub()``; ``receipt`` says what was erased."""

    def __init__(self, message: str, receipt: Any) -> None:
        super().__init__(message)
        self.receipt = receipt  # a zenbrain.ErasureReceipt (not imported here: its module imports this one)


class ProviderError(ZenBrainError):
    """An embedder or LLM provider failed or is not installed."""


__all__ = [
    "ConfigError",
    "DamagedStoreError",
    "ErasurePendingError",
    "NotFoundError",
    "ProviderError",
    "ScopeError",
    "StorageError",
    "StoreClosedError",
    "UnknownLayerError",
    "ValidationError",
    "ZenBrainError",
]
