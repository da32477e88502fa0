"""``zenbrain check`` (a store file's integrity, read-only) and ``zenbrain stats`` for one
scope, on real SQLite files in tmp_path."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import add, run

from zenbrain import Scope, open_memory
from zenbrain.storage.sqlite.health import mark_scrub_pending


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER", "ZENBRAIN_DATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")


def fill(path: str, n: int) -> None:
    """A store of ``n`` memories, everything checkpointed into the database file."""
    with open_memory(path, embedder="hashing:384") as mem:
        mem.store_many([{"content": f"memory {i} about the garden and the bees"} for i in range(n)], Scope("ana"))
        mem.storage.raw_connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- check


def test_check_a_healthy_store(capsys, db):
    add(capsys, db, "Ana keeps bees in her garden")
    add(capsys, db, "Ben runs the Lisbon marathon")
    code, out, err = run(capsys, "check", db)
    assert code == 0, err
    assert f"store:    {db}\n" in out and "memories: 2\n" in out and out.endswith("result:   ok\n")
    assert "sqlite integrity_check" in out and "erasure" not in out
    code, out, _ = run(capsys, "--path", db, "check", "--json")  # the global --path names the file too
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["problems"] == [] and report["memories"] == 2
    assert {"sqlite integrity_check", "fts5 integrity-check", "a vector for every memory"} <= set(report["checks"])


def test_check_a_damaged_file_lists_the_problems_and_exits_1(capsys, db):
    fill(db, 300)
    size = os.path.getsize(db)
    with open(db, "r+b") as f:  # everything after the first page (the schema) overwritten
        f.seek(4096)
        f.write(b"\xab" * (size - 4096))
    before = digest(db)
    code, out, err = run(capsys, "check", db)
    assert code == 1 and err == ""
    assert re.search(r"^result:   DAMAGED \(\d+ problem\(s\)\)$", out, re.MULTILINE), out
    assert re.search(r"^  - \S", out, re.MULTILINE)  # each problem on its own line
    assert f"sqlite3 {db} .recover | sqlite3 recovered.db" in out
    code, out, _ = run(capsys, "check", db, "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["problems"]
    assert digest(db) == before  # read-only: the check wrote nothing


@pytest.mark.parametrize(("damage", "problem"), [
    # an invariant of the store that SQLite's own check cannot see
    ("DELETE FROM memories_fts WHERE rowid = (SELECT MIN(rowid) FROM memories_fts)",
     "1 memories without a lexical entry"),
    # the full-text index no longer matches the text it indexed: FTS5's check, which needs a
    # writable connection beside the read-only one
    ("UPDATE memories_fts_content SET c0 = 'other words entirely' WHERE id = (SELECT MIN(id) FROM memories_fts_content)",
     "fts5 integrity-check could not run: database disk image is malformed"),
])
def test_check_finds_damage_sqlite_alone_does_not_report(capsys, db, damage, problem):
    fill(db, 20)
    con = sqlite3.connect(db)
    con.execute(damage)
    con.commit()
    con.close()
    code, out, _ = run(capsys, "check", db)
    assert code == 1
    assert f"  - {problem}\n" in out


def test_check_leaves_a_crash_left_log_as_it_found_it(capsys, db):
    fill(db, 20)
    crash = (f"import os\nfrom zenbrain import Scope, open_memory\n"
             f"m = open_memory({db!r}, embedder='hashing:384')\n"
             "m.store('written just before the crash', Scope('ana'))\nos._exit(0)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    subprocess.run([sys.executable, "-c", crash], check=True, env=env, timeout=120)
    wal = Path(db + "-wal").read_bytes()
    assert wal  # nobody closed the store: its last commit is only in the write-ahead log
    before = digest(db)
    code, out, _ = run(capsys, "check", db)
    assert code == 0 and "memories: 21\n" in out
    assert digest(db) == before and Path(db + "-wal").read_bytes() == wal  # not checkpointed by the check


def test_check_reports_a_pending_erasure_scrub(capsys, db):
    fill(db, 3)
    con = sqlite3.connect(db, isolation_level=None)
    mark_scrub_pending(con, 1.0)
    con.close()
    code, out, _ = run(capsys, "check", db)
    assert code == 0 and "erasure:  pending" in out
    assert json.loads(run(capsys, "check", db, "--json")[1])["scrub_pending"] is True


def test_check_a_missing_or_ambiguous_file_is_a_one_line_error(capsys, tmp_path, db):
    missing = str(tmp_path / "nope.db")
    code, out, err = run(capsys, "check", missing)
    assert code == 2 and out == "" and err.strip() == f"error: no memory store at {missing}"
    assert not os.path.exists(missing)  # nothing created
    add(capsys, db, "Ana keeps bees")
    code, _, err = run(capsys, "check", db, "--path", missing)
    assert code == 2 and "two store files given" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "check", db, "--path", db)  # the same file twice is fine
    assert code == 0, err


# --------------------------------------------------------------------------- stats of one scope


def test_stats_of_one_user_shows_that_users_figures(capsys, db):
    add(capsys, db, "Ana keeps bees in her garden", "--user", "ana")
    add(capsys, db, "Ana adopted a grey kitten", "--user", "ana")
    add(capsys, db, "Ben runs the Lisbon marathon every October", "--user", "ben")
    code, out, err = run(capsys, "--path", db, "stats", "--user", "ana")
    assert code == 0, err
    assert re.search(r"^scope:      user ana, agent default \(\d+\.\d\d MB stored\)$", out, re.MULTILINE), out
    assert "memories:   2 " in out and "MB)" not in out.splitlines()[0]  # no file size for one scope
    code, out, _ = run(capsys, "--path", db, "stats", "--user", "ana", "--json")
    ana = json.loads(out)
    assert ana["memories"] == 2 and ana["stored_bytes"] > 0 and "file_bytes" not in ana
    ben = json.loads(run(capsys, "--path", db, "stats", "--user", "ben", "--json")[1])
    assert ben["memories"] == 1 and 0 < ben["stored_bytes"] < ana["stored_bytes"]
    whole = json.loads(run(capsys, "--path", db, "stats", "--json")[1])
    assert whole["memories"] == 3 and whole["file_bytes"] > 0 and "stored_bytes" not in whole
    code, out, _ = run(capsys, "--path", db, "stats")
    assert code == 0 and re.match(rf"store:      {re.escape(db)} \(\d+\.\d\d MB\)\n", out)
