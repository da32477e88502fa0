"""Several stores in one PostgreSQL database, one schema each: a URL whose connections
put their tables in a given schema, and creating and dropping such schemas (benchmarks
give each run a fresh store; tests give each test one)."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import psycopg
from psycopg import sql


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (then public, where pgvector usually lives)."""
    options = quote(f"-c search_path={schema},public", safe="")
    return url + ("&" if "?" in url else "?") + f"options={options}"


def create_schema(url: str, prefix: str = "zb") -> tuple[str, str]:
    """A new, empty schema in the database of ``url``: (its name, a URL that uses it)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return name, with_schema(url, name)


def drop_schema(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
