"""The embedded default store: one SQLite file (see ``store``)."""

from .lexical import fts_query
from .store import SQLiteStore

__all__ = ["SQLiteStore", "fts_query"]
