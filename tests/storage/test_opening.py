"""What a store opens: its own files only. Another application's database, a file that is
not SQLite, a folder or (unless creating a store was asked for) an empty file is refused
with ``NotAStoreError``, and not one byte is written to it or beside it."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import sqlite3
from pathlib import Path

import pytest

from zenbrain import NotAStoreError, Scope, open_memory
from zenbrain.errors import ConfigError
from zenbrain.storage.sqlite.opening import FileKind, identify

EMB = "hashing:384"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def foreign_db(path: Path, *, wal: bool = False) -> Path:
    """Another application's SQLite database (closed: no WAL beside it)."""
    con = sqlite3.connect(path, isolation_level=None)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users (name) VALUES ('ana')")
    con.close()
    return path


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
@pytest.mark.parametrize("options", [{}, {"create": True}, {"create": False}, {"read_only": True}],
                         ids=["default", "create", "existing-only", "read-only"])
def test_another_applications_database_is_refused_and_left_untouched(tmp_path: Path, wal: bool, options: dict):
    db = foreign_db(tmp_path / "app.db", wal=wal)
    before = digest(db)
    with pytest.raises(NotAStoreError, match=r"not a zenbrain store.*another application \(tables: users\)"):
        open_memory(db, embedder=EMB, **options)
    assert digest(db) == before
    assert sorted(os.listdir(tmp_path)) == ["app.db"]  # no WAL, no shared memory, no half-made store beside it


def test_a_file_that_is_not_sqlite_or_a_folder_is_refused(tmp_path: Path):
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: eggs, flour\n" * 20)
    with pytest.raises(NotAStoreError, match="not an SQLite database"):
        open_memory(notes, embedder=EMB, create=True)
    assert notes.read_text() == "shopping: eggs, flour\n" * 20
    with pytest.raises(NotAStoreError, match="is a folder"):
        open_memory(tmp_path, embedder=EMB)


@pytest.mark.parametrize("empty_db", [False, True], ids=["0-byte", "sqlite-without-tables"])
def test_an_empty_file_becomes_a_store_only_when_asked(tmp_path: Path, empty_db: bool):
    path = tmp_path / "new.db"
    if empty_db:  # a database another tool created and left without a table
        con = sqlite3.connect(path)
        con.execute("PRAGMA user_version=0")
        con.execute("VACUUM")
        con.close()
    else:
        path.touch()
    before = path.read_bytes()
    for options in ({}, {"create": False}, {"read_only": True}):
        with pytest.raises(NotAStoreError, match="empty file.*zenbrain init"):
            open_memory(path, embedder=EMB, **options)
        assert path.read_bytes() == before
    with open_memory(path, embedder=EMB, create=True) as mem:
        mem.store("Ana keeps bees", Scope("ana"))
    assert identify(str(path)).kind is FileKind.STORE
    with open_memory(path, embedder=EMB, create=False) as mem:
        assert [i.content for i in mem.list_memories(Scope("ana"))] == ["Ana keeps bees"]


def test_a_free_path_is_created_by_default_and_refused_when_only_existing_stores_may_open(tmp_path: Path):
    missing = tmp_path / "sub" / "none.db"
    with pytest.raises(NotAStoreError, match="no memory store at"):
        open_memory(missing, embedder=EMB, create=False)
    with pytest.raises(NotAStoreError, match="no memory store at"):
        open_memory(missing, embedder=EMB, read_only=True)
    assert not (tmp_path / "sub").exists()  # not even its folder
    with pytest.raises(ConfigError, match="create or read_only"):
        open_memory(missing, embedder=EMB, create=True, read_only=True)
    with open_memory(missing, embedder=EMB) as mem:
        assert mem.stats()["memories"] == 0
    assert sorted(os.listdir(tmp_path / "sub")) == ["none.db"]  # the hidden file it was built in is gone
    assert identify(str(missing)).kind is FileKind.STORE


def _open_new_path(path: str, barrier, out) -> None:
    barrier.wait()
    try:
        with open_memory(path, embedder=EMB) as mem:
            mem.store(f"written by process {os.getpid()}", Scope("ana"))
        out.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_one_new_path_at_once_all_get_the_same_complete_store(tmp_path: Path):
    """A new store appears whole (built beside the path, then linked to it): a process that
    finds the path taken never sees an empty, half-made file, which it would refuse."""
    path = str(tmp_path / "race.db")
    ctx = mp.get_context("fork")
    n = 4
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_open_new_path, args=(path, barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok"] * n
    with open_memory(path, embedder=EMB, create=False) as mem:
        assert len(mem.list_memories(Scope("ana"))) == n
    assert [f for f in os.listdir(tmp_path) if f.endswith(".new")] == []
