"""The PostgreSQL store (pgvector, BM25 over per-partition statistics, JSONB): see ``store``."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
