"""Several processes on one file: no write is lost, and each process's vector index
follows the other's writes without reopening."""

from __future__ import annotations

import os

import core_helpers
from core_helpers import open_mem

from zenbrain import Scope
from zenbrain.config import Config

N = 20


def test_two_processes_writing_at_once_lose_nothing(db_path, tmp_path, workers):
    open_mem(db_path).close()  # create the schema once, before the race
    barrier = str(tmp_path / "barrier")
    jobs = {
        prefix: workers.pool.apply_async(core_helpers.writer_task, (db_path, "alice", prefix, N, barrier))
        for prefix in ("alpha", "beta")
    }
    results = {prefix: job.get(timeout=120) for prefix, job in jobs.items()}
    pids = {pid for pid, _ in results.values()}
    assert len(pids) == 2 and os.getpid() not in pids  # two other processes, at once (the barrier)
    written = {prefix: ids for prefix, (_, ids) in results.items()}
    assert len(written["alpha"]) == len(written["beta"]) == N

    scope = Scope("alice", "agent")
    with open_mem(db_path, config=Config().without("bm25_hybrid")) as mem:
        items = mem.list_memories(scope)
        assert {i.id for i in items} == set(written["alpha"]) | set(written["beta"])
        assert len(items) == 2 * N
        for prefix in ("alpha", "beta"):
            for i in (0, N // 2, N - 1):
                hits = mem.recall(f"{prefix} memory number {i} about topic {prefix}{i}x", scope, k=1, touch=False)
                assert hits[0].id == written[prefix][i]
        # Every operation was logged exactly once: 2N creations in the history.
        con = mem.storage.raw_connection()
        assert con.execute("SELECT COUNT(*) FROM history WHERE action='created'").fetchone()[0] == 2 * N


def test_vector_index_follows_another_process_while_both_are_open(db_path, workers):
    scope = Scope("alice", "agent")
    dense_only = Config().without("bm25_hybrid")
    with open_mem(db_path, config=dense_only) as mem:
        seed = mem.store("a seed memory about gardening tomatoes", scope)
        assert mem.recall("gardening", scope, k=1, touch=False)[0].id == seed.id  # index loaded
        job = workers.pool.apply_async(core_helpers.follower_task, (db_path,))
        try:
            tag, child_id = workers.to_parent.get(timeout=120)
            assert tag == "stored"
            # No reopen: the loaded index must pick up the other process's commit.
            hits = mem.recall("violinist repaired harpsichord vienna", scope, k=1, touch=False)
            assert hits[0].id == child_id
            assert mem.get(child_id, scope).content.startswith("the violinist")
            # And the other way round while the other process is still open.
            mine = mem.store("an astronomer polishing telescope mirrors at night", scope)
            workers.to_child.put(mine.id)
            tag, recalled, expected = workers.to_parent.get(timeout=120)
            assert tag == "recalled"
            assert recalled == expected == mine.id
        finally:
            workers.to_child.put("bye")
        assert job.get(timeout=60) != os.getpid()
        # Erasure by this process is seen too: the other's memory, once forgotten, is gone.
        mem.forget(child_id, scope)
        assert child_id not in [h.id for h in mem.recall("violinist harpsichord", scope, touch=False)]


def test_concurrent_recalls_do_not_lose_access_counts(make_mem, scope):
    a, b = make_mem(), make_mem()
    item = a.store("the lighthouse keeper feeds seventeen cats", scope)
    start = a.storage.transaction
    interleaved = []

    def transaction_after_the_other_recall(**kw):
        # Deterministic interleaving: the other handle's recall commits between this
        # recall's read and its write.
        if not interleaved:
            interleaved.append(b.recall("lighthouse keeper cats", scope, k=1)[0].id)
        return start(**kw)

    a.storage.transaction = transaction_after_the_other_recall
    assert a.recall("lighthouse keeper cats", scope, k=1)[0].id == item.id
    assert interleaved == [item.id]
    assert a.get(item.id, scope).access_count == 2
