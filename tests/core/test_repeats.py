"""Exact repeats at store time (``zenbrain.pipeline.repeats``): the same text stored again in
the same scope returns the memory already there and counts as a use of it; turns of a
conversation, other metadata, other stated times, other scopes and ``dedupe=False`` store
anew."""

from __future__ import annotations

import pytest

from zenbrain import Config, Scope, ValidationError
from zenbrain.state import FSRS

QUICKSTART = ["My name is Alice and I live in Lyon", "Yesterday I baked 200 croissants for the market",
              "The market opens at 7am on Saturdays"]


def reps(item) -> int:
    return int((item.state.get(FSRS) or {}).get("reps", 0))


def test_the_quickstart_run_twice_leaves_three_memories(mem, scope):
    first = [mem.store(text, scope) for text in QUICKSTART]
    assert mem.last_store_report["repeats"] == []
    second = [mem.store(text, scope) for text in QUICKSTART]
    assert [i.id for i in second] == [i.id for i in first]
    assert mem.last_store_report["repeats"] == [{"record": 0, "memory_id": first[-1].id}]
    assert mem.stats(scope)["memories"] == 3
    for item in first:
        again = mem.get(item.id, scope)
        assert again.access_count == item.access_count + 1
        assert [e.action for e in mem.history(item.id, scope)] == ["created", "repeated"]


def test_a_spaced_repeat_is_a_use_a_massed_one_only_an_access(mem, scope, clock):
    text = "The market opens at 7am on Saturdays"
    item = mem.store(text, scope)
    massed = mem.store(text, scope)  # the same moment: no spacing, no learning
    assert massed.id == item.id and massed.access_count == 1
    assert massed.stability == item.stability and reps(massed) == 0
    clock.advance(days=3)
    spaced = mem.store(text, scope)
    stored = mem.get(item.id, scope)
    assert stored.access_count == 2 and stored.last_access == clock.now()
    assert stored.stability > item.stability  # Ebbinghaus: a spaced review grows stability
    assert reps(stored) == 1 and stored.state["due_at"] > clock.now()  # an FSRS review, rescheduled
    assert spaced.stability == stored.stability and spaced.state == stored.state


def test_the_use_goes_through_the_mechanisms(make_mem, scope, clock):
    """The same repeat with the mechanisms off is an access and nothing more."""
    off = make_mem(Config().without("ebbinghaus_decay", "fsrs"))
    text = "Ana keeps bees in the orchard"
    item = off.store(text, scope)
    clock.advance(days=3)
    again = off.store(text, scope)
    assert again.id == item.id and again.access_count == 1
    assert again.stability == item.stability and reps(again) == 0


def test_repeats_inside_one_batch_make_one_memory(mem, scope):
    bees = mem.store("Ana keeps bees", scope)
    items = mem.store_many([{"content": "Ana sells honey"}, {"content": "Ana sells honey"},
                            {"content": "Ana keeps bees"}, {"content": "Ana sells honey"}], scope)
    assert [i.id for i in items] == [items[0].id, items[0].id, bees.id, items[0].id]
    assert [r["record"] for r in mem.last_store_report["repeats"]] == [1, 2, 3]
    assert mem.stats(scope)["memories"] == 2
    honey = mem.get(items[0].id, scope)
    assert honey.access_count == 2
    assert [(e.action, e.detail) for e in mem.history(honey.id, scope)] == [
        ("created", {"layer": honey.layer.value, "kind": honey.kind.value}), ("repeated", {"times": 2})]
    assert mem.get(bees.id, scope).access_count == 1


def test_keeping_both_copies_is_an_option(make_mem, mem, scope):
    a = mem.store("Ana keeps bees", scope)
    b = mem.store("Ana keeps bees", scope, dedupe=False)
    c = mem.store_many([{"content": "Ana keeps bees"}], scope, dedupe=False)[0]
    assert len({a.id, b.id, c.id}) == 3
    keep_all = make_mem(Config(dedupe=False))
    d = keep_all.store("Ana keeps bees", scope)
    assert d.id not in {a.id, b.id, c.id}
    assert keep_all.store("Ana keeps bees", scope, dedupe=True).id in {a.id, b.id, c.id, d.id}
    assert keep_all.stats(scope)["memories"] == 4
    with pytest.raises(ValidationError, match="dedupe"):
        mem.store("Ana keeps bees", scope, dedupe="yes")  # type: ignore[arg-type]


