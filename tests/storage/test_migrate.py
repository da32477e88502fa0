"""``zenbrain migrate``: SQLite to PostgreSQL and back, everything carried over, the copy
verified, and a copy that was killed half-way resumed where it stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import new_schema_url

from zenbrain import Scope, SimulatedClock, open_memory
from zenbrain.cli import main
from zenbrain.providers.hashing import HashingEmbedder

pytest.importorskip("psycopg")

T0 = 1.7e9
SRC_DIR = str(Path(__file__).resolve().parents[2] / "src")


def _fill(path: str, users: int, per_user: int) -> None:
    clock = SimulatedClock(T0)
    with open_memory(path, embedder=HashingEmbedder(64), clock=clock) as mem:
        for u in range(users):
            scope = Scope(f"user{u}", "agent")
            items = mem.store_many([{"content": f"user{u} note {i}: the {['river', 'garden', 'harbor'][i % 3]} "
                                                f"looked different on day {i}"} for i in range(per_user)], scope)
            mem.relate(items[0].id, items[1].id, "follows", scope)
            mem.update(items[2].id, scope, content=f"user{u} corrected note about the harbor")
            clock.advance(hours=5)
            mem.recall("what about the harbor?", scope, k=3)
            mem.store("a working note", scope.with_session("s1"), layer="working")
            mem.store(f"user{u} now lives in Lisbon", scope, supersedes=items[3].id)  # valid time


def _exports(path: str, users: int) -> dict[str, list]:
    with open_memory(path, embedder=HashingEmbedder(64), clock=SimulatedClock(T0)) as mem:
        out = {}
        for u in range(users):
            lines = list(mem.export_memories(Scope(f"user{u}", "agent")))
            lines[0].pop("exported_at")
            out[f"user{u}"] = sorted(lines, key=repr)
        return out


def test_sqlite_to_postgres_and_back_carries_everything(tmp_path, capsys):
    src = str(tmp_path / "src.db")
    _fill(src, users=3, per_user=8)
    url = new_schema_url("mig")
    assert main(["migrate", src, url]) == 0
    out = capsys.readouterr().out
    assert "copied 3 partition(s), 0 copied before" in out and "the copy holds everything" in out
    # Dense search finds the same top 10 (equal scores may swap places: the copy stored
    # them in another order); lexical too, ranked by each store's own BM25 statistics.
    assert "9 sample queries" in out and out.count("(mean overlap 1.000)") == 2
    before = _exports(src, 3)
    assert before["user0"][0]["counts"]["memories"] == 10 and before["user0"][0]["counts"]["edges"] >= 1
    assert sum(line.get("memory", {}).get("valid_until") is not None for line in before["user0"]) == 1
    assert _exports(url, 3) == before  # every memory, vector, edge, event and record, as it was
    back = str(tmp_path / "back.db")
    assert main(["migrate", url, back]) == 0
    assert _exports(back, 3) == before
    assert main(["migrate", src, url]) == 0  # again: every partition is already there
    assert "copied 0 partition(s), 3 copied before" in capsys.readouterr().out


def test_a_killed_migration_resumes_where_it_stopped(tmp_path):
    src = str(tmp_path / "src.db")
    users = 8
    _fill(src, users=users, per_user=40)
    url = new_schema_url("mig")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC_DIR, os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "zenbrain.cli", "migrate", src, url]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    copied = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        if " memories, " in line:
            copied += 1
            if copied == 2:
                os.kill(proc.pid, signal.SIGKILL)  # a crash, possibly in the middle of the third partition
                break
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    skipped = res.stdout.count("copied before, skipped")
    assert 2 <= skipped < users
    assert res.stdout.count(" memories, ") == users - skipped
    assert _exports(url, users) == _exports(src, users)
