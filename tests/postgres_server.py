"""A PostgreSQL server for the tests: started once per test session from the ``pgserver``
wheel (PostgreSQL 16 with pgvector, private, on a Unix socket), or an external one named by
``$ZENBRAIN_TEST_POSTGRES_URL``. Every store a test opens lives in a schema of its own.

Without the wheel and without the variable the PostgreSQL variants of the tests skip,
except under CI (``$CI``), where they must run.
"""

from __future__ import annotations

import atexit
import os
import re
import tempfile
import threading

import pytest

URL_ENV = "ZENBRAIN_TEST_POSTGRES_URL"
_lock = threading.Lock()
_state: dict[str, object] = {}


def _start_private_server() -> str:
    import pgserver

    pgdata = tempfile.mkdtemp(prefix="zenbrain-pg-")
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    _state["server"] = server
    url = server.get_uri()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        # A test server: durability is not what is tested here, speed is welcome. Old WAL
        # segments are removed rather than recycled, so erased text leaves pg_wal too.
        for name, value in (("fsync", "off"), ("synchronous_commit", "off"), ("full_page_writes", "off"),
                            ("wal_recycle", "off")):
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
    _state["pgdata"] = pgdata
    return url


def server_url() -> str:
    """The server's URL (starting it on first use); skips the test when there is none."""
    with _lock:
        if "url" not in _state:
            try:
                url = os.environ.get(URL_ENV) or _start_private_server()
                import psycopg

                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                _state["url"] = url
            except Exception as exc:  # noqa: BLE001 - no wheel, no server: any failure means the same
                _state["url"] = None
                _state["error"] = f"{type(exc).__name__}: {exc}"
        url = _state["url"]
    if url is None:
        if os.environ.get("CI"):
            raise RuntimeError(f"PostgreSQL is needed under CI: {_state['error']}")
        pytest.skip(f"no PostgreSQL server ({_state['error']}); install pgserver or set ${URL_ENV}")
    return str(url)


def data_dir() -> str | None:
    """The private server's data directory (None for an external server)."""
    server_url()
    return _state.get("pgdata")  # type: ignore[return-value]


def files_containing(url: str, needle: str) -> dict[str, int]:
    """The files of the store at ``url`` whose bytes contain needle (case-insensitive): its
    schema's tables, indexes and TOAST, and the server's WAL, once a checkpoint has written
    everything out and the WAL has moved to a new segment (the old ones are removed: the
    test server does not recycle them). Skips the test on an external server."""
    import psycopg

    root = data_dir()
    if root is None:
        pytest.skip("an external PostgreSQL server: its files are not the test's to read")
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute("CHECKPOINT")
        pg.execute("SELECT pg_switch_wal()")
        pg.execute("CHECKPOINT")
        rels = pg.execute(
            "WITH own AS (SELECT oid, reltoastrelid FROM pg_class WHERE relnamespace = current_schema()::regnamespace) "
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid IN (SELECT oid FROM own) "
            "OR c.oid IN (SELECT reltoastrelid FROM own) "
            "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT reltoastrelid FROM own))").fetchall()
    files = {}
    listed: dict[str, list[str]] = {}
    for name, rel in rels:
        if rel is None:
            continue
        folder, base = os.path.split(os.path.join(root, rel))
        if folder not in listed:
            listed[folder] = os.listdir(folder)
        for f in listed[folder]:
            if f == base or f.startswith(base) and re.fullmatch(re.escape(base) + r"(\.\d+|_fsm|_vm|_init)", f):
                files[os.path.join(folder, f)] = f"{name} ({f})"
    wal = os.path.join(root, "pg_wal")
    for f in os.listdir(wal):
        if os.path.isfile(os.path.join(wal, f)):
            files[os.path.join(wal, f)] = f"pg_wal/{f}"
    out = {}
    low = needle.lower().encode()
    for p, label in files.items():
        with open(p, "rb") as fh:
            c = fh.read().lower().count(low)
        if c:
            out[label] = c
    return out


def new_schema_url(prefix: str = "t") -> str:
    """A URL whose tables land in a new, empty schema."""
    from zenbrain.storage.postgres.schemas import create_schema

    schema, url = create_schema(server_url(), prefix)
    _state.setdefault("schemas", [])
    _state["schemas"].append(schema)  # type: ignore[union-attr]
    return url


def schema_of(url: str) -> str:
    from urllib.parse import unquote

    opts = unquote(url.split("options=", 1)[1])
    return opts.split("search_path=", 1)[1].split(",", 1)[0]


@atexit.register
def _drop_schemas() -> None:
    """An external server keeps nothing of the tests (a private one is deleted whole)."""
    if "server" in _state or not _state.get("url") or not _state.get("schemas"):
        return
    try:
        import psycopg

        with psycopg.connect(str(_state["url"]), autocommit=True) as conn:
            for schema in _state["schemas"]:  # type: ignore[union-attr]
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    except Exception as exc:  # noqa: BLE001 - at exit: a report is all that is left to do
        print(f"could not drop the test schemas: {exc}")
