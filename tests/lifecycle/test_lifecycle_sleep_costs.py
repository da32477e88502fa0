"""What keeps sleep cheap changes nothing it does: summary reports, edge writes merged
across stages, and lambda_2 rescaled instead of recomputed while the graph barely moved."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from zenbrain import lifecycle, lifecycle_sleep
from zenbrain.api import open_memory
from zenbrain.ids import seeded_ids
from zenbrain.lifecycle_common import KV_EDGE_DECAY, KV_SPECTRAL_CACHE, Snapshot
from zenbrain.mechanisms import spectral
from zenbrain.model import Edge
from zenbrain.providers.hashing import HashingEmbedder

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
    items = sorted(w.mem.storage.get(w.part, w.mem.storage.all_ids(w.part)), key=lambda i: i.content)
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
            reports.append((w, lifecycle.run_sleep(w.mem, w.scope, detail=detail).stages))
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
        tx.kv_put(ref.part, "probe", {"at": t})
    with ref.mem.storage.transaction() as tx:
        tx.put_edges(ref.part, then["puts"])
        tx.delete_edges(ref.part, then["deletes"])

    # deferred, then merged into one write
    first, then = writes(*out[0])
    snap = Snapshot(w.mem, w.part)
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


# ---------------------------------------------------------------------------- lambda_2 reuse
def _chain_scene(w):
    red = [w.store(t, kind="fact") for t in RED]
    w.clear_edges()
    now = w.clock.now()
    w.put_edges([Edge(x.id, y.id, "related", wt, 1.0, 0, now) for (x, y), wt in zip(itertools.pairwise(red), (1.0, 2.0, 0.5))])
    return red


def _set_weights(w, scale):
    """Multiply every edge weight by ``scale`` (a number, or a dict by (src, dst))."""
    edges = list(w.edges().values())
    w.put_edges([dataclasses.replace(e, weight=e.weight * (scale if isinstance(scale, float) else
                                                            scale.get((e.src, e.dst), 1.0))) for e in edges])


def _exact(w):
    """lambda_2 of the store's graph now, computed from scratch."""
    edges = [e for e in w.edges().values() if e.src != e.dst]
    nodes = sorted({x for e in edges for x in (e.src, e.dst)})
    pos = {m: k for k, m in enumerate(nodes)}
    return lifecycle_sleep.graph_health(
        n=len(nodes), src=np.array([pos[e.src] for e in edges]), dst=np.array([pos[e.dst] for e in edges]),
        weight=np.array([e.weight for e in edges]), params=spectral.SpectralParams(),
    ).fiedler


def _ctx(rep):
    return rep.stages["spectral_kg_health"]["contexts"]["default"]


def test_lambda2_is_reused_only_while_the_graph_barely_moved(world):
    w = world("two_factor_hebbian")  # no edge decay: the weights move only when the test moves them
    red = _chain_scene(w)
    first = _ctx(w.mem.sleep(w.scope))
    assert "fiedler_error" not in first and first["fiedler"][0] == pytest.approx(_exact(w), rel=1e-12)
    assert set(w.kv(KV_SPECTRAL_CACHE)) == {"default"}

    same = _ctx(w.mem.sleep(w.scope))  # nothing changed: the same value, error 0
    assert same["fiedler"] == first["fiedler"] and same["fiedler_error"] == [0.0, 0.0]

    _set_weights(w, 0.5)  # lambda_2 is homogeneous: a uniform scale is still exact
    half = _ctx(w.mem.sleep(w.scope))
    assert half["fiedler_error"] == [0.0, 0.0]
    assert half["fiedler"][0] == pytest.approx(first["fiedler"][0] / 2, rel=1e-12)
    assert half["fiedler"][0] == pytest.approx(_exact(w), rel=1e-12)

    _set_weights(w, {(red[0].id, red[1].id): 1.004})  # within the 1 % tolerance: rescaled, error bounded
    near = _ctx(w.mem.sleep(w.scope))
    bound = near["fiedler_error"][0]
    assert 0.0 < bound <= 0.01
    assert abs(near["fiedler"][0] - _exact(w)) <= bound * _exact(w)

    _set_weights(w, {(red[1].id, red[2].id): 1.5})  # beyond it: computed afresh
    far = _ctx(w.mem.sleep(w.scope))
    assert "fiedler_error" not in far and far["fiedler"][0] == pytest.approx(_exact(w), rel=1e-12)

    w.put_edges([Edge(red[0].id, red[3].id, "related", 1.0, 1.0, 0, w.clock.now())])  # a new pair
    ring = _ctx(w.mem.sleep(w.scope))
    assert "fiedler_error" not in ring and ring["fiedler"][0] == pytest.approx(_exact(w), rel=1e-12)
    assert ring["fiedler"][0] > far["fiedler"][0]


