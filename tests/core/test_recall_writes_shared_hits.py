"""Recall reads its candidates without copying their metadata and state; the hits it returns
have their own, so changing them changes nothing stored or cached."""

from __future__ import annotations

from core_helpers import DIM, T0, open_mem

from zenbrain import Scope, SimulatedClock
from zenbrain.providers.hashing import HashingEmbedder

SCOPE = Scope("alice")
FACTS = [f"Fact number {i} about the {w} project" for i, w in enumerate(["red", "blue", "green", "amber", "violet"])]


def test_changing_returned_hits_changes_nothing_stored(tmp_path):
    clock = SimulatedClock(T0)
    mem = open_mem(str(tmp_path / "m.db"), embedder=HashingEmbedder(DIM), clock=clock)
    for f in FACTS:
        mem.store(f, SCOPE, metadata={"tags": ["a", {"deep": [1]}]})
    clock.advance(hours=2)
    for touch in (True, False, True):
        res = mem.recall("project", SCOPE, k=3, touch=touch)
        ids = [h.item.id for h in res]
        before = mem.storage.get(("alice", "default"), ids)
        assert [h.item for h in res] == before  # equal (the hits' dicts in their own key order)
        before = repr(before)
        for h in res:
            h.item.state.clear()
            h.item.metadata["tags"][1]["deep"].append(2)
            h.item.metadata["new"] = True
        assert repr(mem.storage.get(("alice", "default"), ids)) == before
        again = mem.recall("project", SCOPE, k=3, touch=False)
        assert all("new" not in h.item.metadata for h in again)
        clock.advance(hours=2)
    mem.close()
