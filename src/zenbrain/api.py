"""The entry point: opening a memory. The facade, ``MemoryCoordinator``, is re-exported here
for the layers built on it (the async facade, ingestion, framework adapters)."""

from __future__ import annotations

import os
from typing import Any

from .clock import Clock
from .config import Config
from .coordinator import MemoryCoordinator
from .providers.base import Embedder


def default_path() -> str:
    return os.environ.get("ZENBRAIN_PATH", os.path.join(os.path.expanduser("~"), ".zenbrain", "memory.db"))


def _resolve_embedder(embedder: Embedder | str | None) -> Embedder:
    if embedder is None or isinstance(embedder, str):
        from .providers.factory import make_embedder

        return make_embedder(embedder or os.environ.get("ZENBRAIN_EMBEDDER") or None)
    return embedder


def open_memory(
    path: str | os.PathLike[str] | None = None,
    *,
    embedder: Embedder | str | None = None,
    config: Config | None = None,
    clock: Clock | None = None,
    **store_options: Any,
) -> MemoryCoordinator:
    """Open (or create) a memory store and return its coordinator.

    ``path`` is a SQLite file (the default: ``$ZENBRAIN_PATH`` or ``~/.zenbrain/memory.db``)
    or a PostgreSQL URL (``postgresql://user@host/db``; needs ``zenbrain[postgres]``).

    ``embedder`` is an Embedder or a spec such as ``"minilm-onnx"`` (the default,
    see ``zenbrain.providers.factory``), ``"minilm"``, ``"hashing:384"`` or
    ``"openai:text-embedding-3-small@https://host/v1"``.
    """
    from .storage.locations import open_store

    emb = _resolve_embedder(embedder)
    store = open_store(path or default_path(), embedder_name=emb.name, dim=emb.dim, **store_options)
    return MemoryCoordinator(store, emb, config=config, clock=clock)


__all__ = ["MemoryCoordinator", "default_path", "open_memory"]