def test_lambda2_reuse_tolerance_zero_recomputes_any_change(world, tmp_path):
    w = world("two_factor_hebbian")
    config = dataclasses.replace(w.mem.config, params={"spectral_kg_health": spectral.SpectralParams(reuse_tolerance=0.0)})
    mem = open_memory(tmp_path / "strict.db", embedder=HashingEmbedder(64), clock=w.clock, config=config)
    try:
        s = type(w)(mem, w.clock, w.scope)
        red = _chain_scene(s)
        mem.sleep(s.scope)
        assert _ctx(mem.sleep(s.scope))["fiedler_error"] == [0.0, 0.0]  # identical: still reused
        _set_weights(s, {(red[0].id, red[1].id): 1.004})
        assert "fiedler_error" not in _ctx(mem.sleep(s.scope))
    finally:
        mem.close()


def test_a_fragmented_graph_is_bridged_with_a_cached_lambda2(world):
    w = world("two_factor_hebbian")
    red = _chain_scene(w)
    w.mem.sleep(w.scope)
    assert w.kv(KV_SPECTRAL_CACHE)["default"]
    with w.mem.storage.transaction() as tx:  # cut the chain in two
        tx.delete_edges(w.part, [(red[1].id, red[2].id, "related")])
    rep = w.mem.sleep(w.scope).stages["spectral_kg_health"]
    ctx = rep["contexts"]["default"]
    assert ctx["components"] == [2, 1] and ctx["fiedler"][0] == 0.0 and ctx["fiedler"][1] > 0.0
    (bridge,) = rep["bridges"]
    assert (bridge["src"], bridge["dst"], "bridge") in w.edges()
    assert ctx["fiedler"][1] == pytest.approx(_exact(w), rel=1e-12)


def _random_graph(rng, n, extra):
    src = np.concatenate([np.arange(n - 1), rng.integers(0, n, extra)])
    dst = np.concatenate([np.arange(1, n), rng.integers(0, n, extra)])
    return src, dst, rng.uniform(0.2, 2.0, src.size)


def test_lobpcg_starts_from_the_last_block_and_agrees_with_the_exact_solver(monkeypatch):
    rng = np.random.default_rng(5)
    n = 80
    params = spectral.SpectralParams(dense_max_nodes=20)  # LOBPCG from 21 nodes on
    ids = [f"m{k:03d}" for k in range(n)]
    src, dst, w = _random_graph(rng, n, 120)
    starts = []
    real = lifecycle_sleep._lobpcg_fiedler

    def spy(a, start=None):
        starts.append(start)
        return real(a, start)

    monkeypatch.setattr(lifecycle_sleep, "_lobpcg_fiedler", spy)
    memo = lifecycle_sleep.FiedlerMemo()

    def exact(weight):
        a = spectral.adjacency(n=n, src=src, dst=dst, weight=weight, params=params)
        return float(np.linalg.eigvalsh(spectral.laplacian(a).toarray())[1])

    h = lifecycle_sleep.graph_health(n=n, src=src, dst=dst, weight=w, params=params, memo=memo, node_ids=ids)
    assert starts == [None] and "start" in memo.entry and memo.reused is None
    assert h.fiedler == pytest.approx(exact(w), rel=1e-9)
    w2 = w * rng.uniform(0.7, 1.3, w.size)  # far beyond the tolerance: recomputed, from the stored block
    h2 = lifecycle_sleep.graph_health(n=n, src=src, dst=dst, weight=w2, params=params, memo=memo, node_ids=ids)
    assert starts[1] is not None and starts[1].shape == (n, 4) and memo.reused is None
    assert h2.fiedler == pytest.approx(exact(w2), rel=1e-9)
    # other nodes: the stored block does not apply
    h3 = lifecycle_sleep.graph_health(n=n, src=src, dst=dst, weight=w2, params=params, memo=memo,
                                      node_ids=[f"x{k}" for k in range(n)])
    assert starts[2] is None and h3.fiedler == pytest.approx(h2.fiedler, rel=1e-9)
    # without a memo nothing is kept or reused
    h4 = lifecycle_sleep.graph_health(n=n, src=src, dst=dst, weight=w2, params=params)
    assert starts[3] is None and h4.fiedler == pytest.approx(h2.fiedler, rel=1e-9)


def test_a_broken_cache_entry_is_recomputed(world):
    w = world("two_factor_hebbian")
    _chain_scene(w)
    first = _ctx(w.mem.sleep(w.scope))
    entry = w.kv(KV_SPECTRAL_CACHE)["default"]
    for broken in ({**entry, "weights": "not base64!"}, {**entry, "fiedler": None}, "junk", {}):
        w.kv_put(KV_SPECTRAL_CACHE, {"default": broken})
        again = _ctx(w.mem.sleep(w.scope))
        assert "fiedler_error" not in again and again["fiedler"] == pytest.approx(first["fiedler"], rel=1e-12)
