"""Declared relations between memories: validation, scoping, history, and their effect on
Bayesian propagation at sleep."""

import pytest
from core_helpers import open_mem

from zenbrain import (
    Config,
    Kind,
    Layer,
    Mechanisms,
    NotFoundError,
    Scope,
    ValidationError,
)
from zenbrain.pipeline.relations import RESERVED


@pytest.fixture
def mem(tmp_path):
    m = open_mem(str(tmp_path / "r.db"))
    yield m
    m.close()


def _facts(mem, scope, *texts):
    return [mem.store(t, scope, kind=Kind.FACT, layer=Layer.SEMANTIC) for t in texts]


def test_relate_writes_an_edge_and_a_history_event(mem):
    me = Scope("u")
    a, b = _facts(mem, me, "The bridge opened in 1932", "The bridge is in Sydney")
    edge = mem.relate(a.id, b.id, "supports", me, weight=2.0)
    assert (edge.src, edge.dst, edge.relation, edge.weight) == (a.id, b.id, "supports", 2.0)
    assert [e for e in mem.relations(a.id, me) if e.relation == "supports"] == [edge]
    assert [e for e in mem.relations(b.id, me, relation="supports")] == [edge]
    assert mem.history(a.id, me)[-1].action == "related"
    # again: the weight is set, the edge is not duplicated
    mem.relate(a.id, b.id, "supports", me, weight=0.5)
    got = mem.relations(a.id, me, relation="supports")
    assert len(got) == 1 and got[0].weight == 0.5
    assert mem.unrelate(a.id, b.id, "supports", me) is True
    assert mem.relations(a.id, me, relation="supports") == []
    assert mem.unrelate(a.id, b.id, "supports", me) is False


def test_relations_survive_a_restart(tmp_path):
    path = str(tmp_path / "p.db")
    me = Scope("u")
    m = open_mem(path)
    a, b = _facts(m, me, "Water boils at 100 C at sea level", "Altitude lowers the boiling point")
    m.relate(b.id, a.id, "part_of", me)
    m.close()
    m = open_mem(path)
    try:
        assert [(e.src, e.dst) for e in m.relations(a.id, me, relation="part_of")] == [(b.id, a.id)]
    finally:
        m.close()


@pytest.mark.parametrize("bad", ["", "Supports", "has space", "x" * 49, "1abc", None, 3, *sorted(RESERVED)])
def test_bad_relation_names_are_refused(mem, bad):
    me = Scope("u")
    a, b = _facts(mem, me, "Cats are mammals", "Mammals are animals")
    before = mem.relations(a.id, me)
    with pytest.raises(ValidationError):
        mem.relate(a.id, b.id, bad, me)
    assert mem.relations(a.id, me) == before


@pytest.mark.parametrize("weight", [0, -1.0, 11.0, float("nan"), True, "1"])
def test_bad_weights_are_refused(mem, weight):
    me = Scope("u")
    a, b = _facts(mem, me, "Cats are mammals", "Mammals are animals")
    with pytest.raises(ValidationError):
        mem.relate(a.id, b.id, "supports", me, weight=weight)


def test_self_relation_and_unknown_ids_are_refused(mem):
    me = Scope("u")
    (a,) = _facts(mem, me, "Cats are mammals")
    with pytest.raises(ValidationError):
        mem.relate(a.id, a.id, "supports", me)
    with pytest.raises(NotFoundError):
        mem.relate(a.id, "no-such-id", "supports", me)


def test_another_user_cannot_relate_or_see(mem):
    alice, bob = Scope("alice"), Scope("bob")
    (a,) = _facts(mem, alice, "Alice's locker code is 4821")
    (b,) = _facts(mem, bob, "Bob's locker code is 1177")
    with pytest.raises(NotFoundError):
        mem.relate(a.id, b.id, "supports", alice)
    with pytest.raises(NotFoundError):
        mem.relations(a.id, bob)


