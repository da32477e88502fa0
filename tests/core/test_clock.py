"""The injected clock: every timestamp follows it, and simulated months pass instantly."""

from __future__ import annotations

import time

import pytest
from core_helpers import T0, open_mem

from zenbrain import Layer, Scope, SimulatedClock
from zenbrain.clock import DAY, SystemClock
from zenbrain.config import Config
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams

S = Scope("alice", "a1")


def test_timestamps_follow_the_simulated_clock(mem, clock):
    item = mem.store("Paris is the capital of France", S)
    assert (item.created_at, item.updated_at, item.last_access) == (T0, T0, T0)
    clock.advance(hours=5)
    updated = mem.update(item.id, S, importance=0.9)
    assert updated.updated_at == T0 + 5 * 3600 and updated.created_at == T0
    clock.advance(minutes=30)
    mem.recall("capital of France", S, k=1)
    got = mem.get(item.id, S)
    assert got.last_access == T0 + 5.5 * 3600
    assert got.created_at == T0
    assert [e.at for e in mem.history(item.id, S)] == [T0, T0 + 5 * 3600]
    ep = mem.store("went to the museum yesterday", S)
    assert ep.event_time == clock.now()


def test_sixty_days_pass_without_real_time(mem, clock):
    fact = mem.store("the boiler was serviced by Tom", S)
    core = mem.store("My name is Zed Quorum", S)
    fresh = mem.recall("boiler serviced", S, k=1, touch=False)[0]
    assert fresh.why.retrievability == pytest.approx(1.0)
    assert mem.review_queue(S) == []  # first review is scheduled a day after encoding
    start = time.perf_counter()
    clock.advance(days=60)
    assert time.perf_counter() - start < 0.05
    assert clock.now() == T0 + 60 * DAY
    aged = mem.recall("boiler serviced", S, k=1, touch=False)[0]
    assert aged.id == fact.id
    assert aged.why.retrievability < fresh.why.retrievability  # forgetting follows simulated time
    core_hit = next(h for h in mem.recall("Zed Quorum name", S, k=5, touch=False) if h.id == core.id)
    assert core_hit.why.retrievability == pytest.approx(1.0)  # core memories do not decay
    assert fact.id in [i.id for i in mem.review_queue(S)]
    mem.recall("boiler serviced", S, k=1)
    assert mem.get(fact.id, S).last_access == T0 + 60 * DAY


def test_the_clock_cannot_go_backwards():
    clk = SimulatedClock(100.0)
    with pytest.raises(ValueError):
        clk.advance(-1)
    assert clk.advance(days=1, hours=1, minutes=1, seconds=1) == 100.0 + DAY + 3600 + 60 + 1
    clk.set(5.0)
    assert clk.now() == 5.0


def test_the_default_clock_is_the_system_clock(db_path):
    with open_mem(db_path) as mem:
        assert isinstance(mem.clock, SystemClock)
        before = time.time()
        item = mem.store("a memory stamped by the wall clock", S)
        after = time.time()
    assert before <= item.created_at <= after


def test_episodes_and_sessions_use_the_clock(mem, clock):
    note = mem.store("scratch", Scope("alice", "a1", "s1"), kind="note")
    clock.advance(days=2)
    mem.end_session(Scope("alice", "a1", "s1"))
    moved = mem.get(note.id, S)
    assert moved.layer is Layer.EPISODIC
    assert moved.updated_at == T0 + 2 * DAY and moved.created_at == T0
    assert [i.id for i in mem.episodes(S, T0 - 1, T0 + 1)] == [note.id]


def test_decay_after_sixty_simulated_days_archives_and_restore_brings_back(make_mem, clock):
    # The paper's rules: every faded memory is archived (by default only those that say
    # little) and archived memories are recalled only when asked for (by default also by a
    # query sharing their specific words).
    mem = make_mem(Config(params={"ebbinghaus_decay": EbbinghausParams(low_information_words=0.0,
                                                                         archive_cue_words=0.0)}))
    fact = mem.store("the boiler was serviced by Tom", S)
    core = mem.store("My name is Zed Quorum", S)
    note = mem.store("scratch", Scope("alice", "a1", "s1"), kind="note")
    assert mem.decay(S).stages["archive"]["count"] == 0  # nothing has faded yet
    clock.advance(days=60)
    report = mem.decay(S)
    assert report.stages["archive"]["ids"] == [fact.id]
    assert mem.get(fact.id, S).archived
    assert not mem.get(core.id, S).archived and not mem.get(note.id, Scope("alice", "a1", "s1")).archived
    assert fact.id not in {h.id for h in mem.recall("boiler serviced Tom", S, touch=False)}
    assert fact.id in {h.id for h in mem.recall("boiler serviced Tom", S, include_archived=True, touch=False)}
    assert fact.id not in {i.id for i in mem.list_memories(S)}
    restored = mem.restore(fact.id, S)
    assert not restored.archived and restored.last_access == clock.now()
    assert mem.recall("boiler serviced Tom", S, k=1, touch=False)[0].id == fact.id
