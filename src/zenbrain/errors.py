"""One exception tree for everything zenbrain raises on purpose.

Catch ``ZenBrainError`` to catch them all. Every error that comes from bad input
is raised before anything is written, so a failed call changes nothing.
"""

from __future__ import annotations


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


class ProviderError(ZenBrainError):
    """An embedder or LLM provider failed or is not installed."""


__all__ = [
    "ConfigError",
    "NotFoundError",
    "ProviderError",
    "ScopeError",
    "StorageError",
    "UnknownLayerError",
    "ValidationError",
    "ZenBrainError",
]
