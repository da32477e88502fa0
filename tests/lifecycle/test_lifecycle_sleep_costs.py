"""What keeps sleep cheap changes nothing it does: summary reports, and edge writes merged
across stages."""

from __future__ import annotations

import dataclasses

import pytest

from zenbrain.ids import seeded_ids
from zenbrain.model import Edge
from zenbrain.pipeline import lifecycle
from zenbrain.pipeline.lifecycle.common import Snapshot
from zenbrain.state import KV_EDGE_DECAY
from zenbrain.storage.base import Filter

RED = ["The red team plans the product launch", "The red team reviews the launch budget",
       "The red team books the launch venue", "The red team signs the launch contract"]
EPISODES = {
    "win": ("I went running in the park with Sam and set a new record", 0.9, 0.5),
    "win2": ("I went running in the park with Sam and felt great", 0.8, 0.4),
    "fail": ("I went running in the park with Sam and twisted my ankle", 0.1, 0.9),
    "dull": ("The printer on the third floor was out of toner", 0.0, 0.05),
}


def _selection_scene(w):
    ids = {k: w.store(text, kind="episode", metadata={"reward": r, "td_error": td}).id
           for k, (text, r, td) in EPISODES.items()}
    ids["fact"] = w.store("Toner cartridges are ordered from the stationery supplier", kind="fact").id
    w.clear_edges()
    now = w.clock.now()
    w.put_edges([Edge(ids["dull"], ids["win"], "related", 0.5, 1.0, 0, now),
                 Edge(ids["dull"], ids["fact"], "related", 0.08, 1.0, 0, now)])
    return ids


def _edge_scene(w):
    a = w.store("Paris is the capital of France", kind="fact")
    b = w.store("Lyon is known for its cuisine", kind="fact")
    c = w.store("Marseille is a port on the Mediterranean", kind="fact")
    now = w.clock.now()
    w.put_edges([
        Edge(a.id, b.id, "related", 1.0, 1.0, 0, now),  # fresh: importance 1
        Edge(a.id, c.id, "related", 1.0, 0.01, 12, now),  # mature: importance 100
        Edge(b.id, c.id, "related", 0.06, 1.0, 0, now),  # weak
    ])
    return a, b, c


def _store_state(w):
    """Everything sleep may change, in a form two worlds can be compared by."""
    items = sorted(w.mem.storage.query(w.part, Filter(include_archived=True, all_sessions=True)), key=lambda i: i.content)
    name = {i.id: i.content for i in items}
    mems = [(i.content, i.layer, i.archived, i.strength, i.stability, i.conf_alpha, i.conf_beta) for i in items]
    edges = sorted((name[e.src], name[e.dst], e.relation, e.weight, e.variance, e.activations, e.updated_at)
                   for e in w.edges().values())
    history = {name[i.id]: [(h.at, h.action) for h in w.mem.history(i.id, w.scope)] for i in items}
    return mems, edges, history


# ---------------------------------------------------------------------------- summary reports
def _busy_scene(w):
    """Episodes to replay, facts to propagate beliefs over, edges to decay and prune."""
    _selection_scene(w)
    claim = w.store("The team offsite is in Lisbon this year", kind="fact")
    source = w.store("Finance booked the offsite hotel rooms in Porto", kind="fact")
    w.set(source.id, conf_alpha=20.0, conf_beta=1.0)
    a, b, _ = _edge_scene(w)
    now = w.clock.now()
    w.put_edges([Edge(source.id, claim.id, "contradicts", 1.0, 1.0, 0, now), Edge(a.id, b.id, "supports", 1.0, 1.0, 0, now)])
    w.clock.advance(days=10)


def test_summary_report_changes_the_same_as_the_detailed_one(world):
    reports = []
    for detail in (True, False):
        with seeded_ids(11):  # ties are broken by id: both worlds get the same ids
            w = world(seed=3)
            _busy_scene(w)
            reports.append((w, lifecycle.run_sleep(w.mem.engine, w.scope, detail=detail).stages))
    (full, rep), (summary, short) = reports
    assert _store_state(full) == _store_state(summary)

    tf, tf_s = rep["two_factor_hebbian"], short["two_factor_hebbian"]
    assert tf_s["decayed_count"] == len(tf["decayed"]) > 0 and "decayed" not in tf_s
    assert tf_s["pruned"] == tf["pruned"] and tf_s["pruned"]
    sel, sel_s = rep["simulation_selection_sleep"], short["simulation_selection_sleep"]
    for key in ("ltp", "ltd", "skipped_ids", "edges_changed"):
        assert key not in sel_s and key in sel
    assert sel_s["summary"] == sel["summary"]
    assert sel_s["summary"]["ltp"] >= 1 and sel_s["summary"]["edges_changed"] == len(sel["edges_changed"])
    assert sel_s == {k: v for k, v in sel.items() if k not in ("ltp", "ltd", "skipped_ids", "edges_changed")}
    assert short["triple_copy"] == {"promoted": rep["triple_copy"]["promoted"]} and rep["triple_copy"]["memories"]
    bay, bay_s = rep["bayesian_confidence"], short["bayesian_confidence"]
    assert bay_s["changed_count"] == len(bay["changed"]) > 0 and "changed" not in bay_s
    for name in rep:  # every other stage is reported in full either way
        if name not in ("two_factor_hebbian", "simulation_selection_sleep", "triple_copy", "bayesian_confidence"):
            assert short[name] == rep[name], name


