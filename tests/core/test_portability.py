"""Export and import: a user's memories out as JSON Lines and back, exactly."""

from __future__ import annotations

import json

import pytest

from zenbrain import Scope, ValidationError, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.providers.hashing import HashingEmbedder

ALICE = Scope("alice", session_id="chat-1")
BOB = Scope("bob")
T0 = 1_700_000_000.0


def _lived(tmp_path, name):
    clock = SimulatedClock(T0)
    mem = open_memory(tmp_path / f"{name}.db", embedder=HashingEmbedder(384), clock=clock)
    mem.store_many([{"content": t, "layer": "episodic"} for t in (
        "Caroline: I started pottery classes last week", "Melanie: Who got you into it?",
        "Caroline: My friend Ana did, she teaches there")], ALICE)
    mem.store("Alice is allergic to peanuts", Scope("alice"))
    clock.advance(days=2)
    mem.recall("pottery classes", Scope("alice"), k=3)
    mem.sleep(Scope("alice"))
    return mem, clock


def _ranking(mem, scope, query="who teaches pottery"):
    return [(h.item.content, round(h.score, 12)) for h in mem.recall(query, scope, k=5, touch=False)]


def test_a_round_trip_reproduces_recall_exactly(tmp_path):
    src, clock = _lived(tmp_path, "src")
    lines = [json.loads(json.dumps(x)) for x in src.export_memories(Scope("alice"))]  # through real JSON
    assert lines[0]["format"] == "zenbrain-export" and lines[0]["counts"]["memories"] == 4
    dst = open_memory(tmp_path / "dst.db", embedder=HashingEmbedder(384), clock=clock)
    receipt = dst.import_memories(lines, Scope("alice"))
    assert receipt.memories == 4 and receipt.events > 0 and receipt.records > 0 and receipt.id_map == {}
    assert _ranking(dst, Scope("alice")) == _ranking(src, Scope("alice"))
    for a in src.list_memories(Scope("alice"), include_archived=True):
        assert dst.history(a.id, Scope("alice")) == src.history(a.id, Scope("alice"))
        assert dst.get(a.id, Scope("alice")) == a


def test_an_import_touches_no_other_user(tmp_path):
    src, clock = _lived(tmp_path, "src1")
    shared = open_memory(tmp_path / "shared.db", embedder=HashingEmbedder(384), clock=clock)
    bees = shared.store("Bob keeps bees", BOB)
    shared.import_memories(src.export_memories(Scope("alice")), Scope("alice"))
    history = shared.history(bees.id, BOB)
    shared.import_memories(src.export_memories(Scope("alice")), Scope("carol"), new_ids=True)
    assert shared.list_memories(BOB) == [shared.get(bees.id, BOB)] and shared.history(bees.id, BOB) == history
    assert len(shared.list_memories(Scope("alice"), include_archived=True)) == 4
    assert bees.content == shared.get(bees.id, BOB).content


def test_an_import_into_another_user_as_a_copy_renames_every_reference(tmp_path):
    src, _ = _lived(tmp_path, "src2")
    lines = list(src.export_memories(Scope("alice")))
    receipt = src.import_memories(lines, Scope("carol"), new_ids=True)
    assert len(receipt.id_map) == 4
    carol = {m.id for m in src.list_memories(Scope("carol"), include_archived=True)}
    assert carol == set(receipt.id_map.values())
    edges = src.storage.edges(("carol", "default"))
    assert edges and all(e.src in carol and e.dst in carol for e in edges)
    assert _ranking(src, Scope("carol")) == _ranking(src, Scope("alice"))


def test_a_bad_export_changes_nothing(tmp_path):
    src, clock = _lived(tmp_path, "src3")
    lines = list(src.export_memories(Scope("alice")))
    dst = open_memory(tmp_path / "dst3.db", embedder=HashingEmbedder(384), clock=clock)
    with pytest.raises(ValidationError):
        dst.import_memories([{"format": "something else"}], Scope("alice"))
    broken = [*lines[:3], {"type": "memory", "memory": {"id": "x"}, "vector": "!!"}]
    with pytest.raises(ValidationError, match="line 4"):
        dst.import_memories(broken, Scope("alice"))
    assert dst.list_memories(Scope("alice"), include_archived=True) == []
    with pytest.raises(ValidationError, match="already stored"):
        src.import_memories(lines, Scope("alice"))
    other = open_memory(tmp_path / "e.db", embedder=HashingEmbedder(64), clock=clock)
    with pytest.raises(ValidationError, match="vectors of"):
        other.import_memories(lines, Scope("alice"))