def test_a_linked_context_is_seen_but_not_changed(tmp_path):
    m = open_mem(str(tmp_path / "c.db"), config=Config(context_links=frozenset({("work", "home")})))
    try:
        home, work = Scope("u", context="home"), Scope("u", context="work")
        h1, h2 = _facts(m, home, "The home router password is on the fridge", "The fridge is in the kitchen")
        (w,) = _facts(m, work, "The office router is in room 4")
        with pytest.raises(NotFoundError):  # work may read home's memories, never change them
            m.relate(h1.id, h2.id, "requires", work)
        with pytest.raises(NotFoundError):
            m.relate(w.id, h1.id, "similar_to", work)
        e = m.relate(h1.id, h2.id, "requires", home)
        assert e in m.relations(h1.id, work)  # both ends are visible from work
        with pytest.raises(NotFoundError):  # home does not see work
            m.relations(w.id, home)
    finally:
        m.close()


def _contradiction_world(tmp_path, bayesian: bool):
    cfg = Config(mechanisms=Mechanisms(disabled=frozenset() if bayesian else frozenset({"bayesian_confidence"})))
    m = open_mem(str(tmp_path / f"b{bayesian}.db"), config=cfg)
    me = Scope("u")
    strong, weak = _facts(m, me, "The museum closes at 6 pm", "The museum stays open until 9 pm")
    m.record_evidence(strong.id, me, supports=True, strength=6.0)  # well attested; the other fact is not
    m.relate(strong.id, weak.id, "contradicts", me)
    before = m.get(weak.id, me).confidence
    m.sleep(me)
    after = m.get(weak.id, me).confidence
    m.close()
    return before, after


def test_a_declared_contradiction_moves_confidence_at_sleep(tmp_path):
    before, after = _contradiction_world(tmp_path, bayesian=True)
    assert after < before - 0.05  # a well-attested contradicting fact pulls it down
    before_off, after_off = _contradiction_world(tmp_path, bayesian=False)
    assert after_off == pytest.approx(before_off)


def test_record_evidence_updates_the_beta_confidence_and_history(mem):
    me = Scope("u")
    (a,) = _facts(mem, me, "The bakery opens at 7 am")
    alpha, beta = a.conf_alpha, a.conf_beta
    got = mem.record_evidence(a.id, me, supports=True, strength=2.5)
    assert (got.conf_alpha, got.conf_beta) == (alpha + 2.5, beta)
    got = mem.record_evidence(a.id, me, supports=False)
    assert (got.conf_alpha, got.conf_beta) == (alpha + 2.5, beta + 1.0)
    stored = mem.get(a.id, me)
    assert (stored.conf_alpha, stored.conf_beta) == (alpha + 2.5, beta + 1.0)
    assert [e.action for e in mem.history(a.id, me)][-2:] == ["evidence", "evidence"]


@pytest.mark.parametrize("kw", [{"supports": 1}, {"supports": True, "strength": -1.0},
                                {"supports": True, "strength": float("inf")}, {"supports": True, "strength": "2"}])
def test_bad_evidence_is_refused_and_changes_nothing(mem, kw):
    me = Scope("u")
    (a,) = _facts(mem, me, "The bakery opens at 7 am")
    with pytest.raises(ValidationError):
        mem.record_evidence(a.id, me, **kw)
    assert mem.get(a.id, me).confidence == a.confidence


def test_evidence_is_confined_to_its_user(mem):
    (a,) = _facts(mem, Scope("alice"), "Alice's passport expires in May")
    with pytest.raises(NotFoundError):
        mem.record_evidence(a.id, Scope("bob"), supports=False)


def test_forgetting_a_memory_erases_its_relations(mem):
    me = Scope("u")
    a, b = _facts(mem, me, "The pool opens in June", "The pool closes in September")
    mem.relate(a.id, b.id, "part_of", me)
    mem.forget(b.id, me)
    assert all(b.id not in (e.src, e.dst) for e in mem.relations(a.id, me))
    assert all(b.id not in (e.src, e.dst) for e in mem.storage.edges(("u", "default")))
