"""Erasure that is complete on disk (or says it is not yet), and statistics that are each
user's own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from zenbrain import ErasurePendingError, Scope, SimulatedClock, open_memory
from zenbrain.providers.hashing import HashingEmbedder

T0 = 1_700_000_000.0
MARKER = "zqvkmarker4417"
SECRET = f"my locker code is {MARKER}"


def _files_with(path: Path, needle: str) -> list[str]:
    found = []
    for suffix in ("", "-wal"):
        p = Path(str(path) + suffix)
        if p.exists() and needle.encode() in p.read_bytes():
            found.append(p.name)
    return found


def test_erasure_with_a_reader_holding_a_snapshot_is_pending_until_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    scope = Scope("alice")
    with open_memory(path, embedder=HashingEmbedder(64), scrub_wait_s=0.2) as mem:
        mem.store_many([{"content": f"an ordinary note {i}"} for i in range(20)], scope)
        item = mem.store(SECRET, scope)
        reader = sqlite3.connect(path, isolation_level=None)  # another program reading the file
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchone()
        with pytest.raises(ErasurePendingError) as info:
            mem.forget(item.id, scope)
        receipt = info.value.receipt
        assert receipt.memory_ids == (item.id,) and receipt.scrubbed is False
        assert item.id not in [m.id for m in mem.list_memories(scope)]  # erased for every reader of the library
        assert _files_with(path, MARKER)  # but its bytes are still on disk: not reported as done
        assert mem.storage.scrub(0.0) is False
        reader.execute("COMMIT")
        reader.close()
        assert mem.storage.scrub() is True
        assert _files_with(path, MARKER) == []


def test_a_pending_scrub_is_finished_by_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    scope = Scope("alice")
    with open_memory(path, embedder=HashingEmbedder(64), scrub_wait_s=0.1) as mem:
        item = mem.store(SECRET, scope)
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchone()
        with pytest.raises(ErasurePendingError):
            mem.forget(item.id, scope)
        reader.execute("COMMIT")
        reader.close()
        mem.store("an unrelated later memory", scope)  # any later write completes it
        assert _files_with(path, MARKER) == []
        assert mem.storage.check().scrub_pending is False


def test_stats_are_computed_over_the_scope_only(tmp_path: Path) -> None:
    """What Alice sees must not change when Bob stores the same text, or anything at all."""
    emb = HashingEmbedder(64)
    alice, bob = Scope("alice"), Scope("bob")
    with open_memory(tmp_path / "a.db", embedder=emb, clock=SimulatedClock(T0)) as lonely, \
            open_memory(tmp_path / "b.db", embedder=emb, clock=SimulatedClock(T0)) as shared:
        for mem in (lonely, shared):
            mem.store_many([{"content": "Alice takes her tea with lemon"}, {"content": "Alice lives in Lyon"}], alice)
        shared.store_many([{"content": "Alice takes her tea with lemon"}]  # the exact text, by another user
                          + [{"content": f"Bob's note {i} " + "padding " * 50} for i in range(200)], bob)
        assert lonely.stats(alice) == shared.stats(alice)
        assert "file_bytes" not in shared.stats(alice)
        assert shared.stats(bob)["cached_embeddings"] == 201  # each user counts the vectors they use
        assert shared.stats()["cached_embeddings"] == 202  # the operator sees the whole file


def test_rest_stats_are_each_users_own(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from live_server import LiveServer

    from zenbrain.server.rest import create_app

    mem = open_memory(tmp_path / "rest.db", embedder=HashingEmbedder(64))
    server = LiveServer(create_app(mem))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            before = c.get("/v1/stats", params={"user_id": "alice"}).json()
            for i in range(30):
                assert c.post("/v1/memories", params={"user_id": "bob"},
                              json={"content": f"bob's secret number {i}"}).status_code == 201
            after = c.get("/v1/stats", params={"user_id": "alice"}).json()
            assert before == after and "file_bytes" not in after
    finally:
        server.stop()
        mem.close()
