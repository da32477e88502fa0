"""AsyncMemory: the sync facade's operations, awaitable, safe under many concurrent tasks."""

from __future__ import annotations

import asyncio
import inspect
import random
import sqlite3
import threading
import time

import pytest

from zenbrain import (
    AsyncMemory,
    MemoryCoordinator,
    NotFoundError,
    RecallHit,
    Scope,
    ScopeError,
    StorageError,
    ValidationError,
    ZenBrainError,
)
from zenbrain.aio import READ_ONLY, ReadWriteLock, facade_methods
from zenbrain.ids import seeded_ids

ALICE = Scope("alice")
BOB = Scope("bob")


def _public_sync_methods() -> set[str]:
    """Computed here independently of the module under test."""
    return {n for n, v in vars(MemoryCoordinator).items()
            if not n.startswith("_") and inspect.isfunction(v) and n != "close"}


def test_every_public_sync_method_is_awaitable_with_the_same_signature():
    names = _public_sync_methods()
    assert names == set(facade_methods())
    for name in names:
        method = getattr(AsyncMemory, name, None)
        assert method is not None, f"AsyncMemory lacks {name}"
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(MemoryCoordinator, name)), name
    assert names >= READ_ONLY


def test_a_new_sync_method_is_mirrored_without_code():
    class Extended(MemoryCoordinator):
        def brand_new(self, scope: Scope) -> int:
            return 1

    assert "brand_new" in facade_methods(Extended)


def test_read_only_methods_commit_nothing(open_store):
    """The methods that share the read lock must not write: the file's change counter, seen
    from another connection, stays put while each of them runs."""
    sync = open_store()
    a = sync.store("Alice likes green tea", ALICE)
    b = sync.store("Alice lives in Lyon", ALICE)
    sync.relate(a.id, b.id, "supports", ALICE)
    watcher = sqlite3.connect(sync.storage.path)
    before = watcher.execute("PRAGMA data_version").fetchone()[0]
    calls = {
        "get": lambda: sync.get(a.id, ALICE),
        "list_memories": lambda: sync.list_memories(ALICE),
        "episodes": lambda: sync.episodes(ALICE),
        "history": lambda: sync.history(a.id, ALICE),
        "relations": lambda: sync.relations(a.id, ALICE),
        "stats": lambda: sync.stats(ALICE),
        "review_queue": lambda: sync.review_queue(ALICE),
        "contexts": lambda: sync.contexts(ALICE),
        "forgetting_curve": lambda: sync.forgetting_curve(a.id, ALICE, [sync.clock.now() + 86400.0]),
    }
    assert set(calls) == READ_ONLY
    for name, call in calls.items():
        call()
        assert watcher.execute("PRAGMA data_version").fetchone()[0] == before, name
    # A write moves the counter: the watcher would have seen one.
    sync.store("Bob is Alice's brother", ALICE)
    assert watcher.execute("PRAGMA data_version").fetchone()[0] != before
    watcher.close()


def _script(m):
    """One scripted sequence of operations, as (name, thunk) pairs over a sync or async facade."""
    yield "store", lambda: m.store("My name is Alice and I live in Lyon", ALICE)
    yield "store_many", lambda: m.store_many([{"content": f"Alice went hiking in the Alps, trip {i}"} for i in range(5)]
                                             + [{"content": "To deploy, first run the tests, then tag the release"}],
                                             ALICE)
    yield "recall", lambda: m.recall("where does Alice live?", ALICE, k=3)
    yield "recall_many", lambda: m.recall_many(["hiking", "deploy steps"], ALICE, k=2)
    yield "list_memories", lambda: m.list_memories(ALICE)
    yield "stats", lambda: m.stats(ALICE)
    yield "sleep", lambda: m.sleep(ALICE)
    yield "recall2", lambda: m.recall("Alice hiking trips", ALICE, k=4)


def _summary(value):
    """A comparable form of a facade result (ids are seeded, so they compare too)."""
    if isinstance(value, RecallHit):
        return (value.id, value.content, value.score)
    if isinstance(value, list):
        return [_summary(v) for v in value]
    if hasattr(value, "content") and hasattr(value, "layer"):
        return (value.id, value.content, value.layer.value, value.kind.value)
    if hasattr(value, "stages"):
        return value.stages
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "file_bytes"}
    return value


def test_async_results_equal_the_sync_ones(open_store):
    sync = open_store("sync.db")
    with seeded_ids(7):
        expected = [(name, _summary(call())) for name, call in _script(sync)]

    async def main():
        async with AsyncMemory(open_store("async.db")) as am:
            with seeded_ids(7):
                return [(name, _summary(await call())) for name, call in _script(am)]

    got = asyncio.run(main())
    assert got == expected


