"""Health of a PostgreSQL store: ``/health`` reports the database (reachable, migration
version, pool) and answers 503 while the database refuses connections; ``zenbrain check``
on a URL reports the same and exits 1 when the database is not ready."""

from __future__ import annotations

import socket
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest
from postgres_server import new_schema_url, server_url

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
psycopg = pytest.importorskip("psycopg")

from live_server import LiveServer

from zenbrain import open_memory
from zenbrain.cli import main
from zenbrain.server.rest import create_app
from zenbrain.storage.postgres.health import check_database
from zenbrain.storage.postgres.migrations import MIGRATIONS

EMB = "hashing:64"


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    return f"postgresql://zenbrain@127.0.0.1:{port}/zenbrain"


def _in_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + dbname))


@pytest.fixture
def own_database():
    """A database of its own on the test server, so that it can be closed to connections
    (``ALLOW_CONNECTIONS false`` and its sessions ended) without touching other tests."""
    admin = server_url()
    name = f"zb_health_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def set_open(allow: bool) -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allow).lower()}')
            if not allow:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))

    yield _in_database(admin, name), set_open
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_health_reports_the_database_and_fails_while_it_refuses_connections(own_database):
    url, set_open = own_database
    mem = open_memory(url, embedder=EMB)
    server = LiveServer(create_app(mem))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            r = c.get("/health")
            assert r.status_code == 200, r.text
            body = r.json()
            db = body["database"]
            assert body["status"] == "ok" and db["ok"] and db["reachable"]
            assert db["migration_version"] == len(MIGRATIONS) == db["migrations_expected"]
            assert db["migration_name"] == MIGRATIONS[-1][0]
            assert db["server_version"] and db["pgvector_version"]
            assert db["pool"]["max"] == 8 and 1 <= db["pool"]["size"] <= 8
            assert c.post("/v1/memories", params={"user_id": "u"}, json={"content": "tea at noon"}).status_code == 201

            set_open(False)
            r = c.get("/health")
            assert r.status_code == 503, r.text
            body = r.json()
            assert body["status"] == "unavailable"
            assert body["database"]["reachable"] is False and body["database"]["ok"] is False
            assert "unreachable" in body["database"]["problem"] and "not currently accepting connections" in \
                body["database"]["problem"]
            assert "memories" not in body  # nothing was counted from a database that is not there
            assert c.post("/v1/recall", params={"user_id": "u"}, json={"query": "tea"}).status_code == 503

            set_open(True)
            r = c.get("/health")
            assert r.status_code == 200 and r.json()["database"]["ok"], r.text
    finally:
        server.stop()
        mem.close()


def test_an_authenticated_server_names_no_address_in_its_health_answer():
    from fastapi.testclient import TestClient

    mem = open_memory(new_schema_url("health"), embedder=EMB)
    mem.storage.url = _closed_port_url()  # the checks now go to a port where nothing listens
    try:
        with TestClient(create_app(mem, api_keys={"key-a": "alice"})) as c:
            r = c.get("/health")
        assert r.status_code == 503
        assert r.json()["database"]["problem"] == "the database is unreachable"
        assert "127.0.0.1" not in r.text
    finally:
        mem.close()


def test_check_database_on_a_closed_port_an_empty_schema_and_a_store():
    down = check_database(_closed_port_url(), timeout_s=2)
    assert not down.ok and not down.reachable and down.problem.startswith("the database is unreachable")

    url = new_schema_url("check")
    empty = check_database(url)
    assert empty.reachable and not empty.ok and empty.migration_version == 0
    assert "not applied" in empty.problem
    mem = open_memory(url, embedder=EMB)
    try:
        ready = check_database(url)
        assert ready.ok and ready.migration_version == len(MIGRATIONS) and ready.scrubs_pending == 0
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, '9999_from_the_future')",
                         (len(MIGRATIONS) + 1,))
        newer = check_database(url)
        assert not newer.ok and "newer zenbrain" in newer.problem
    finally:
        mem.close()


def test_zenbrain_check_on_a_url(capsys):
    url = new_schema_url("check")
    assert main(["init", "--path", url, "--embedder", EMB]) == 0
    capsys.readouterr()
    assert main(["check", "--path", url]) == 0
    out = capsys.readouterr().out
    assert f"migrations: {len(MIGRATIONS)} of {len(MIGRATIONS)}" in out and "result:     ok" in out
    assert main(["check", _closed_port_url()]) == 1
    out = capsys.readouterr().out
    assert "NOT READY: the database is unreachable" in out
