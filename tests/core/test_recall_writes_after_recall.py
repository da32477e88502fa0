"""The side effects of a recall, read and written in a few statements: every kv value
after_recall needs comes from one read, and they are the values the mechanisms used
when each was read on its own."""

from __future__ import annotations

import pytest
from core_helpers import DIM, T0, open_mem

from zenbrain import Scope, SimulatedClock, monitor_log
from zenbrain import dynamics as dyn
from zenbrain.pma import metacognition
from zenbrain.providers.hashing import HashingEmbedder

SCOPE = Scope("alice", session_id="s1")
FACTS = [f"Fact number {i} about the {w} project" for i, w in enumerate(["red", "blue", "green", "amber", "violet"])]


def _world(path, factor=None):
    clock = SimulatedClock(T0)
    mem = open_mem(path, embedder=HashingEmbedder(DIM), clock=clock)
    for f in FACTS:
        mem.store(f, SCOPE)
    if factor is not None:
        with mem.storage.transaction() as tx:
            tx.kv_put(("alice", "default"), dyn.KV_HYPER, {"values": {"review_interval_factor": factor}})
    mem.intend("water the plants", SCOPE, cue="violet")
    clock.advance(hours=2)
    return mem, clock


def _kv_selects(mem, fn):
    seen: list[str] = []
    mem.storage._db.set_trace_callback(seen.append)
    try:
        out = fn()
    finally:
        mem.storage._db.set_trace_callback(None)
    return out, [s for s in seen if s.lstrip().upper().startswith("SELECT") and " kv " in f" {s} "]


def test_one_kv_read_feeds_every_mechanism(tmp_path):
    mem, _ = _world(str(tmp_path / "a.db"))
    part = ("alice", "default")
    res, selects = _kv_selects(mem, lambda: mem.recall("violet project", SCOPE, k=3))
    # One read for after_recall and one for the monitor's newest segment (and the
    # HyperAgent's lexical weight, read by ranking when the HyperAgent is on).
    assert len(selects) <= 3
    assert res.info.get("intentions")  # prospective memory saw its stored intention
    assert mem.storage.kv_get(part, dyn.KV_CONTEXT)
    assert mem.storage.kv_get(part, dyn.KV_NEURO)
    head = mem.storage.kv_get(part, monitor_log.HEAD_KEY)
    assert head["retrievals"] == {"seg": 0, "n": 1}
    mem.recall("red project", SCOPE, k=3)
    assert mem.storage.kv_get(part, monitor_log.HEAD_KEY)["retrievals"] == {"seg": 0, "n": 2}
    mem.close()


def test_the_hyperagent_interval_factor_read_with_the_rest_applies(tmp_path):
    a, clock_a = _world(str(tmp_path / "a.db"))
    b, clock_b = _world(str(tmp_path / "b.db"), factor=2.0)
    ra = a.recall("green project", SCOPE, k=3)
    rb = b.recall("green project", SCOPE, k=3)
    now = clock_a.now()
    assert now == clock_b.now()
    assert len(ra) == len(rb) == 3
    for ha, hb in zip(ra, rb):
        assert ha.item.content == hb.item.content
        due_a, due_b = ha.item.state["due_at"], hb.item.state["due_at"]
        assert due_b - now == pytest.approx(2.0 * (due_a - now), rel=1e-12)
        assert b.get(hb.item.id, SCOPE).state == hb.item.state
    a.close()
    b.close()


def test_monitor_append_with_a_head_read_earlier_equals_reading_it(tmp_path):
    mem, clock = _world(str(tmp_path / "a.db"))
    part = ("alice", "default")
    for _ in range(70):  # past one segment
        mem.recall("amber project", SCOPE, k=2)
        clock.advance(seconds=5)
    ev = metacognition.retrieval_event(at=clock.now(), returned=2, used=1)
    head = mem.storage.kv_get(part, monitor_log.HEAD_KEY)
    read_here = monitor_log.appended(mem.storage, part, retrievals=[ev])
    assert monitor_log.appended(mem.storage, part, retrievals=[ev], head=head) == read_here
    assert monitor_log.appended(mem.storage, part, retrievals=[ev], head={}) == monitor_log.appended(
        mem.storage, ("nobody", "default"), retrievals=[ev])
    mem.close()
