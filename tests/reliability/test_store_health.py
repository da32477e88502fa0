"""The store under faults: a writer killed with SIGKILL, a damaged file, a full disk, a
rollback that fails, a closed store. Each ends in zenbrain's own errors, with nothing
acknowledged lost and nothing written into a damaged file."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zenbrain import (
    DamagedStoreError,
    Scope,
    StorageError,
    StoreClosedError,
    open_memory,
)
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.storage.sqlite.health import check_file

SRC = Path(__file__).resolve().parents[2] / "src"
EMB = HashingEmbedder(64)
SCOPE = Scope("alice")

WRITER = textwrap.dedent("""
    import sys
    from zenbrain import Scope, open_memory
    from zenbrain.providers.hashing import HashingEmbedder
    mem = open_memory(sys.argv[1], embedder=HashingEmbedder(64))
    i = 0
    while True:  # store, then acknowledge: every id printed has been committed
        item = mem.store(f"note number {i} written before the crash", Scope("alice"))
        print(item.id, flush=True)
        i += 1
""")


def _kill_writer_midway(path: Path, acknowledged: int) -> list[str]:
    """Run a writer in another process, SIGKILL it after ``acknowledged`` acknowledged
    stores (it keeps writing meanwhile); the ids it acknowledged."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, env=env, text=True)
    ids = []
    assert proc.stdout is not None
    while len(ids) < acknowledged:
        line = proc.stdout.readline()
        assert line, "the writer died early"
        ids.append(line.strip())
    proc.send_signal(signal.SIGKILL)
    ids += [line.strip() for line in proc.stdout.read().splitlines() if line.strip()]  # acknowledged before the kill
    proc.wait()
    return ids


def test_every_acknowledged_store_survives_kill_9_and_the_file_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    ids = _kill_writer_midway(path, 40)
    assert os.path.getsize(str(path) + "-wal") > 0  # killed: nobody closed it
    with open_memory(path, embedder=EMB) as mem:
        assert mem.storage.opened_unclean  # so it ran the integrity check before use
        stored = {m.id for m in mem.list_memories(SCOPE)}
        assert set(ids) <= stored
        assert mem.storage.check().ok
        assert mem.recall("note number 7 written before the crash", SCOPE, k=1)[0].content.startswith("note number 7")
    with open_memory(path, embedder=EMB) as mem:
        assert not mem.storage.opened_unclean  # closed cleanly this time


def _damage(path: Path) -> None:
    """Overwrite everything after the first page (the schema) with garbage."""
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(4096)
        f.write(b"\xab" * (size - 4096))