# ---------------------------------------------------------------------------- merged edge writes
def test_deferred_edge_writes_end_as_the_writes_one_by_one(world):
    w, ref = world(), world()
    out = []
    for v in (w, ref):
        a, b, c = _edge_scene(v)
        d = v.store("Nice is on the Riviera", kind="fact")
        v.put_edges([Edge(a.id, d.id, "related", 0.5, 1.0, 0, v.clock.now())])
        out.append((a, b, c, d))
    t = w.clock.now() + 5.0

    def writes(a, b, c, d):
        first = dict(puts=[Edge(a.id, b.id, "related", 0.7, 1.0, 0, t), Edge(a.id, c.id, "related", 0.9, 0.01, 12, t)],
                     deletes=[(b.id, c.id, "related")])
        then = dict(puts=[Edge(a.id, b.id, "related", 0.4, 1.0, 0, t + 1),  # put again: last value wins
                          Edge(b.id, c.id, "related", 2.0, 1.0, 0, t + 1)],  # deleted before, created again
                    deletes=[(a.id, c.id, "related"), (a.id, d.id, "related")])  # put before, then deleted
        return first, then

    # one by one
    first, then = writes(*out[1])
    with ref.mem.storage.transaction() as tx:
        tx.delete_edges(ref.part, first["deletes"])
        tx.put_edges(ref.part, first["puts"])
        tx.kv_put(ref.part, {"probe": {"at": t}})
    with ref.mem.storage.transaction() as tx:
        tx.put_edges(ref.part, then["puts"])
        tx.delete_edges(ref.part, then["deletes"])

    # deferred, then merged into one write
    first, then = writes(*out[0])
    snap = Snapshot(w.mem.engine, w.part)
    assert len(snap.edges) == 4
    before = w.edges()
    snap.defer_edges(puts=first["puts"], deletes=first["deletes"], kv={"probe": {"at": t}})
    assert snap.deferred and w.edges() == before and w.kv("probe") is None  # the store waits
    assert snap.edges[first["puts"][0].src, first["puts"][0].dst, "related"].weight == 0.7  # the snapshot does not
    with pytest.raises(RuntimeError):
        snap.defer_edges(puts=first["puts"])
    with w.mem.storage.transaction() as tx:
        snap.write_edges(tx, puts=then["puts"], deletes=then["deletes"])
    assert not snap.deferred
    assert _store_state(w) == _store_state(ref)
    assert w.kv("probe") == {"at": t}
    assert {k: dataclasses.astuple(e) for k, e in snap.edges.items()} == {
        k: dataclasses.astuple(e) for k, e in w.edges().items()}


def test_edge_decay_is_written_when_replay_writes_nothing(world):
    for off in ((), ("simulation_selection_sleep",)):
        w = world(*off)
        a, b, c = _edge_scene(w)  # facts only: replay has no episode and writes no edge
        w.clock.advance(days=30)
        rep = w.mem.sleep(w.scope)
        assert w.edges()[(a.id, b.id, "related")].weight == pytest.approx((1 - 0.02 / 1.1) ** 30)
        assert (b.id, c.id, "related") not in w.edges()
        assert len(rep.stages["two_factor_hebbian"]["pruned"]) == 1
        assert w.kv(KV_EDGE_DECAY)["at"] == w.clock.now()


# ---------------------------------------------------------------------------- snapshot memory
def test_snapshot_shares_strings_and_holds_the_stores_memories_and_edges(world):
    w = world()
    _busy_scene(w)
    snap = Snapshot(w.mem.engine, w.part)
    stored = {i.id: i for i in w.mem.storage.query(w.part, Filter(include_archived=True, contexts=None))}
    assert {k: dataclasses.astuple(v) for k, v in snap.items.items()} == {
        k: dataclasses.astuple(v) for k, v in stored.items()}
    first = next(iter(snap.items.values()))
    assert all(i.user_id is first.user_id and i.agent_id is first.agent_id for i in snap.items.values())
    floats: dict[float, float] = {}  # equal floats are one object (the scene has no -0.0)
    assert all(floats.setdefault(x, x) is x for i in snap.items.values()
               for x in (i.created_at, i.last_access, i.importance, i.strength, i.stability))
    assert {k: dataclasses.astuple(e) for k, e in snap.edges.items()} == {
        k: dataclasses.astuple(e) for k, e in w.edges().items()}
    for e in snap.edges.values():  # each end is the snapshot's own id string
        assert e.src not in snap.items or e.src is snap.items[e.src].id
        assert e.dst not in snap.items or e.dst is snap.items[e.dst].id
    relations = {}
    assert all(relations.setdefault(e.relation, e.relation) is e.relation for e in snap.edges.values())


def test_snapshot_floats_are_shared_by_value_and_keep_their_sign():
    from zenbrain.pipeline.lifecycle.common import _Floats

    floats = _Floats()
    a, b = float("1704003540.0"), float("1704003540.0")
    assert a is not b and floats(a) is floats(b) is a
    assert str(floats(-0.0)) == "-0.0" and str(floats(0.0)) == "0.0"
    nan = float("nan")
    assert floats(nan) is nan
    assert floats(1) == 1 and type(floats(1)) is int and floats(True) is True
    state = {"copies": {"anchor": float("5.5"), "s0": -0.0}, "priority": float("5.5"), "reps": [1.0]}
    item = type("Item", (), {})()
    for name in ("created_at", "updated_at", "last_access", "event_time", "valid_until", "importance", "valence",
                 "arousal", "stability", "strength", "conf_alpha", "conf_beta"):
        setattr(item, name, float("5.5"))
    item.event_time = None
    item.state = state
    floats.item(item)
    assert item.created_at is item.stability is state["priority"] is state["copies"]["anchor"]
    assert item.event_time is None and str(state["copies"]["s0"]) == "-0.0" and state["reps"] == [1.0]