def test_hundreds_of_concurrent_mixed_operations_lose_nothing(open_store):
    """300 operations of five kinds in a shuffled order, all in flight at once on one store.
    Without the lock this loses updates (two read-modify-writes of one memory overlap)."""
    plan = ["store"] * 100 + ["recall"] * 50 + ["get"] * 50 + ["update"] * 60 + ["bob"] * 40
    random.Random(3).shuffle(plan)

    async def main():
        am = AsyncMemory(open_store(), max_workers=4)
        seed = await am.store_many([{"content": f"seed fact number {i} about apples"} for i in range(20)], ALICE)
        ids = [s.id for s in seed]
        ops = []
        for i, op in enumerate(plan):
            if op == "store":
                ops.append(am.store(f"Alice note {i}: she visited museum {i}", ALICE))
            elif op == "recall":
                ops.append(am.recall(f"museum {i}", ALICE, k=3))
            elif op == "get":
                ops.append(am.get(ids[i % len(ids)], ALICE))
            elif op == "update":
                ops.append(am.update(ids[i % 2], ALICE, metadata={"touched_by": i}))  # contended
            else:
                ops.append(am.store(f"Bob note {i}", BOB))
        results = await asyncio.gather(*ops)
        alice = await am.list_memories(ALICE)
        bob = await am.list_memories(BOB)
        finals = await asyncio.gather(*(am.get(x, ALICE) for x in ids[:2]))
        histories = await asyncio.gather(*(am.history(x, ALICE) for x in ids[:2]))
        await am.aclose()
        return ids, results, alice, bob, finals, histories

    ids, results, alice, bob, finals, histories = asyncio.run(main())
    stored_alice = {r.content for op, r in zip(plan, results) if op == "store"}
    assert len(stored_alice) == 100
    assert {m.content for m in alice} >= stored_alice
    assert len(alice) == 120  # 20 seeds + 100 notes: nothing lost, nothing doubled
    assert len(bob) == 40 and all(m.content.startswith("Bob note") for m in bob)
    # No lost update: each contended memory's version counts every update made to it,
    # and its history holds one "updated" event per call.
    per_id = {ids[0]: 0, ids[1]: 0}
    for i, op in enumerate(plan):
        if op == "update":
            per_id[ids[i % 2]] += 1
    assert {f.id: f.version for f in finals} == {x: 1 + n for x, n in per_id.items()}
    assert [sum(1 for e in h if e.action == "updated") for h in histories] == [per_id[ids[0]], per_id[ids[1]]]
    # Recalls ran against a consistent store: every hit is one of Alice's memories.
    alice_ids = {m.id for m in alice}
    for op, r in zip(plan, results):
        if op == "recall":
            assert {h.id for h in r} <= alice_ids


def test_errors_are_zenbrain_errors_and_change_nothing(open_store):
    async def main():
        am = AsyncMemory(open_store())
        kept = await am.store("Alice likes tea", ALICE)
        outcomes = await asyncio.gather(
            am.store("", ALICE),
            am.get("no-such-id", ALICE),
            am.update("no-such-id", ALICE, content="x"),
            am.recall("tea", ALICE, k=0),
            am.get(kept.id, BOB),  # another user's memory is not found
            am.store("fine", ALICE, importance=5.0),
            return_exceptions=True,
        )
        count = (await am.stats(ALICE))["memories"]
        await am.aclose()
        with pytest.raises(StorageError):
            await am.recall("tea", ALICE)
        return outcomes, count

    outcomes, count = asyncio.run(main())
    assert [type(o) for o in outcomes] == [ValidationError, NotFoundError, NotFoundError, ValidationError,
                                           NotFoundError, ValidationError]
    assert all(isinstance(o, ZenBrainError) for o in outcomes)
    assert count == 1
    with pytest.raises(ScopeError):
        Scope("bad user id")


def test_wrapping_something_else_is_refused():
    with pytest.raises(ValidationError):
        AsyncMemory(object())  # type: ignore[arg-type]


def test_run_groups_calls_into_one_operation(open_store):
    async def main():
        async with AsyncMemory(open_store()) as am:
            def two(m):
                a = m.store("Alice plays chess", ALICE)
                return m.get(a.id, ALICE).content

            return await am.run(two)

    assert asyncio.run(main()) == "Alice plays chess"


def test_read_write_lock_lets_readers_share_and_writers_exclude():
    lock = ReadWriteLock()
    inside: list[str] = []
    peak = {"readers": 0}
    active = {"readers": 0, "writers": 0}
    guard = threading.Lock()

    def body(kind):
        with guard:
            active[kind] += 1
            peak["readers"] = max(peak["readers"], active["readers"])
            assert active["writers"] <= 1
            assert not (active["writers"] and active["readers"])
        time.sleep(0.02)
        with guard:
            active[kind] -= 1
        inside.append(kind)

    threads = [threading.Thread(target=lock.run, args=(lambda k=k: body(k),), kwargs={"write": k == "writers"})
               for k in ["readers"] * 4 + ["writers"] * 2 + ["readers"] * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(inside) == 8
    assert peak["readers"] >= 2  # readers did overlap


def test_closing_lets_submitted_operations_finish(open_store):
    async def main():
        am = AsyncMemory(open_store(), max_workers=2)
        pending = [asyncio.ensure_future(am.store(f"fact {i} about rivers", ALICE)) for i in range(30)]
        await asyncio.sleep(0)  # every store is submitted before the close
        await am.aclose()
        done = await asyncio.gather(*pending)
        with pytest.raises(StorageError):
            await am.store("too late", ALICE)
        with pytest.raises(StorageError):
            am.locked(lambda m: m.stats())
        return done

    done = asyncio.run(main())
    assert len({d.id for d in done}) == 30
