"""Where a store lives: a SQLite file path, or a PostgreSQL URL (``postgresql://...``).

``open_memory``, the CLI (``--path``), the REST and MCP servers and ``zenbrain migrate``
resolve a location here, so every entry point accepts both.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from ..errors import StorageError
from .base import Store

URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str | os.PathLike[str]) -> bool:
    return str(location).startswith(URL_SCHEMES)


def open_store(location: str | os.PathLike[str], *, embedder_name: str, dim: int, **options: Any) -> Store:
    """The store at ``location`` (created when there is none)."""
    if is_postgres(location):
        from .postgres import PostgresStore

        return PostgresStore(str(location), embedder_name=embedder_name, dim=dim, **options)
    from .sqlite import SQLiteStore

    return SQLiteStore(location, embedder_name=embedder_name, dim=dim, **options)


def exists(location: str | os.PathLike[str]) -> bool:
    """Whether a store has been created at ``location`` (a PostgreSQL database that is
    reachable and holds the store's tables)."""
    if not is_postgres(location):
        return os.path.exists(location)
    return recorded_embedder(location) is not None


def recorded_embedder(location: str | os.PathLike[str]) -> str | None:
    """The embedder a store was created with (from its meta table), or None."""
    meta = recorded_meta(location)
    return None if meta is None else meta[0]


def recorded_meta(location: str | os.PathLike[str]) -> tuple[str, int] | None:
    """The embedder and vector dimension a store was created with, or None (no store)."""
    rows = _meta_rows(location)
    try:
        return (rows["embedder"], int(rows["dim"])) if rows and "embedder" in rows else None
    except (KeyError, ValueError):
        return None


def _meta_rows(location: str | os.PathLike[str]) -> dict[str, str] | None:
    if is_postgres(location):
        return _postgres_meta_rows(str(location))
    if not os.path.exists(location):
        return None
    try:
        lite = sqlite3.connect(f"file:{location}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        return dict(lite.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error:
        return None
    finally:
        lite.close()


def _postgres_meta_rows(url: str) -> dict[str, str] | None:
    try:
        import psycopg
    except ImportError:
        return None
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            found = conn.execute("SELECT to_regclass('meta')").fetchone()
            if found is None or found[0] is None:
                return None
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except psycopg.OperationalError as exc:
        raise StorageError(f"cannot reach the PostgreSQL store: {exc}") from exc
    except psycopg.Error:
        return None
