"""Several processes on one file: no write is lost, and each process's vector index
follows the other's writes without reopening."""

from __future__ import annotations

import multiprocessing as mp

import core_helpers
from core_helpers import open_mem

from zenbrain import Scope
from zenbrain.config import Config

N = 20


def test_two_processes_writing_at_once_lose_nothing(db_path):
    open_mem(db_path).close()  # create the schema once, before the race
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=core_helpers.writer_proc, args=(db_path, "alice", prefix, N, barrier, out))
        for prefix in ("alpha", "beta")
    ]
    for p in procs:
        p.start()
    written = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(written["alpha"]) == len(written["beta"]) == N

    scope = Scope("alice", "agent")
    with open_mem(db_path, config=Config().without("bm25_hybrid")) as mem:
        items = mem.list(scope)
        assert {i.id for i in items} == set(written["alpha"]) | set(written["beta"])
        assert len(items) == 2 * N
        for prefix in ("alpha", "beta"):
            for i in (0, N // 2, N - 1):
                hits = mem.recall(f"{prefix} memory number {i} about topic {prefix}{i}x", scope, k=1, touch=False)
                assert hits[0].id == written[prefix][i]
        # Every change was logged exactly once: 2N creations in the history.
        con = mem.storage.raw_connection()
        assert con.execute("SELECT COUNT(*) FROM history WHERE action='created'").fetchone()[0] == 2 * N


def test_vector_index_follows_another_process_while_both_are_open(db_path):
    scope = Scope("alice", "agent")
    dense_only = Config().without("bm25_hybrid")
    ctx = mp.get_context("spawn")
    to_parent, to_child = ctx.Queue(), ctx.Queue()
    with open_mem(db_path, config=dense_only) as mem:
        seed = mem.store("a seed memory about gardening tomatoes", scope)
        assert mem.recall("gardening", scope, k=1, touch=False)[0].id == seed.id  # index loaded
        child = ctx.Process(target=core_helpers.follower_proc, args=(db_path, to_parent, to_child))
        child.start()
        try:
            tag, child_id = to_parent.get(timeout=120)
            assert tag == "stored"
            # No reopen: the loaded index must pick up the other process's commit.
            hits = mem.recall("violinist repaired harpsichord vienna", scope, k=1, touch=False)
            assert hits[0].id == child_id
            assert mem.get(child_id, scope).content.startswith("the violinist")
            # And the other way round while the child is still open.
            mine = mem.store("an astronomer polishing telescope mirrors at night", scope)
            to_child.put(mine.id)
            tag, recalled, expected = to_parent.get(timeout=120)
            assert tag == "recalled"
            assert recalled == expected == mine.id
        finally:
            to_child.put("bye")
            child.join(timeout=60)
        assert child.exitcode == 0
        # Erasure by this process is seen too: the child's memory, once forgotten, is gone.
        mem.forget(child_id, scope)
        assert child_id not in [h.id for h in mem.recall("violinist harpsichord", scope, touch=False)]