def test_what_differs_is_stored_anew(mem, scope):
    text = "Ana went to the market"
    base = mem.store(text, scope, metadata={"source": "chat"}, event_time=1_700_000_000.0)
    assert mem.store(text, scope, metadata={"source": "chat"}, event_time=1_700_000_000.0).id == base.id
    assert mem.store(text, scope, metadata={"source": "chat"}).id == base.id  # no stated time: the same memory
    others = [
        mem.store(text, scope, metadata={"source": "email"}),  # another source
        mem.store(text, scope, metadata={"source": "chat"}, event_time=1_700_086_400.0),  # another day
        mem.store(text, scope.with_context("work")),
        mem.store(text, Scope("bob", scope.agent_id)),  # another user never gets alice's memory
        mem.store(text, Scope(scope.user_id, "other-agent")),
    ]
    assert len({base.id, *(o.id for o in others)}) == 6
    assert mem.get(others[3].id, Scope("bob", scope.agent_id)).user_id == "bob"


def test_conversation_turns_repeat_legitimately(mem, session, scope):
    turns = [mem.store(t, session) for t in ("Did you get the keys?", "ok", "And the parcel?", "ok")]
    assert len({t.id for t in turns}) == 4 and [t.position for t in turns] == [0, 1, 2, 3]
    spoken = mem.store_many([{"content": "ok", "speaker": "Ana"}, {"content": "ok", "speaker": "Ana"}], scope)
    assert spoken[0].id != spoken[1].id


def test_replaced_and_archived_memories_are_not_matched(mem, scope):
    old = mem.store("Alice works at Acme", scope)
    new = mem.store("Alice works at Globex", scope, supersedes=old.id)
    again = mem.store("Alice works at Acme", scope)  # holds again from now
    assert again.id not in {old.id, new.id} and again.valid_until is None
    assert mem.store("Alice works at Globex", scope, supersedes=again.id).id != new.id  # a stated replacement
    kept = mem.store("Ana keeps bees", scope)
    with mem.engine.store.transaction() as tx:
        tx.update_columns((scope.user_id, scope.agent_id), [kept.id], archived=[1])
    assert mem.store("Ana keeps bees", scope).id != kept.id


def test_two_processes_storing_the_same_new_text_at_once_store_it_once(db_path, tmp_path, workers):
    """Both processes look for repeats before either writes (each waits for the other before
    embedding the text); the second writer finds the first's memory under the write lock,
    starts again and repeats it instead of storing a copy."""
    import core_helpers
    from core_helpers import open_mem

    open_mem(db_path).close()  # the schema, before the race
    text, barrier = "The market opens at 7am on Saturdays", str(tmp_path / "barrier")
    jobs = [workers.pool.apply_async(core_helpers.repeat_task, (db_path, text, barrier, name)) for name in "ab"]
    results = [job.get(timeout=120) for job in jobs]
    assert len({pid for pid, _, _ in results}) == 2  # two processes, at once (the barrier)
    assert results[0][1] == results[1][1]  # the same memory for both
    assert [n for _, _, n in results] == [1, 1]  # started again, the second found the repeat: no second embedding
    scope = Scope("alice", "agent")
    with open_mem(db_path) as mem:
        items = mem.list_memories(scope)
        assert [i.id for i in items] == [results[0][1]] and items[0].access_count == 1
        assert [e.action for e in mem.history(items[0].id, scope)] == ["created", "repeated"]


def test_a_writer_that_looked_before_another_committed_repeats_the_committed_memory(db_path, tmp_path, workers):
    """The other process looks for repeats while this one holds an uncommitted write of the
    same text, then waits for the write lock: once this one commits, it must find the
    memory there (SQLite: under BEGIN IMMEDIATE; PostgreSQL: under the partition's lock,
    taken before the second lookup) instead of storing a copy."""
    import os
    import time

    import core_helpers
    from core_helpers import open_mem, wait_for_file

    text, signals = "The market opens at 7am on Saturdays", tmp_path / "signals"
    signals.mkdir()
    scope = Scope("alice", "agent")
    with open_mem(db_path) as mem:
        job = workers.pool.apply_async(core_helpers.late_writer_task, (db_path, text, str(signals)))
        wait_for_file(str(signals / "opened"))
        with mem.storage.transaction():
            mine = mem.store(text, scope)
            (signals / "go").touch()
            wait_for_file(str(signals / "embedding"))  # it found no repeat: this write is not committed
            time.sleep(0.3)  # let it reach the write lock
        pid, theirs = job.get(timeout=120)
        assert pid != os.getpid()
        assert theirs == mine.id
        items = mem.list_memories(scope)
        assert [i.id for i in items] == [mine.id] and items[0].access_count == 1
