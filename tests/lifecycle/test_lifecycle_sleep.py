"""sleep(): every stage shows its effect and disappears when its mechanism is switched off."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from zenbrain import state as keys
from zenbrain.mechanisms import compositional
from zenbrain.model import Edge, Layer
from zenbrain.pipeline import lifecycle
from zenbrain.pma import metacognition, neuromodulator, triple_copy
from zenbrain.state import CONF_LOCAL, KV_EDGE_DECAY
from zenbrain.state import RELATION_BRIDGE as BRIDGE
from zenbrain.state import RELATION_COUNTERFACTUAL as COUNTERFACTUAL

OFF = {"skipped": "switched off"}


def _sleep_detailed(w):
    """A sleep with the full report (one entry per replayed memory, changed edge and belief)."""
    return lifecycle.run_sleep(w.mem.engine, w.scope, detail=True)


# ---------------------------------------------------------------------------- neuromodulator
def _neuro_scene(w, hours_ago: float = 24.0):
    state = neuromodulator.NeuromodulatorState(
        tonic={"DA": 0.2, "NE": 0.5, "5HT": 0.9, "ACh": 0.5}, bursts=(), updated_at=w.clock.now() - hours_ago * 3600
    )
    w.kv_put(keys.KV_NEURO, state.to_dict())


def test_neuromodulator_homeostasis_relaxes_tonic_levels_and_sets_patience(world):
    w = world()
    _neuro_scene(w)
    rep = w.mem.sleep(w.scope)
    stage = rep.stages["neuromodulator"]
    keep = 0.95**24
    assert stage["tonic"]["5HT"] == [0.9, pytest.approx(0.5 + 0.4 * keep)]
    assert stage["tonic"]["DA"] == [0.2, pytest.approx(0.5 - 0.3 * keep)]
    assert w.kv(keys.KV_NEURO)["tonic"]["5HT"] == pytest.approx(0.5 + 0.4 * keep)
    patience = stage["outputs"]["consolidation_patience"]
    sel = rep.stages["simulation_selection_sleep"]
    assert sel["threshold"] == pytest.approx(0.5 + 0.4 * (patience - 0.5))
    assert sel["threshold"] > 0.5  # patient serotonin: replay is more selective

    w_off = world("neuromodulator")
    _neuro_scene(w_off)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["neuromodulator"] == OFF
    assert w_off.kv(keys.KV_NEURO)["tonic"]["5HT"] == 0.9  # untouched
    assert rep_off.stages["simulation_selection_sleep"]["threshold"] == 0.5


# ---------------------------------------------------------------------------- Simulation-Selection
EPISODES = {
    "win": ("I went running in the park with Sam and set a new record", 0.9, 0.5),
    "win2": ("I went running in the park with Sam and felt great", 0.8, 0.4),
    "fail": ("I went running in the park with Sam and twisted my ankle", 0.1, 0.9),
    "dull": ("The printer on the third floor was out of toner", 0.0, 0.05),
}


def _selection_scene(w):
    ids = {}
    for key, (text, reward, td) in EPISODES.items():
        ids[key] = w.store(text, kind="episode", metadata={"reward": reward, "td_error": td}).id
    ids["fact"] = w.store("Toner cartridges are ordered from the stationery supplier", kind="fact").id
    w.clear_edges()
    now = w.clock.now()
    w.put_edges([
        Edge(ids["dull"], ids["win"], "related", 0.5, 1.0, 0, now),
        Edge(ids["dull"], ids["fact"], "related", 0.08, 1.0, 0, now),
    ])
    return ids


def test_sleep_selection_replays_real_and_counterfactual_episodes(world):
    w = world()
    ids = _selection_scene(w)
    before = {k: w.get(v).strength for k, v in ids.items()}
    rep = _sleep_detailed(w)
    sel = rep.stages["simulation_selection_sleep"]
    assert ids["fact"] not in {**sel["ltp"], **sel["ltd"]}  # only episodes are replayed
    assert sel["candidates"]["real"] == 4 and sel["candidates"]["counterfactual"] >= 1
    # LTP for the rewarding episodes, LTD for the dull one; every change reported with its TAG
    assert {ids["win"], ids["win2"]} <= set(sel["ltp"])
    assert ids["dull"] in sel["ltd"]
    for mid, entry in {**sel["ltp"], **sel["ltd"]}.items():
        assert 0.0 <= entry["tag"] <= 1.0
        assert w.get(mid).strength == pytest.approx(entry["strength"][1])
    assert w.get(ids["dull"]).strength == pytest.approx(before["dull"] - 0.05)
    assert w.get(ids["win"]).strength == pytest.approx(min(1.0, before["win"] + 0.1))
    # the counterfactual is a blend of the failure and a success, not a copy of either
    (cf,) = sel["counterfactuals"]
    assert cf["source_id"] == ids["fail"] and cf["neighbour_id"] in (ids["win"], ids["win2"])
    assert 0.3 <= cf["mix"] <= 0.7
    assert cf["cosine_to_source"] < 0.999 and cf["cosine_to_neighbour"] < 0.999
    assert cf["reward"] > EPISODES["fail"][1]
    # LTD weakened the dull episode's edges; the weak one fell below tau and was pruned
    changed = {(e["src"], e["dst"]): e["weight"] for e in sel["edges_changed"]}
    old, new = changed[(ids["dull"], ids["win"])]
    assert new < old + 0.1  # LTD of one end against LTP of the other, through the EWC constraint
    pruned = {(e["src"], e["dst"]) for e in sel["edges_pruned"]}
    assert (ids["dull"], ids["fact"]) in pruned  # 0.08 - 0.05 x 2/3 (EWC on a fresh edge) < 0.05
    assert (ids["dull"], ids["fact"], "related") not in w.edges()
    if cf["action"] == "ltp" and cf["bridge"] == "new":
        assert (cf["source_id"], cf["neighbour_id"], COUNTERFACTUAL) in w.edges()
    assert [e.action for e in w.mem.history(ids["dull"], w.scope)][-1] == "replayed"

    w_off = world("simulation_selection_sleep")
    ids_off = _selection_scene(w_off)
    before_off = {k: w_off.get(v).strength for k, v in ids_off.items()}
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["simulation_selection_sleep"] == OFF
    assert rep_off.stages["triple_copy"]["promoted"] == 0
    assert {k: w_off.get(v).strength for k, v in ids_off.items()} == before_off
    assert (ids_off["dull"], ids_off["fact"], "related") in w_off.edges()


def test_sleep_selection_is_deterministic_for_a_seed(world):
    mixes = []
    for _ in range(2):
        w = world(seed=7)
        _selection_scene(w)
        rep = w.mem.sleep(w.scope)
        mixes.append([c["mix"] for c in rep.stages["simulation_selection_sleep"]["counterfactuals"]])
    assert mixes[0] == mixes[1] and mixes[0]


# ---------------------------------------------------------------------------- TripleCopy promotion
def test_replayed_memories_consolidate_into_the_deep_copy(world):
    def run(*off):
        # The IB budget off: it would archive the running episodes, which a schema covers
        # and nobody used, before decay could show what the deep copy keeps.
        w = world(*off, "ib_budget", value_aware=False)
        ids = _selection_scene(w)
        rep = _sleep_detailed(w)
        w.clock.advance(days=60)
        later = w.mem.decay(w.scope)
        return w, ids, rep, later

    w, ids, rep, later = run()
    stage = rep.stages["triple_copy"]
    assert ids["win"] in stage["memories"]
    old, new = stage["memories"][ids["win"]]["deep_target"]
    assert new > old
    assert w.get(ids["win"]).state[keys.COPIES]["deep_target"] == pytest.approx(new)
    assert ids["dull"] not in stage["memories"]  # depressed, not replayed
    # 60 days on, the consolidated episode survives; the unreplayed one is archived
    assert ids["win"] not in later.stages["archive"]["ids"]
    assert ids["dull"] in later.stages["archive"]["ids"]

    _w_off, ids_off, rep_off, later_off = run("triple_copy")
    assert rep_off.stages["triple_copy"] == OFF
    assert ids_off["win"] in later_off.stages["archive"]["ids"]


# ---------------------------------------------------------------------------- Two-Factor edge decay
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


def test_two_factor_edge_decay_is_importance_gated_and_prunes_weak_edges(world):
    w = world()
    a, b, c = _edge_scene(w)
    w.clock.advance(days=30)
    rep = w.mem.sleep(w.scope)
    edges = w.edges()
    assert edges[(a.id, b.id, "related")].weight == pytest.approx((1 - 0.02 / 1.1) ** 30)
    assert edges[(a.id, c.id, "related")].weight == pytest.approx((1 - 0.02 / 11) ** 30)
    assert (b.id, c.id, "related") not in edges
    stage = rep.stages["two_factor_hebbian"]
    assert {(e["src"], e["dst"]) for e in stage["pruned"] if e["relation"] == "related"} == {(b.id, c.id)}
    assert w.kv(KV_EDGE_DECAY)["at"] == w.clock.now()
    # a second sleep right after decays nothing more (time is never counted twice)
    w.mem.sleep(w.scope)
    assert w.edges()[(a.id, b.id, "related")].weight == pytest.approx((1 - 0.02 / 1.1) ** 30)

    w_off = world("two_factor_hebbian")
    a2, b2, c2 = _edge_scene(w_off)
    w_off.clock.advance(days=30)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["two_factor_hebbian"] == OFF
    edges_off = w_off.edges()
    assert edges_off[(a2.id, b2.id, "related")].weight == 1.0
    assert edges_off[(b2.id, c2.id, "related")].weight == 0.06


# ---------------------------------------------------------------------------- Bayesian
def _belief_scene(w):
    claim = w.store("The team offsite is in Lisbon this year", kind="fact")
    source = w.store("Finance booked the offsite hotel rooms in Porto", kind="fact")
    backer = w.store("The Lisbon venue sent a signed contract", kind="fact")
    w.set(source.id, conf_alpha=20.0, conf_beta=1.0)
    w.set(backer.id, conf_alpha=1.0, conf_beta=1.0)
    w.clear_edges()
    w.put_edges([Edge(source.id, claim.id, "contradicts", 1.0, 1.0, 0, w.clock.now())])
    return claim, source, backer


def test_bayesian_propagation_lowers_a_contradicted_fact(world):
    w = world()
    claim, _source, _ = _belief_scene(w)
    rep = _sleep_detailed(w)
    stage = rep.stages["bayesian_confidence"]
    entry = stage["changed"][claim.id]
    before, after = entry["confidence"]
    assert before == pytest.approx(0.5) and after < 0.4
    item = w.get(claim.id)
    assert item.confidence == pytest.approx(after)
    assert item.conf_alpha + item.conf_beta == pytest.approx(2.0)  # evidence mass kept
    assert item.state[CONF_LOCAL] == [1.0, 1.0]
    assert "confidence" in [e.action for e in w.mem.history(claim.id, w.scope)]
    # a second sleep starts from the local evidence: the graph is not counted twice
    w.mem.sleep(w.scope)
    assert w.get(claim.id).confidence == pytest.approx(after, abs=1e-6)

    w_off = world("bayesian_confidence")
    claim_off, _, _ = _belief_scene(w_off)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["bayesian_confidence"] == OFF
    assert w_off.get(claim_off.id).confidence == pytest.approx(0.5)


def test_bayesian_adds_new_observations_to_the_local_evidence(world):
    w = world()
    claim, _, _backer = _belief_scene(w)
    w.mem.sleep(w.scope)
    low = w.get(claim.id).confidence
    item = w.get(claim.id)
    w.set(claim.id, conf_alpha=item.conf_alpha + 6.0)  # six confirming observations arrive
    w.mem.sleep(w.scope)
    item = w.get(claim.id)
    assert item.state[CONF_LOCAL] == pytest.approx([7.0, 1.0])
    assert item.confidence > low


# ---------------------------------------------------------------------------- spectral health
RED = ["The red team plans the product launch", "The red team reviews the launch budget",
       "The red team books the launch venue"]
BLUE = ["The blue team plans the product launch", "The blue team reviews the launch slides",
        "The blue team books the launch caterer"]


def _spectral_scene(w):
    red = [w.store(t, kind="fact") for t in RED]
    blue = [w.store(t, kind="fact") for t in BLUE]
    w.clear_edges()
    now = w.clock.now()
    chain = lambda g: [Edge(x.id, y.id, "related", 1.0, 1.0, 0, now) for x, y in itertools.pairwise(g)]
    w.put_edges(chain(red) + chain(blue))
    return red, blue


def test_spectral_health_bridges_a_fragmented_graph(world):
    w = world()
    red, blue = _spectral_scene(w)
    rep = w.mem.sleep(w.scope)
    stage = rep.stages["spectral_kg_health"]
    ctx = stage["contexts"]["default"]
    assert ctx["components"] == [2, 1]
    assert ctx["fiedler"][0] == 0.0 and ctx["fiedler"][1] > 0.0
    (bridge,) = stage["bridges"]
    ends = {bridge["src"], bridge["dst"]}
    assert ends & {r.id for r in red} and ends & {b.id for b in blue}
    assert bridge["similarity"] >= 0.3
    assert (bridge["src"], bridge["dst"], BRIDGE) in w.edges()
    kv = w.kv(keys.KV_SPECTRAL)
    assert kv["fiedler"] == pytest.approx(ctx["fiedler"][1]) and kv["at"] == w.clock.now()

    # A second sleep over the same graph rescales lambda_2 instead of solving again.
    again = w.mem.sleep(w.scope).stages["spectral_kg_health"]["contexts"]["default"]
    assert again["fiedler"][0] == pytest.approx(ctx["fiedler"][1], rel=0.02)
    assert "fiedler_error" in again and again["fiedler_error"][0] <= 0.01
    assert "default" in w.kv(keys.KV_SPECTRAL_CACHE)

    w_off = world("spectral_kg_health")
    _spectral_scene(w_off)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["spectral_kg_health"] == OFF
    assert all(e.relation != BRIDGE for e in w_off.edges().values())
    assert w_off.kv(keys.KV_SPECTRAL) is None


# ---------------------------------------------------------------------------- compositional
SHARED = "weekly planning meeting on Monday morning"


def _contexts_scene(w):
    for ctx, words in (("work", ["quarterly report", "client invoice", "server upgrade"]),
                       ("home", ["garden fence", "piano lesson", "grocery list"])):
        scope = w.scope.with_context(ctx)
        w.store(f"The {SHARED}", scope=scope, kind="fact")
        for t in words:
            w.store(f"Remember the {t}", scope=scope, kind="fact")


def test_compositional_context_fits_a_shared_basis_across_contexts(world):
    w = world()
    _contexts_scene(w)
    rep = w.mem.sleep(w.scope)
    stage = rep.stages["compositional_context"]
    assert stage["context_sizes"] == {"home": 4, "work": 4}
    assert stage["shared_dim"] >= 1
    state = compositional.CompositionalState.from_json(w.kv(keys.KV_COMPOSITIONAL))
    assert state.shared_dim == stage["shared_dim"] and set(state.specific) == {"home", "work"}
    # the shared direction carries the sentence both contexts hold
    v = w.mem.embedder.embed([f"The {SHARED}"])[0]
    shared, _ = compositional.encode(v, "work", state=state)
    assert np.linalg.norm(shared) > 0.5

    w_off = world("compositional_context")
    _contexts_scene(w_off)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["compositional_context"] == OFF
    assert w_off.kv(keys.KV_COMPOSITIONAL) is None


# ---------------------------------------------------------------------------- curiosity
def _gap_scene(w):
    sure = w.store("Water boils at 100 degrees Celsius at sea level", kind="fact")
    unsure = w.store("The new intern might be fluent in Finnish", kind="fact")
    w.set(sure.id, conf_alpha=40.0, conf_beta=1.0)
    w.clear_edges()
    return sure, unsure


def test_curiosity_ranks_uncertain_knowledge_first(world):
    w = world()
    sure, unsure = _gap_scene(w)
    rep = w.mem.sleep(w.scope)
    stage = rep.stages["curiosity"]
    order = [g["id"] for g in stage["queue"]]
    assert order.index(unsure.id) < order.index(sure.id)
    queue = w.kv(keys.KV_CURIOSITY)
    assert [g["id"] for g in queue] == order
    assert queue[0]["priority"] >= queue[-1]["priority"]
    assert unsure.id in [m.id for m in w.mem.review_queue(w.scope, limit=5)]

    w_off = world("curiosity")
    _gap_scene(w_off)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["curiosity"] == OFF
    assert w_off.kv(keys.KV_CURIOSITY) is None


def test_curiosity_learning_progress_from_confidence_history(world):
    w = world()
    _, unsure = _gap_scene(w)
    for day in range(4):
        w.set(unsure.id, conf_alpha=1.0 + day, conf_beta=1.0)  # confidence rises each day
        rep = w.mem.sleep(w.scope)
        w.clock.advance(days=1)
    gap = next(g for g in rep.stages["curiosity"]["queue"] if g["id"] == unsure.id)
    assert gap["slope_per_day"] > 0 and gap["progress"] > 0


# ---------------------------------------------------------------------------- HyperAgent
def _monitor_scene(w):
    ms = metacognition.MonitorState()
    t = w.clock.now() - 3600
    for i in range(12):
        ms = metacognition.log_retrieval(ms, at=t + i, returned=5, used=0, query_kind="keyword")
        ms = metacognition.log_retrieval(ms, at=t + i, returned=5, used=3, query_kind="semantic")
    w.kv_put(keys.KV_METACOG, ms.to_dict())


def test_hyperagent_tunes_a_parameter_from_monitor_signals(world):
    w = world()
    _monitor_scene(w)
    rep = w.mem.sleep(w.scope)
    stage = rep.stages["metacognitive_hyperagent"]
    (change,) = stage["changes"]
    assert change["name"] == "lexical_weight" and change["new"] == pytest.approx(change["old"] + 0.05)
    kv = w.kv(keys.KV_HYPER)
    assert kv["values"]["lexical_weight"] == pytest.approx(change["new"])
    assert kv["log"][-1]["name"] == "lexical_weight"
    # the cooldown holds the parameter for a day
    again = w.mem.sleep(w.scope)
    assert again.stages["metacognitive_hyperagent"]["changes"] == []

    w_off = world("metacognitive_hyperagent")
    _monitor_scene(w_off)
    rep_off = w_off.mem.sleep(w_off.scope)
    assert rep_off.stages["metacognitive_hyperagent"] == OFF
    assert w_off.kv(keys.KV_HYPER) is None


# ---------------------------------------------------------------------------- the whole report
SLEEP_STAGES = [
    "short_term_expiry", "neuromodulator", "two_factor_hebbian", "simulation_selection_sleep", "triple_copy", "dual_process_cot",
    "ib_budget", "procedures", "bayesian_confidence", "spectral_kg_health", "compositional_context", "curiosity",
    "metacognitive_hyperagent", "retrievability", "stc_rescue", "archive", "restore", "review",
]


def test_sleep_report_lists_every_stage_in_order_as_plain_json(world):
    w = world()
    _selection_scene(w)
    _spectral_scene(w)
    w.clock.advance(days=2)
    rep = w.mem.sleep(w.scope)
    assert list(rep.stages) == SLEEP_STAGES
    assert json.loads(json.dumps(rep.as_dict()))["operation"] == "sleep"
    assert [k for k, v in rep.stages.items() if "skipped" in v] == []


def test_sleep_with_every_mechanism_off_changes_nothing(world):
    from zenbrain.registry import ALL_MECHANISMS

    w = world(*ALL_MECHANISMS)
    ids = _selection_scene(w)
    edges_before = {k: e.weight for k, e in w.edges().items()}
    def items():
        return {mid: (i.strength, i.archived, i.conf_alpha, i.layer, i.state) for mid in ids.values() for i in [w.get(mid)]}

    items_before = items()
    w.clock.advance(days=90)
    rep = w.mem.sleep(w.scope)
    assert list(rep.stages) == SLEEP_STAGES
    # Every mechanism stage is skipped; short-term expiry is a layer policy, not a mechanism.
    assert all("skipped" in v for k, v in rep.stages.items() if k != "short_term_expiry")
    assert {k: e.weight for k, e in w.edges().items()} == edges_before
    assert items() == items_before


def test_sleep_runs_on_an_empty_store(world):
    w = world()
    rep = w.mem.sleep(w.scope)
    assert list(rep.stages) == SLEEP_STAGES
    assert math.isclose(rep.stages["simulation_selection_sleep"]["threshold"], 0.5, abs_tol=0.05)


def test_triple_copy_state_is_what_recall_reads(world):
    """Promotion writes the same CopyState the coordinator's retrievability reads."""
    w = world()
    ids = _selection_scene(w)
    w.mem.sleep(w.scope)
    st = triple_copy.CopyState.from_dict(w.get(ids["win"]).state[keys.COPIES])
    assert st.deep_target > 0 and w.get(ids["win"]).layer is Layer.EPISODIC
