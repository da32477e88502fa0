"""Read-only stores: ``open_memory(path, read_only=True)`` reads without writing a byte of
the store, recall leaves its hits untouched, every write is refused with
``ReadOnlyStoreError``; a file or folder that cannot be written is refused for writing
with an error that says so and opens read-only.

The tests run as root here, and root ignores file permissions, so a ``chmod`` alone
would prove nothing. Two things enforce read-only for real instead: SQLite's own
``mode=ro`` (the read-only store's connections are opened so; a write through them fails
inside SQLite, which the tests try), and, for unwritable files and folders, a forked
child that gives up root (effective uid ``nobody``) before opening, so the kernel checks
the permission bits again. Without root the permission bits are enforced anyway."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from zenbrain import ReadOnlyStoreError, Scope, StorageError, open_memory

EMB = "hashing:384"
ANA = Scope("ana")
NOBODY = 65534


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_store(path: Path) -> dict[str, str]:
    with open_memory(path, embedder=EMB) as mem:
        ids = {text: mem.store(text, ANA).id for text in
               ("Ana keeps bees in the orchard", "The market opens at 7am on Saturdays", "Ana's sister lives in Lyon")}
    return ids


def test_a_read_only_store_reads_and_writes_nothing(tmp_path: Path):
    path = tmp_path / "m.db"
    ids = make_store(path)
    before = digest(path)
    with open_memory(path, embedder=EMB, read_only=True) as mem:
        assert mem.read_only
        hits = mem.recall("when does the market open?", ANA, k=3)  # touch is forced off
        assert hits[0].id == ids["The market opens at 7am on Saturdays"]
        assert [r[0].id for r in mem.recall_many(["bees", "Lyon"], ANA, k=1)] == [
            ids["Ana keeps bees in the orchard"], ids["Ana's sister lives in Lyon"]]
        assert mem.get(hits[0].id, ANA).access_count == 0
        assert mem.stats(ANA)["memories"] == 3
        assert "7am" in mem.assemble_prompt("when does the market open?", ANA)["text"]
        assert mem.storage.check().ok
        writes: list[Callable[[], Any]] = [
            lambda: mem.store("a new memory", ANA),
            lambda: mem.forget(hits[0].id, ANA),
            lambda: mem.update(hits[0].id, ANA, importance=0.9),
            lambda: mem.review(hits[0].id, ANA, "good"),
            lambda: mem.sleep(ANA),
        ]
        for write in writes:
            with pytest.raises(ReadOnlyStoreError, match="read-only"):
                write()
        # Not only zenbrain's own check: the connections themselves cannot write.
        con = mem.storage.raw_connection()
        con.execute("PRAGMA query_only=0")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            con.execute("DELETE FROM memories")
    assert digest(path) == before
    with open_memory(path, embedder=EMB) as mem:
        assert len(mem.list_memories(ANA)) == 3


def test_a_read_only_store_sees_what_a_writer_commits_meanwhile(tmp_path: Path):
    path = tmp_path / "m.db"
    make_store(path)
    with open_memory(path, embedder=EMB) as writer, open_memory(path, embedder=EMB, read_only=True) as reader:
        assert len(reader.list_memories(ANA)) == 3
        new = writer.store("Ana bought a second hive", ANA)
        assert reader.recall("second hive", ANA, k=1)[0].id == new.id


def test_a_read_only_store_does_not_upgrade_an_old_schema(tmp_path: Path):
    path = tmp_path / "m.db"
    make_store(path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DELETE FROM schema_migrations WHERE name='0007_valid_time'")
    con.close()
    with pytest.raises(StorageError, match="older zenbrain.*0007_valid_time.*open it once for writing"):
        open_memory(path, embedder=EMB, read_only=True)


# --------------------------------------------------------------------------- unwritable files


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the unprivileged child can reach (pytest's own temporary folders are private to root)."""
    d = Path(tempfile.mkdtemp(prefix="zenbrain-ro-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        d.chmod(0o755)
        shutil.rmtree(d, ignore_errors=True)


def _as_unprivileged(path: str, out: Any) -> None:
    """In a forked child: give up root, then open the store for writing and read-only."""
    try:
        with open_memory(path, embedder=EMB, read_only=True) as warm:  # imports everything while root may
            warm.recall("bees", ANA, k=1)
        if os.geteuid() == 0:
            os.setegid(NOBODY)
            os.seteuid(NOBODY)
        result: dict[str, Any] = {}
        try:
            open_memory(path, embedder=EMB).close()
            result["write"] = "opened"
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            result["write"] = f"{type(exc).__name__}: {exc}"
        with open_memory(path, embedder=EMB, read_only=True) as mem:
            result["hits"] = [h.content for h in mem.recall("who keeps bees?", ANA, k=1)]
            try:
                mem.store("must not land", ANA)
                result["store"] = "stored"
            except Exception as exc:  # noqa: BLE001
                result["store"] = f"{type(exc).__name__}: {exc}"
        out.put(result)
    except Exception as exc:  # noqa: BLE001
        out.put({"error": f"{type(exc).__name__}: {exc}"})


def _create_as_unprivileged(path: str, out: Any) -> None:
    """In a forked child: give up root, then try to create a new store."""
    try:
        if os.geteuid() == 0:
            os.setegid(NOBODY)
            os.seteuid(NOBODY)
        open_memory(path, embedder=EMB).close()
        out.put({"create": "created"})
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        out.put({"create": f"{type(exc).__name__}: {exc}"})


def run_unprivileged(path: Path, target: Callable[[str, Any], None] = _as_unprivileged) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=target, args=(str(path), out))
    child.start()
    result = out.get(timeout=120)
    child.join(timeout=60)
    return result


@pytest.mark.parametrize("what", ["file", "folder"])
def test_an_unwritable_store_is_refused_for_writing_and_opens_read_only(shared_dir: Path, what: str):
    path = shared_dir / "m.db"
    make_store(path)
    # closed cleanly: no WAL left (beside it only the search indexes' folder)
    assert sorted(f for f in os.listdir(shared_dir) if not f.endswith(".idx")) == ["m.db"]
    before = digest(path)
    if os.geteuid() == 0:  # the child's own file and folder: only the mode bits below stop it writing
        os.chown(shared_dir, NOBODY, NOBODY)
        os.chown(path, NOBODY, NOBODY)
    if what == "file":
        path.chmod(0o444)
    else:
        shared_dir.chmod(0o555)  # the file is writable, but SQLite cannot make its WAL beside it
    result = run_unprivileged(path)
    assert "error" not in result, result
    reason = "the file is read-only" if what == "file" else "folder .* is read-only"
    assert result["write"].startswith("ReadOnlyStoreError"), result
    assert "cannot be written" in result["write"] and "read_only=True" in result["write"]
    assert re.search(reason, result["write"]), result["write"]
    assert result["hits"] == ["Ana keeps bees in the orchard"]
    assert result["store"].startswith("ReadOnlyStoreError") and "read-only" in result["store"]
    assert digest(path) == before


def test_a_new_store_in_a_read_only_folder_is_refused_saying_so(shared_dir: Path):
    shared_dir.chmod(0o555)
    result = run_unprivileged(shared_dir / "new.db", _create_as_unprivileged)
    assert result["create"].startswith("ReadOnlyStoreError") and "folder" in result["create"], result
    assert "read-only" in result["create"]
    assert os.listdir(shared_dir) == []
