"""Is a PostgreSQL store's database there and usable? For ``/health`` and ``zenbrain check``.

The check opens a connection of its own (never one of the pool, which may be busy with
requests, or hold connections the server has dropped since), with a short connect timeout,
and reads the server's version, pgvector's, and the store's applied migrations. It needs no
embedder and works on a database the store would refuse to open.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from .migrations import MIGRATIONS
from .transaction import SCRUB_PENDING

try:
    import psycopg
except ImportError as _exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f'the PostgreSQL store needs psycopg ({_exc}): pip install "zenbrain[postgres]"') from _exc

CONNECT_TIMEOUT_S = 3  # libpq's connect_timeout is whole seconds (and at least 2)


@dataclass
class DatabaseHealth:
    """What a health check found. ``ok``: reachable, and every migration this zenbrain
    knows is applied and none it does not know (a database it can serve as it is)."""

    ok: bool
    reachable: bool
    latency_ms: float | None = None
    server_version: str | None = None
    pgvector_version: str | None = None
    migration_version: int | None = None  # the highest applied, 0 for an empty schema
    migration_name: str | None = None
    migrations_expected: int = len(MIGRATIONS)
    scrubs_pending: int | None = None
    problem: str | None = None
    pool: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_database(url: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> DatabaseHealth:
    """Connect to ``url`` on a connection of its own and read what the store needs there."""
    t0 = time.perf_counter()
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=max(2, int(timeout_s))) as conn:
            conn.execute(f"SET statement_timeout = {int(timeout_s * 1000)}")
            server = conn.execute("SHOW server_version").fetchone()
            vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            has_table = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            applied: list[tuple[int, str]] = []
            pending = None
            if has_table and has_table[0]:
                applied = [(int(v), str(n)) for v, n in
                           conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")]
                if conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
                    pending = int(conn.execute("SELECT COUNT(*) FROM meta WHERE key LIKE %s",
                                               (SCRUB_PENDING + "%",)).fetchone()[0])  # type: ignore[index]
    except psycopg.Error as exc:
        return DatabaseHealth(ok=False, reachable=False,
                              problem=f"the database is unreachable: {type(exc).__name__}: {str(exc).strip()}")
    latency = round((time.perf_counter() - t0) * 1e3, 1)
    out = DatabaseHealth(ok=True, reachable=True, latency_ms=latency, server_version=server[0] if server else None,
                         pgvector_version=vector[0] if vector else None, scrubs_pending=pending)
    if applied:
        out.migration_version, out.migration_name = applied[-1]
    else:
        out.migration_version = 0
    known = {name for name, _ in MIGRATIONS}
    unknown = sorted(n for _, n in applied if n not in known)
    missing = [n for n, _ in MIGRATIONS if n not in {a for _, a in applied}]
    if vector is None:
        out.ok, out.problem = False, "the vector extension (pgvector) is not installed in this database"
    elif unknown:
        out.ok, out.problem = False, f"written by a newer zenbrain (migrations {unknown}); upgrade zenbrain"
    elif missing:
        out.ok, out.problem = False, (f"{len(missing)} migration(s) not applied ({', '.join(missing)}): no zenbrain "
                                      "store here yet, or one of an older zenbrain; opening it migrates it")
    return out