def test_a_file_damaged_after_a_crash_is_refused_on_open(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    with open_memory(path, embedder=EMB) as mem:
        mem.store_many([{"content": f"memory {i} with some words"} for i in range(300)], SCOPE)
        mem.storage.raw_connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _kill_writer_midway(path, 3)  # leaves a WAL behind: the next opener checks the file
    _damage(path)
    with pytest.raises(DamagedStoreError, match="zenbrain check"):
        open_memory(path, embedder=EMB)
    report = check_file(path)
    assert not report.ok and report.problems
    salvage = open_memory(path, embedder=EMB, allow_damaged=True)  # for reading what is left
    try:
        with pytest.raises(DamagedStoreError):
            salvage.store("nothing more goes into a damaged file", SCOPE)
    finally:
        salvage.close()


def test_a_damaged_file_is_refused_even_after_a_clean_close(tmp_path: Path) -> None:
    path = tmp_path / "rot.db"
    with open_memory(path, embedder=EMB) as mem:
        mem.store_many([{"content": f"memory {i} about the garden"} for i in range(300)], SCOPE)
    _damage(path)  # no crash, so no check at open: opening reads the damaged schema records anyway
    with pytest.raises(DamagedStoreError, match="zenbrain check"):
        open_memory(path, embedder=EMB)


def _truncate_wal(mem) -> None:
    """Every page into the file and the log emptied; retried while the store's own checkpoint
    thread (started by the commit above) holds the log, which makes a checkpoint report busy."""
    for _ in range(500):
        busy, _log, _done = mem.storage.raw_connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return
        time.sleep(0.01)
    raise AssertionError("the log stayed busy")


def test_damage_found_while_reading_stops_every_later_write(tmp_path: Path) -> None:
    path = tmp_path / "rot.db"
    mem = open_memory(path, embedder=EMB)
    try:
        mem.store_many([{"content": f"memory {i} about the garden"} for i in range(300)], SCOPE)
        _truncate_wal(mem)
        _damage(path)  # under an open store: the damage shows when the pages are read from the file
        # ...which pages the writer still holds in its cache are not (reads run on it while
        # nothing writes): dropped here, as a long-running process's are over time.
        mem.storage.raw_connection().execute("PRAGMA shrink_memory")
        with pytest.raises(DamagedStoreError, match="zenbrain check"):
            mem.list_memories(SCOPE)
        assert mem.storage.damaged
        with pytest.raises(DamagedStoreError):
            mem.store("must not be written", SCOPE)
        with pytest.raises(DamagedStoreError, match="writes nothing more"), mem.storage.transaction():
            pass
        assert not mem.storage.check().ok
    finally:
        mem.close()


def test_a_full_disk_is_a_storage_error_and_writes_nothing(tmp_path: Path) -> None:
    with open_memory(tmp_path / "full.db", embedder=EMB) as mem:
        mem.store("a first memory", SCOPE)
        con = mem.storage.raw_connection()
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        con.execute(f"PRAGMA max_page_count={pages + 2}")  # the disk is as good as full
        with pytest.raises(StorageError, match="disk is full"):
            mem.store_many([{"content": f"a long memory {i} " + "word " * 400} for i in range(50)], SCOPE)
        con.execute("PRAGMA max_page_count=1073741823")
        assert [m.content for m in mem.list_memories(SCOPE)] == ["a first memory"]
        assert mem.store("after space was freed", SCOPE).content == "after space was freed"


class _FailingRollback:
    """A writer connection whose ROLLBACK fails (as when SQLite has rolled back already)."""

    def __init__(self, inner: sqlite3.Connection) -> None:
        self.inner = inner

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "ROLLBACK":
            self.inner.execute("ROLLBACK")
            raise sqlite3.OperationalError("cannot rollback - no transaction is active")
        return self.inner.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_failing_rollback_keeps_the_original_error(tmp_path: Path) -> None:
    with open_memory(tmp_path / "rb.db", embedder=EMB) as mem:
        store = mem.storage
        store._c.writer = _FailingRollback(store._c.writer)  # type: ignore[assignment]
        with pytest.raises(KeyError, match="the original failure") as info, store.transaction():
            raise KeyError("the original failure")
        assert any("rollback" in note for note in getattr(info.value, "__notes__", []))
        store._c.writer = store._c.writer.inner  # type: ignore[attr-defined]
        assert mem.store("still usable", SCOPE).content == "still usable"


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    mem = open_memory(tmp_path / "closed.db", embedder=EMB)
    item = mem.store("something", SCOPE)
    mem.close()
    mem.close()  # twice is harmless
    for call in (lambda: mem.get(item.id, SCOPE), lambda: mem.store("more", SCOPE),
                 lambda: mem.recall("something", SCOPE), lambda: mem.stats(SCOPE), lambda: mem.forget(item.id, SCOPE)):
        with pytest.raises(StoreClosedError):
            call()


def test_writers_in_four_processes_all_commit_without_waiting_near_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    open_memory(path, embedder=EMB).close()
    code = textwrap.dedent("""
        import sys, time
        from zenbrain import Scope, open_memory
        from zenbrain.providers.hashing import HashingEmbedder
        mem = open_memory(sys.argv[1], embedder=HashingEmbedder(64), timeout=30)
        worst = 0.0
        for i in range(25):
            t = time.perf_counter()
            mem.store(f"writer {sys.argv[2]} fact {i}: the blue car is parked at house {i}", Scope(f"w{sys.argv[2]}"))
            worst = max(worst, time.perf_counter() - t)
        print(worst, mem.storage.max_lock_wait_s)
        mem.close()
    """)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), str(w)], stdout=subprocess.PIPE, env=env,
                              text=True) for w in range(4)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    worst_store = max(float(o[0]) for o in outs)
    worst_wait = max(float(o[1]) for o in outs)
    # 30 s is the lock timeout; no store came anywhere near it.
    assert worst_wait < 5.0 and worst_store < 10.0, (worst_wait, worst_store, time.perf_counter() - t0)
    with open_memory(path, embedder=EMB) as mem:
        for w in range(4):
            assert len(mem.list_memories(Scope(f"w{w}"))) == 25
        assert mem.storage.check().ok


def test_reads_of_other_threads_run_while_a_write_is_open(tmp_path: Path) -> None:
    """Each thread reads on its own connection: a slow write does not hold readers back,
    and they see the last committed state, not the write in progress."""
    import threading

    with open_memory(tmp_path / "rw.db", embedder=EMB) as mem:
        first = mem.store("committed before the slow write", SCOPE)
        inside, release = threading.Event(), threading.Event()

        def slow_write() -> None:
            with mem.storage.transaction():
                inside.set()
                release.wait(10)

        writer = threading.Thread(target=slow_write)
        writer.start()
        assert inside.wait(10)
        seen: list[object] = []
        reader = threading.Thread(target=lambda: seen.append((mem.get(first.id, SCOPE).id, mem.stats(SCOPE)["memories"])))
        t = time.perf_counter()
        reader.start()
        reader.join(5)
        elapsed = time.perf_counter() - t
        release.set()
        writer.join(10)
        assert seen == [(first.id, 1)] and elapsed < 2.0
