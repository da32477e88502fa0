"""The entry point: opening a memory. The facade, ``MemoryCoordinator``, is re-exported here
for the layers built on it (the async facade, ingestion, framework adapters)."""

from __future__ import annotations

import os
from typing import Any

from .clock import Clock
from .config import Config
from .coordinator import MemoryCoordinator
from .errors import ConfigError
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
    create: bool | None = None,
    read_only: bool = False,
    **store_options: Any,
) -> MemoryCoordinator:
    """Open (or create) a memory store and return its coordinator.

    ``path`` is a SQLite file (the default: ``$ZENBRAIN_PATH`` or ``~/.zenbrain/memory.db``)
    or a PostgreSQL URL (``postgresql://user@host/db``; needs ``zenbrain[postgres]``).

    ``embedder`` is an Embedder or a spec such as ``"minilm-onnx"`` (the default,
    see ``zenbrain.providers.factory``), ``"minilm"``, ``"hashing:384"`` or
    ``"openai:text-embedding-3-small@https://host/v1"``.

    ``create``: None (default) creates a new store where nothing is at ``path`` yet; True
    also makes a store of an existing empty file; False only opens an existing store. A
    file that is not a zenbrain store (another application's database, not SQLite) is
    never written to: ``NotAStoreError``. ``read_only=True`` opens an existing store
    without writing anything (recall does not touch its hits; a write raises
    ``ReadOnlyStoreError``); a store whose file or folder cannot be written must be
    opened so.
    """
    from .storage.locations import is_postgres, open_store
    from .storage.sqlite import SQLiteStore
    from .storage.sqlite.opening import check

    target = str(path or default_path())
    if target != ":memory:" and not is_postgres(target):
        check(target, create=create, read_only=read_only)  # refuse a file that is not a store before loading a model
    emb = _resolve_embedder(embedder)
    if is_postgres(target):
        if read_only:
            raise ConfigError("read_only is for SQLite stores; a PostgreSQL role without write grants is the "
                              "PostgreSQL way")
        store = open_store(target, embedder_name=emb.name, dim=emb.dim, **store_options)
    else:
        store = SQLiteStore(target, embedder_name=emb.name, dim=emb.dim, create=create, read_only=read_only,
                            **store_options)
    return MemoryCoordinator(store, emb, config=config, clock=clock)


__all__ = ["MemoryCoordinator", "default_path", "open_memory"]
