"""review_many: the same result as reviewing one memory after another, in one transaction."""

from __future__ import annotations

import pytest
from core_helpers import DIM, T0, open_mem

from zenbrain import NotFoundError, Scope, SimulatedClock, ValidationError
from zenbrain.providers.hashing import HashingEmbedder

SCOPE = Scope("alice")
FACTS = [f"Fact number {i} about the {w} project" for i, w in enumerate(["red", "blue", "green", "amber", "violet"])]
GRADES = ["good", "again", "easy", 2, "hard"]


def _world(path):
    clock = SimulatedClock(T0)
    mem = open_mem(path, embedder=HashingEmbedder(DIM), clock=clock)
    items = [mem.store(f, SCOPE) for f in FACTS]
    clock.advance(hours=2)
    mem.recall("project", SCOPE, k=3)  # sets a session context, so the vmPFC factor applies
    clock.advance(days=2)
    return mem, items


def _snapshot(mem, ids):
    return [(i.stability, i.last_access, i.state) for i in (mem.get(x, SCOPE) for x in ids)]


def test_review_many_equals_sequential_reviews(tmp_path):
    a, items_a = _world(str(tmp_path / "a.db"))
    b, items_b = _world(str(tmp_path / "b.db"))
    for it, g in zip(items_a, GRADES):
        a.review(it.id, SCOPE, g)
    out = b.review_many([(it.id, g) for it, g in zip(items_b, GRADES)], SCOPE)
    assert [o.id for o in out] == [i.id for i in items_b]
    assert _snapshot(a, [i.id for i in items_a]) == _snapshot(b, [i.id for i in items_b])
    assert [e.action for e in b.history(items_b[0].id, SCOPE)].count("reviewed") == 1
    a.close()
    b.close()


def test_review_many_checks_everything_before_writing(tmp_path):
    mem, items = _world(str(tmp_path / "m.db"))
    before = _snapshot(mem, [i.id for i in items])
    with pytest.raises(ValidationError):
        mem.review_many([(items[0].id, "good"), (items[1].id, "brilliant")], SCOPE)
    with pytest.raises(NotFoundError):
        mem.review_many([(items[0].id, "good"), ("no-such-id", "good")], SCOPE)
    with pytest.raises(NotFoundError):  # another user's memory is not found
        mem.review_many([(items[0].id, "good")], Scope("bob"))
    with pytest.raises(ValidationError):
        mem.review_many([(items[0].id, "good"), (items[0].id, "again")], SCOPE)
    with pytest.raises(ValidationError):
        mem.review_many("good", SCOPE)
    assert _snapshot(mem, [i.id for i in items]) == before
    assert mem.review_many([], SCOPE) == []
    mem.close()
