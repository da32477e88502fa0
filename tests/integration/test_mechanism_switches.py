"""Every store- and recall-time mechanism, switched on and off on the real coordinator path.

Each test runs one deterministic scenario (SimulatedClock, HashingEmbedder, fixed seed)
twice: with the configuration under test and with the same configuration minus one
mechanism (``Config.without(name)``). It asserts what the mechanism does when it is on
and the specific difference its absence makes. Where two mechanisms feed the same
quantity (Ebbinghaus and TripleCopy both give retrievability), the other one is switched
off in both runs so that the difference is attributable.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from zenbrain import state as keys
from zenbrain.clock import DAY, HOUR
from zenbrain.config import Config, RecallParams
from zenbrain.mechanisms import compositional, ebbinghaus, two_factor
from zenbrain.model import Layer, Scope
from zenbrain.pipeline import monitor_log
from zenbrain.pma import metacognition, neuromodulator, triple_copy
from zenbrain.pma.workspace import WorkspaceParams

SCOPE = Scope("u1")
# The paper's full-strength priors (score x R, layer weights as given): the scenarios below
# show what a mechanism does at that strength; the default, bounded priors are tested apart.
PAPER_PRIORS = Config(recall=RecallParams(retrievability_floor=0.0, layer_weight_strength=1.0))


def run_both(open_coord, mechanism: str, scenario: Callable[..., dict[str, Any]], base: Config | None = None,
             **open_kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scenario with ``base`` (default: everything on) and with ``base`` minus ``mechanism``."""
    base = base or Config()
    assert base.mechanisms.on(mechanism)
    on = scenario(*open_coord(base, "on", **open_kw))
    off = scenario(*open_coord(base.without(mechanism), "off", **open_kw))
    return on, off


def by_content(hits, text: str):
    found = [h for h in hits if h.item.content == text]
    assert len(found) == 1, f"{text!r} not among the hits"
    return found[0]


# ----------------------------------------------------------------------------- store time


EMOTIONAL = "The terrible car accident left me terrified and devastated!"
NEUTRAL = "The car was parked near the office building."


def test_emotional_tagging_tags_strengthens_and_slows_forgetting(open_coord):
    """On: an emotional memory is tagged (valence, arousal, significance), encoded more
    strongly, and after four days is more retrievable than a neutral one, so it outranks
    the neutral memory that matches the query better. Off: no tags, equal strength and
    retrievability, and the better match wins."""

    def scenario(coord, clock):
        emo, neutral = coord.store_many([dict(content=EMOTIONAL), dict(content=NEUTRAL)], SCOPE)
        clock.advance(days=4)
        hits = coord.recall("car", SCOPE, k=2, touch=False)
        return dict(emo=emo, neutral=neutral, hits=hits)

    on, off = run_both(open_coord, "emotional_tagging", scenario, base=PAPER_PRIORS)

    emo, neutral = on["emo"], on["neutral"]
    assert emo.valence < -0.5 and emo.arousal > 0.5
    assert emo.state[keys.SIGNIFICANCE] > 0.0
    assert neutral.valence == 0.0 and neutral.arousal == 0.0
    assert emo.strength > neutral.strength
    h_emo, h_neu = by_content(on["hits"], EMOTIONAL), by_content(on["hits"], NEUTRAL)
    assert h_emo.why.retrievability > h_neu.why.retrievability
    assert h_emo.why.dense < h_neu.why.dense  # the neutral memory is the better match ...
    assert on["hits"][0].item.content == EMOTIONAL  # ... but the emotional one is remembered

    emo, neutral = off["emo"], off["neutral"]
    assert (emo.valence, emo.arousal) == (0.0, 0.0)
    assert keys.SIGNIFICANCE not in emo.state
    assert emo.strength == pytest.approx(neutral.strength)
    h_emo, h_neu = by_content(off["hits"], EMOTIONAL), by_content(off["hits"], NEUTRAL)
    assert h_emo.why.retrievability == pytest.approx(h_neu.why.retrievability)
    assert off["hits"][0].item.content == NEUTRAL


ALIGNED = "The mobile app release ships after the QA sign-off"
UNALIGNED = "The garden hose is stored in the shed"


def test_priority_map_scores_goal_alignment_into_strength_and_rank(open_coord):
    """On: with a goal set, a goal-aligned memory gets a higher PriorityMap score, a
    stronger encoding and a larger recall factor 0.9 + 0.2 P. Off: no priority state,
    recall factor exactly 1 and equal strengths."""

    def scenario(coord, clock):
        coord.set_goal("ship the mobile app release", SCOPE)
        aligned, unaligned = coord.store_many([dict(content=ALIGNED), dict(content=UNALIGNED)], SCOPE)
        hits = coord.recall("release hose", SCOPE, k=2, touch=False)
        return dict(aligned=aligned, unaligned=unaligned, hits=hits)

    on, off = run_both(open_coord, "priority_map", scenario)

    pa, pu = on["aligned"].state[keys.PRIORITY], on["unaligned"].state[keys.PRIORITY]
    assert 0.0 <= pu < pa <= 1.0
    assert on["aligned"].strength > on["unaligned"].strength
    for h in on["hits"]:
        assert h.why.priority == pytest.approx(0.9 + 0.2 * h.item.state[keys.PRIORITY])
    assert by_content(on["hits"], ALIGNED).why.priority > by_content(on["hits"], UNALIGNED).why.priority

    assert keys.PRIORITY not in off["aligned"].state and keys.PRIORITY not in off["unaligned"].state
    assert off["aligned"].strength == pytest.approx(off["unaligned"].strength)
    assert all(h.why.priority == 1.0 for h in off["hits"])


OLD_MEETING = "Team meeting is on Tuesday at ten in room four"
NEW_MEETING = "Team meeting is on Wednesday at ten, room four"


def test_neuromodulator_surprise_raises_norepinephrine_and_the_revision_pe(open_coord):
    """On: stores and recalls emit neuromodulator events; a recall that matches poorly is a
    prediction error that raises NE, and a revision right after it has
    PE_eff = PE * (1 + 0.3 NE - 0.2 5HT) from the live levels, which pushes this
    correction from a selective edit into integration. Off: no neuromodulator state and
    the neutral factor 1 + 0.3 * 0.5 - 0.2 * 0.5 = 1.05, so the same correction is a
    selective edit."""

    def scenario(coord, clock):
        part = (SCOPE.user_id, SCOPE.agent_id)
        m = coord.store(OLD_MEETING, SCOPE)
        after_store = coord.storage.kv_get(part, keys.KV_NEURO)
        clock.advance(minutes=2)
        hits = coord.recall("who waters the garden plants", SCOPE, k=1)
        raw = coord.storage.kv_get(part, keys.KV_NEURO)
        levels = neuromodulator.levels(neuromodulator.NeuromodulatorState.from_dict(raw), now=clock.now()) if raw else None
        out = coord.revise(m.id, SCOPE, NEW_MEETING)
        return dict(after_store=after_store, top_dense=hits[0].why.dense, levels=levels, out=out)

    on, off = run_both(open_coord, "neuromodulator", scenario)

    assert on["after_store"] is not None
    assert on["top_dense"] < 0.5  # a poor match: the recall emitted a prediction error
    lv = on["levels"]
    assert lv["NE"] > 0.9
    plan = on["out"]["plan"]
    assert plan["pe_eff"] == pytest.approx(plan["pe_raw"] * (1 + 0.3 * lv["NE"] - 0.2 * lv["5HT"]))
    assert on["out"]["mode"] == "integration"
    assert on["out"]["memory"].content == f"{OLD_MEETING}. {NEW_MEETING}"

    assert off["after_store"] is None and off["levels"] is None
    plan_off = off["out"]["plan"]
    assert plan_off["pe_raw"] == pytest.approx(plan["pe_raw"])
    assert plan_off["pe_eff"] == pytest.approx(plan_off["pe_raw"] * 1.05)
    assert plan_off["pe_eff"] < plan["pe_eff"]
    assert off["out"]["mode"] == "selective_edit"
    assert off["out"]["memory"].content == "Team meeting is on Wednesday at ten room four"


def test_neuromodulator_revision_uses_the_configured_parameters(open_coord):
    params = neuromodulator.NeuromodulatorParams(phasic_half_life_s=10.0)
    coord, clock = open_coord(Config(params={"neuromodulator": params}), "fast_bursts")
    part = (SCOPE.user_id, SCOPE.agent_id)
    m = coord.store(OLD_MEETING, SCOPE)
    clock.advance(minutes=2)
    coord.recall("who waters the garden plants", SCOPE, k=1)  # a prediction error: NE burst
    clock.advance(minutes=3)  # 18 configured half-lives: the burst is gone; still inside the lability window
    state = neuromodulator.NeuromodulatorState.from_dict(coord.storage.kv_get(part, keys.KV_NEURO))
    lv = neuromodulator.levels(state, now=clock.now(), params=params)
    plan = coord.revise(m.id, SCOPE, NEW_MEETING)["plan"]
    assert plan["pe_eff"] == pytest.approx(plan["pe_raw"] * (1 + 0.3 * lv["NE"] - 0.2 * lv["5HT"]))


def test_metacognitive_monitor_logs_recalls_and_boosts_encoding_after_a_surprise(open_coord):
    """On: every recall is logged; a recall whose best hit matches poorly (PE > 0.7) opens a
    novelty window, and a memory stored 60 s later is encoded 1 + 0.2 * (1 - 60/600) = 1.18
    times stronger. Off: nothing is logged and the later memory gets no boost."""

    def scenario(coord, clock):
        part = (SCOPE.user_id, SCOPE.agent_id)
        coord.store("Quarterly tax forms are filed in April", SCOPE)
        clock.advance(hours=1)
        hits = coord.recall("purple elephant umbrella", SCOPE, k=1)
        clock.advance(seconds=60)
        later = coord.store("The bakery on the corner sells rye bread", SCOPE)
        log = monitor_log.load(coord.storage, part)
        return dict(top_dense=hits[0].why.dense, log=log, later=later)

    on, off = run_both(open_coord, "metacognitive_monitor", scenario)

    assert on["top_dense"] < 0.3
    state = on["log"]
    assert len(state.retrievals) == 1 and state.retrievals[0].returned == 1
    assert len(state.surprises) == 1
    assert state.surprises[0].pe == pytest.approx(1.0 - on["top_dense"])
    boost = 0.2 * (1.0 - 60.0 / 600.0)
    assert on["later"].strength == pytest.approx(off["later"].strength * (1.0 + boost))

    assert off["log"] == metacognition.MonitorState()


def test_metacognitive_novelty_boost_uses_the_configured_parameters(open_coord):
    params = metacognition.MetacognitionParams(novelty_boost=0.3)
    base = Config(params={"metacognitive_monitor": params})

    def scenario(coord, clock):
        coord.store("Quarterly tax forms are filed in April", SCOPE)
        clock.advance(hours=1)
        coord.recall("purple elephant umbrella", SCOPE, k=1)
        clock.advance(seconds=60)
        return dict(later=coord.store("The bakery on the corner sells rye bread", SCOPE))

    on, off = run_both(open_coord, "metacognitive_monitor", scenario, base=base)
    assert on["later"].strength == pytest.approx(off["later"].strength * (1.0 + 0.3 * (1.0 - 60.0 / 600.0)))


# ----------------------------------------------------------------------------- scheduling


def test_fsrs_schedules_reviews_from_recall_and_feedback(open_coord):
    """On: a new memory gets an FSRS card due a day later and shows up in the review queue
    when due; a spaced recall is an FSRS review (graded from rank and similarity) and
    explicit feedback another. Off: no card, no due date, an empty review queue."""

    def scenario(coord, clock):
        m = coord.store("The boiler service contract renews every October", SCOPE)
        stored = coord.get(m.id, SCOPE).state
        clock.advance(hours=12)
        queue_early = [i.id for i in coord.review_queue(SCOPE)]
        clock.advance(hours=13)  # 25 h after encoding: past the first due date
        queue_due = [i.id for i in coord.review_queue(SCOPE)]
        coord.recall("boiler service contract renews", SCOPE, k=1)
        after_recall = coord.get(m.id, SCOPE).state
        queue_after = [i.id for i in coord.review_queue(SCOPE)]
        clock.advance(days=30)
        after_review = coord.review(m.id, SCOPE, "good").state
        return dict(id=m.id, now=clock.now(), stored=stored, queue_early=queue_early, queue_due=queue_due,
                    after_recall=after_recall, queue_after=queue_after, after_review=after_review)

    on, off = run_both(open_coord, "fsrs", scenario)

    assert on["stored"][keys.FSRS]["reps"] == 0
    assert on["stored"]["due_at"] == pytest.approx(1_700_000_000.0 + DAY)
    assert on["queue_early"] == [] and on["queue_due"] == [on["id"]]
    card = on["after_recall"][keys.FSRS]
    assert card["reps"] == 1 and card["last_rating"] in (3, 4)  # good or easy: rank 1, close match
    assert on["after_recall"]["due_at"] > 1_700_000_000.0 + 25 * HOUR
    assert on["queue_after"] == []  # reviewed: no longer due
    assert on["after_review"][keys.FSRS]["reps"] == 2
    assert on["after_review"][keys.FSRS]["last_rating"] == 3
    assert on["after_review"]["due_at"] > on["now"]

    for key in ("stored", "after_recall", "after_review"):
        assert keys.FSRS not in off[key] and "due_at" not in off[key]
    assert off["queue_early"] == off["queue_due"] == off["queue_after"] == []


@pytest.mark.parametrize("context_shift", [False, True], ids=["stable_context", "shifted_context"])
def test_vmpfc_scales_the_fsrs_interval_by_context_prediction_error(open_coord, context_shift):
    """On: the second spaced recall of a memory compares the current context with the one
    of its previous review. A stable context (PE ~ 0) lengthens the FSRS interval by the
    factor 1 + 0.6 (1 - 2 sigmoid(6 (PE - 0.5))) ~ 1.54; a context that drifted to another
    topic in between (PE > 0.5) shortens it. Off: the FSRS interval is used unchanged.
    The FSRS card itself (stability, reps) is the same in both runs."""

    def scenario(coord, clock):
        m = coord.store("The boiler service contract renews every October", SCOPE)
        coord.store("Piano lessons with Mr Ferreira happen on Thursday afternoons", SCOPE)
        clock.advance(hours=2)
        coord.recall("boiler service contract", SCOPE, k=1)
        first = coord.get(m.id, SCOPE).state
        clock.advance(days=3)
        if context_shift:
            for i in range(15):
                coord.recall(f"piano lessons on Thursday afternoons {i}", SCOPE, k=1)
                clock.advance(minutes=1)
        coord.recall("boiler service contract", SCOPE, k=1)
        second = coord.get(m.id, SCOPE).state
        return dict(first=first, second=second, now=clock.now())

    on, off = run_both(open_coord, "vmpfc_fsrs", scenario)

    # First review: no earlier review context, PE 0.5, factor exactly 1.
    assert on["first"]["vmpfc"]["factor"] == pytest.approx(1.0)
    assert on["first"]["due_at"] == pytest.approx(off["first"]["due_at"])

    st_on, st_off = on["second"], off["second"]
    assert st_on[keys.FSRS]["stability"] == pytest.approx(st_off[keys.FSRS]["stability"])
    assert st_on[keys.FSRS]["reps"] == st_off[keys.FSRS]["reps"] == 2
    factor, pe = st_on["vmpfc"]["factor"], st_on["vmpfc"]["pe"]
    interval_on = st_on["due_at"] - on["now"]
    interval_off = st_off["due_at"] - off["now"]
    assert interval_on == pytest.approx(factor * interval_off, rel=1e-6)
    if context_shift:
        assert pe > 0.5 and factor < 1.0 and interval_on < interval_off
    else:
        assert pe < 0.05 and factor > 1.5 and interval_on > interval_off
    assert "vmpfc" not in st_off


# ----------------------------------------------------------------------------- retrievability


OLD_PERMIT = "Parking permit for the north garage is renewed in March"
FRESH_PERMIT = "Parking permit for the north garage was renewed by the office"
PERMIT_QUERY = "parking permit north garage renewed March"


MARCH_PERMIT = "The parking permit for the north garage is renewed in March"
APRIL_PERMIT = "The parking permit for the north garage is renewed in April"


def test_default_retrievability_prior_reorders_near_ties_only(open_coord):
    """With the default floor (0.9) a memory unused for 30 days keeps 0.9 of its score: of
    two equally good matches the fresh one ranks first (off: both weigh 1), but an old
    memory that matches clearly better still wins, where the paper's score x R (floor 0)
    buries it below the fresh one."""

    def tie(coord, clock):  # episodes: two renewals, not a fact that changed
        old = coord.store(MARCH_PERMIT, SCOPE, layer="episodic")
        clock.advance(days=30)
        coord.store(APRIL_PERMIT, SCOPE, layer="episodic")
        return dict(old=old, hits=coord.recall("parking permit north garage renewed", SCOPE, k=2, touch=False))

    on, off = run_both(open_coord, "ebbinghaus_decay", tie, base=Config().without("triple_copy"))
    assert on["hits"][0].item.content == APRIL_PERMIT
    assert by_content(on["hits"], MARCH_PERMIT).why.retrievability == pytest.approx(0.9 + 0.1 * math.exp(-30.0))
    assert all(h.why.retrievability == 1.0 for h in off["hits"])

    def clear(coord, clock):
        coord.store(OLD_PERMIT, SCOPE)
        clock.advance(days=30)
        coord.store(FRESH_PERMIT, SCOPE)
        return dict(hits=coord.recall(PERMIT_QUERY, SCOPE, k=2, touch=False))

    bounded = clear(*open_coord(Config().without("triple_copy"), "bounded"))
    paper = clear(*open_coord(PAPER_PRIORS.without("triple_copy"), "paper"))
    assert [h.item.content for h in bounded["hits"]] == [OLD_PERMIT, FRESH_PERMIT]
    assert [h.item.content for h in paper["hits"]] == [FRESH_PERMIT, OLD_PERMIT]


def test_ebbinghaus_decay_ranks_an_old_unaccessed_memory_below_a_fresh_one(open_coord):
    """On: 30 days without access leave R = exp(-30 / S) ~ 0 for the old memory, so the fresh
    one ranks first although the old one matches better. Off: nothing fades (R = 1) and
    the better match wins. TripleCopy, the other source of retrievability, is off in both
    runs. In the default configuration a spaced recall also multiplies the Ebbinghaus
    stability by 1.3 (checked in the second test)."""

    def scenario(coord, clock):
        old = coord.store(OLD_PERMIT, SCOPE)
        clock.advance(days=30)
        fresh = coord.store(FRESH_PERMIT, SCOPE)
        hits = coord.recall(PERMIT_QUERY, SCOPE, k=2, touch=False)
        return dict(old=old, fresh=fresh, hits=hits)

    on, off = run_both(open_coord, "ebbinghaus_decay", scenario, base=PAPER_PRIORS.without("triple_copy"))

    h_old, h_fresh = by_content(on["hits"], OLD_PERMIT), by_content(on["hits"], FRESH_PERMIT)
    assert h_old.why.dense > h_fresh.why.dense
    assert h_old.why.retrievability == pytest.approx(math.exp(-30.0), abs=1e-9)
    assert h_fresh.why.retrievability == pytest.approx(1.0)
    assert [h.item.content for h in on["hits"]] == [FRESH_PERMIT, OLD_PERMIT]

    assert all(h.why.retrievability == 1.0 for h in off["hits"])
    assert [h.item.content for h in off["hits"]] == [OLD_PERMIT, FRESH_PERMIT]


def test_ebbinghaus_decay_grows_stability_on_spaced_recall_and_review(open_coord):
    def scenario(coord, clock):
        m = coord.store(OLD_PERMIT, SCOPE)
        clock.advance(hours=2)
        coord.recall(PERMIT_QUERY, SCOPE, k=1)  # spaced: an hour or more since the last access
        after_recall = coord.get(m.id, SCOPE).stability
        coord.recall(PERMIT_QUERY, SCOPE, k=1)  # massed: no stability gain
        after_massed = coord.get(m.id, SCOPE).stability
        clock.advance(days=2)
        after_review = coord.review(m.id, SCOPE, "good").stability
        return dict(after_recall=after_recall, after_massed=after_massed, after_review=after_review)

    on, off = run_both(open_coord, "ebbinghaus_decay", scenario)

    growth = ebbinghaus.DEFAULTS.growth_factor
    assert on["after_recall"] == pytest.approx(growth)
    assert on["after_massed"] == pytest.approx(growth)
    assert on["after_review"] == pytest.approx(growth**2)
    assert off["after_recall"] == off["after_massed"] == off["after_review"] == 1.0


A_RECALLED = "The spare house key is under the blue flowerpot"
B_IDLE = "The spare car key hangs on the hook by the door"


def test_triple_copy_reinforcement_changes_copies_and_retrievability(open_coord):
    """On: each memory carries three copies; a recall re-encodes the fast and medium copies
    from a higher strength and raises the deep target; twenty days later the recalled
    memory is more retrievable than its idle twin, and an explicit review reinforces the
    idle one too. Off: no copies, R = 1 for both. Ebbinghaus is off in both runs, so
    retrievability comes from the copies alone."""

    def scenario(coord, clock):
        a, b = coord.store_many([dict(content=A_RECALLED), dict(content=B_IDLE)], SCOPE)
        clock.advance(hours=2)
        coord.recall("spare house key flowerpot", SCOPE, k=1)
        t_recall = clock.now()
        a1, b1 = coord.get(a.id, SCOPE), coord.get(b.id, SCOPE)
        clock.advance(days=20)
        hits = coord.recall("spare key", SCOPE, k=2, touch=False)
        b2 = coord.review(b.id, SCOPE, "good")
        return dict(a0=a, b0=b, a1=a1, b1=b1, hits=hits, b2=b2, t_recall=t_recall, now=clock.now())

    on, off = run_both(open_coord, "triple_copy", scenario, base=PAPER_PRIORS.without("ebbinghaus_decay"))

    c_a0 = on["a0"].state[keys.COPIES]
    assert c_a0["s0"] == pytest.approx(on["a0"].strength) and c_a0["deep_target"] == 0.0
    c_a1 = on["a1"].state[keys.COPIES]
    assert c_a1["s0"] > c_a0["s0"]
    assert c_a1["anchor"] == on["t_recall"]
    assert c_a1["deep_target"] > 0.0
    assert on["b1"].state[keys.COPIES] == on["b0"].state[keys.COPIES]  # not recalled: unchanged

    h_a, h_b = by_content(on["hits"], A_RECALLED), by_content(on["hits"], B_IDLE)
    for h in (h_a, h_b):
        expected = triple_copy.evaluate(triple_copy.CopyState.from_dict(h.item.state[keys.COPIES]),
                                        now=on["now"]).composite
        assert h.why.retrievability == pytest.approx(expected)
    assert h_b.why.retrievability < h_a.why.retrievability < 1.0
    c_b2 = on["b2"].state[keys.COPIES]
    assert c_b2["s0"] > on["b0"].state[keys.COPIES]["s0"] and c_b2["anchor"] == on["now"]

    for key in ("a0", "a1", "b1", "b2"):
        assert keys.COPIES not in off[key].state
    assert all(h.why.retrievability == 1.0 for h in off["hits"])


# ----------------------------------------------------------------------------- graph


STARTER = "Sourdough starter is fed with rye flour before baking bread"
DOUGH = "Bread dough rests overnight before baking in the oven"
MITTS = "Oven mitts hang beside the spice rack"


def test_two_factor_hebbian_co_recall_edges_strengthen_and_boost_a_ranking(open_coord):
    """On: two memories recalled together get a co_recall edge; each repeated co-recall
    raises its weight (tag x cosine amplitude) and lowers its variance (maturation). The
    boost then lifts a memory toward a linked memory that matches the query better (by the
    share recall_boost(w, var) - 1 of the gap): the dough, linked to the best match, rises
    above the mitts, which match "flour oven" slightly better than it. The best match itself
    is not lifted, and a link to a memory that matches worse lifts nothing: for "oven" the
    dough's link to the starter leaves the mitts first. Off: no co_recall edges, boost 1,
    the better match wins."""

    def scenario(coord, clock):
        part = (SCOPE.user_id, SCOPE.agent_id)
        for text in (STARTER, DOUGH, MITTS):
            coord.store(text, SCOPE)
            clock.advance(minutes=1)
        trace = []
        for _ in range(8):
            clock.advance(minutes=5)
            hits = coord.recall("sourdough starter bread dough", SCOPE, k=2)
            assert {h.item.content for h in hits} == {STARTER, DOUGH}
            trace.append([e for e in coord.storage.edges(part) if e.relation == "co_recall"])
        lifted = coord.recall("flour oven", SCOPE, k=3, touch=False)
        unlifted = coord.recall("oven", SCOPE, k=3, touch=False)
        return dict(trace=trace, lifted=lifted, unlifted=unlifted)

    on, off = run_both(open_coord, "two_factor_hebbian", scenario)

    assert all(len(edges) == 1 for edges in on["trace"])
    weights = [edges[0].weight for edges in on["trace"]]
    variances = [edges[0].variance for edges in on["trace"]]
    assert [edges[0].activations for edges in on["trace"]] == list(range(1, 9))
    assert all(b > a for a, b in itertools.pairwise(weights))
    assert all(b < a for a, b in itertools.pairwise(variances))
    assert weights[0] > two_factor.DEFAULTS.initial_weight

    edge = on["trace"][-1][0]
    ranked = on["lifted"]
    h_starter, h_dough, h_mitts = (by_content(ranked, t) for t in (STARTER, DOUGH, MITTS))
    assert h_starter.why.fused > h_mitts.why.fused > h_dough.why.fused  # the mitts match better ...
    assert h_dough.why.hebbian_boost == pytest.approx(
        two_factor.association_lift(edge.weight, edge.variance, h_dough.why.fused, h_starter.why.fused))
    assert h_dough.why.hebbian_boost > 1.0
    assert h_starter.why.hebbian_boost == 1.0 and h_mitts.why.hebbian_boost == 1.0
    assert [h.item.content for h in ranked] == [STARTER, DOUGH, MITTS]  # ... but the starter's associate wins
    assert h_dough.score < h_starter.score

    ranked = on["unlifted"]
    h_starter, h_dough = by_content(ranked, STARTER), by_content(ranked, DOUGH)
    assert h_dough.why.fused > h_starter.why.fused
    assert h_dough.why.hebbian_boost == 1.0  # its associate matches "oven" worse than it does
    assert h_starter.why.hebbian_boost > 1.0  # and lifts the starter toward the dough instead
    assert h_starter.score < h_dough.score
    assert ranked[0].item.content == MITTS

    assert all(edges == [] for edges in off["trace"])
    assert all(h.why.hebbian_boost == 1.0 for h in off["lifted"] + off["unlifted"])
    assert [h.item.content for h in off["lifted"]] == [STARTER, MITTS, DOUGH]
    assert off["unlifted"][0].item.content == MITTS


def test_two_factor_boost_flows_only_through_associations_co_activation_taught(open_coord):
    """The dough and the starter stored in one batch are linked at once (a temporal edge,
    never co-activated): for a query the starter matches best, that link lifts the dough by
    nothing. Recalled together twice, they get a co_recall edge, and then the same query
    lifts the dough toward the starter."""
    coord, clock = open_coord(Config(), "on")
    part = (SCOPE.user_id, SCOPE.agent_id)
    coord.store_many([dict(content=STARTER), dict(content=DOUGH)], SCOPE)
    stored = coord.storage.edges(part)
    assert stored and all(e.activations == 0 for e in stored)
    assert any(e.relation == "temporal" for e in stored)

    def ranked():
        hits = coord.recall("sourdough rye", SCOPE, k=2, touch=False)
        return by_content(hits, STARTER), by_content(hits, DOUGH)

    starter, dough = ranked()
    assert starter.why.fused > dough.why.fused > 0.0
    assert starter.why.hebbian_boost == 1.0 and dough.why.hebbian_boost == 1.0
    for _ in range(2):
        clock.advance(minutes=5)
        coord.recall("sourdough starter bread dough", SCOPE, k=2)
    learned = [e for e in coord.storage.edges(part) if e.relation == "co_recall"]
    assert len(learned) == 1 and learned[0].activations == 2
    starter, dough = ranked()
    assert starter.why.hebbian_boost == 1.0
    assert dough.why.hebbian_boost == pytest.approx(two_factor.association_lift(
        learned[0].weight, learned[0].variance, dough.why.fused, starter.why.fused))
    assert dough.why.hebbian_boost > 1.0


def test_a_declared_relation_carries_the_lift_from_the_start(open_coord):
    """What an application declares goes together (``relate``) is knowledge, not a store-time
    resemblance: the dough, related to the starter, is lifted toward it at once, while the
    library's own temporal link between the two lifts nothing until they are recalled
    together (the test above)."""
    coord, _ = open_coord(Config(), "on")
    starter = coord.store(STARTER, SCOPE)
    dough = coord.store(DOUGH, SCOPE)

    def ranked():
        hits = coord.recall("sourdough rye", SCOPE, k=2, touch=False)
        return by_content(hits, STARTER), by_content(hits, DOUGH)

    s, d = ranked()
    assert s.why.fused > d.why.fused > 0.0 and d.why.hebbian_boost == 1.0
    edge = coord.relate(dough.id, starter.id, "made_from", SCOPE, weight=2.0)
    s, d = ranked()
    assert s.why.hebbian_boost == 1.0
    assert d.why.hebbian_boost == pytest.approx(two_factor.association_lift(
        edge.weight, edge.variance, d.why.fused, s.why.fused))
    assert d.why.hebbian_boost > 1.0


def test_stability_protector_slows_the_learning_of_maturing_co_recall_edges(open_coord):
    """The StabilityProtector also gates Hebbian learning: a co-activation step on an edge
    of variance s2 has learning rate eta (1 - 0.5 (1 - s2)). On: after the first
    co-recall (s2 = 1, no lock) every step adds less weight than without the protector;
    the variance path (maturation) is the same in both runs."""

    def scenario(coord, clock):
        part = (SCOPE.user_id, SCOPE.agent_id)
        for text in (STARTER, DOUGH, MITTS):
            coord.store(text, SCOPE)
            clock.advance(minutes=1)
        trace = []
        for _ in range(5):
            clock.advance(minutes=5)
            coord.recall("sourdough starter bread dough", SCOPE, k=2)
            (edge,) = [e for e in coord.storage.edges(part) if e.relation == "co_recall"]
            trace.append(edge)
        return dict(trace=trace)

    on, off = run_both(open_coord, "stability_protector", scenario)
    w_on = [e.weight for e in on["trace"]]
    w_off = [e.weight for e in off["trace"]]
    assert w_on[0] == pytest.approx(w_off[0])  # a new edge (variance 1) is not locked
    steps_on = np.diff(w_on)
    steps_off = np.diff(w_off)
    assert np.all(steps_on > 0) and np.all(steps_on < steps_off)
    assert [e.variance for e in on["trace"]] == pytest.approx([e.variance for e in off["trace"]])


def test_store_time_edges_stay_inside_the_context(open_coord):
    coord, _clock = open_coord(Config(), "contexts")
    part = (SCOPE.user_id, SCOPE.agent_id)
    personal = coord.store("Alice Smith leads the platform team at Acme", Scope("u1", context="personal"))
    work = coord.store("Alice Smith leads the platform team meetings", Scope("u1", context="work"))
    context_of = {personal.id: "personal", work.id: "work"}
    crossing = [e for e in coord.storage.edges(part) if context_of[e.src] != context_of[e.dst]]
    assert crossing == []


# ----------------------------------------------------------------------------- fusion


EPISODE = "Dinner with Maria at the harbour restaurant, with the whole team"
FACT = "Dinner with Maria at the harbour restaurant"


CLOSE_EPISODE = "We had dinner with Maria at the harbour restaurant"


def test_default_layer_weights_enter_tempered(open_coord):
    """By default a layer weight w enters as w ** 0.25 (the temporal query's episodic 2.0 as
    1.19): an episode that matches a little worse than the fact still outranks it, and
    with ``query_aware_fusion`` off the fact wins."""

    def scenario(coord, clock):
        coord.store_many([dict(content=CLOSE_EPISODE, layer="episodic"), dict(content=FACT, layer="semantic")], SCOPE)
        return dict(hits=coord.recall("When was dinner with Maria at the harbour restaurant?", SCOPE, k=2, touch=False))

    on, off = run_both(open_coord, "query_aware_fusion", scenario)
    h_ep, h_fact = by_content(on["hits"], CLOSE_EPISODE), by_content(on["hits"], FACT)
    assert (h_ep.why.layer_weight, h_fact.why.layer_weight) == (pytest.approx(2.0 ** 0.25), 1.0)
    assert on["hits"][0].item.content == CLOSE_EPISODE
    assert off["hits"][0].item.content == FACT


def test_query_aware_fusion_weights_the_episodic_layer_for_temporal_queries(open_coord):
    """On: a temporal query weights episodic memories x2.0, so the episode outranks the
    semantic fact that matches the words better. Off: every layer weighs 1 and the fact
    wins."""

    def scenario(coord, clock):
        coord.store_many([dict(content=EPISODE, layer="episodic"), dict(content=FACT, layer="semantic")], SCOPE)
        return dict(hits=coord.recall("When was dinner with Maria at the harbour restaurant?", SCOPE, k=2, touch=False))

    on, off = run_both(open_coord, "query_aware_fusion", scenario, base=PAPER_PRIORS)

    assert on["hits"].query_type == "temporal"
    h_ep, h_fact = by_content(on["hits"], EPISODE), by_content(on["hits"], FACT)
    assert h_ep.item.layer is Layer.EPISODIC and h_fact.item.layer is Layer.SEMANTIC
    assert (h_ep.why.layer_weight, h_fact.why.layer_weight) == (2.0, 1.0)
    assert h_ep.why.dense < h_fact.why.dense
    assert on["hits"][0].item.content == EPISODE

    assert all(h.why.layer_weight == 1.0 for h in off["hits"])
    assert off["hits"][0].item.content == FACT


TOPICS = ["budget", "roadmap", "hiring", "launch", "offsite", "security", "pricing", "design", "support", "billing",
          "onboarding", "analytics", "marketing", "sales", "legal", "travel", "training", "research", "infra", "docs"]
TICKET = "Ticket QX-7731 concerns the broken staircase light"


def test_bm25_hybrid_finds_a_memory_that_matches_only_by_a_rare_keyword(open_coord):
    """On: BM25 adds lexical candidates, so the one memory holding the rare ticket number
    is found (and ranks first) although sixty meeting notes are closer in embedding space.
    Off: candidates come from the dense index only (its top 50 per layer) and the ticket
    memory is never considered."""

    def scenario(coord, clock):
        coord.store_many([dict(content=f"Notes from the weekly project meeting about {t}, part {r}")
                          for r in range(3) for t in TOPICS] + [dict(content=TICKET)], SCOPE)
        return dict(hits=coord.recall("weekly project meeting notes mentioning QX-7731", SCOPE, k=3, touch=False))

    on, off = run_both(open_coord, "bm25_hybrid", scenario)

    assert on["hits"].info["lexical"] > 0
    assert on["hits"][0].item.content == TICKET
    assert on["hits"][0].why.lexical == pytest.approx(1.0)
    assert on["hits"][0].why.dense < min(h.why.dense for h in on["hits"][1:])

    assert off["hits"].info["lexical"] == 0
    assert off["hits"].info["candidates"] == 50
    assert TICKET not in [h.item.content for h in off["hits"]]


# ----------------------------------------------------------------------------- facts


def test_imad_debate_arbitrates_a_fact_that_contradicts_two_stored_ones(open_coord):
    """On: a new fact contradicting two stored facts triggers a debate before commit; without
    a chat model the evidence-weighted arbitration keeps the two old facts (log-sum-exp of
    two equal witnesses beats one), the debate is logged in the store report, the
    partition's debate log and the memory's history, and the new fact loses confidence
    (Beta(1, 1) -> Beta(1, 2)) and is marked disputed. Off: the contradictions are still
    detected and linked, but nothing is debated and the confidence stays at 0.5."""

    def scenario(coord, clock):
        part = (SCOPE.user_id, SCOPE.agent_id)
        a = coord.store("Alice lives in Berlin", SCOPE)
        clock.advance(minutes=1)
        b = coord.store("Alice lives in Berlin with her two cats", SCOPE)
        clock.advance(minutes=1)
        new = coord.store("Alice lives in Paris", SCOPE)
        report = coord.last_store_report
        contradicts = {(e.src, e.dst) for e in coord.storage.edges(part) if e.relation == "contradicts"}
        return dict(a=a, b=b, new=coord.get(new.id, SCOPE), report=report, contradicts=contradicts,
                    log=coord.storage.kv_get(part, keys.KV_DEBATES),
                    history=[ev.action for ev in coord.history(new.id, SCOPE)],
                    old=[coord.get(x.id, SCOPE) for x in (a, b)])

    on, off = run_both(open_coord, "imad_debate", scenario)

    for run in (on, off):
        assert run["new"].layer is Layer.SEMANTIC
        assert run["contradicts"] == {(run["new"].id, run["a"].id), (run["new"].id, run["b"].id)}

    (debate,) = on["report"]["debates"]
    assert debate["new_id"] == on["new"].id
    assert debate["method"] == "arbitration" and debate["verdict"] == "keep_old"
    assert set(debate["winners"]) == {on["a"].id, on["b"].id} and debate["losers"] == [on["new"].id]
    assert on["log"] == [debate]
    assert "debated" in on["history"]
    assert (on["new"].conf_alpha, on["new"].conf_beta) == (1.0, 2.0)
    assert on["new"].confidence == pytest.approx(1 / 3)
    assert on["new"].metadata.get("disputed") is True
    assert all(o.confidence == 0.5 for o in on["old"])  # winners keep their confidence

    assert off["report"]["debates"] == [] and off["log"] is None
    assert "debated" not in off["history"]
    assert (off["new"].conf_alpha, off["new"].conf_beta) == (1.0, 1.0)
    assert "disputed" not in off["new"].metadata


def test_imad_debate_needs_two_contradicted_facts(open_coord):
    """One contradicted stored fact is linked ('contradicts') but not debated: the debate
    threshold is two (min_contradictions)."""
    coord, clock = open_coord(Config(), "single")
    part = (SCOPE.user_id, SCOPE.agent_id)
    old = coord.store("Bob works at Acme", SCOPE)
    clock.advance(minutes=1)
    new = coord.store("Bob works at Globex", SCOPE)
    assert coord.last_store_report["debates"] == []
    assert [(e.src, e.dst) for e in coord.storage.edges(part) if e.relation == "contradicts"] == [(new.id, old.id)]
    assert coord.get(new.id, SCOPE).confidence == 0.5


BOILS = "Water boils at 100 degrees Celsius at sea level"
BOILS_AGAIN = "At sea level, water boils at 100 degrees Celsius"


def test_bayesian_confidence_near_duplicate_fact_supports_and_raises_confidence(open_coord):
    """On: a new fact within cosine 0.9 of a stored one (and not contradicting it) gets a
    'supports' edge to it and one supporting observation of strength = cosine:
    Beta(1, 1) -> Beta(1 + cos, 1). Off: no supports edge, confidence stays 0.5."""

    def scenario(coord, clock):
        part = (SCOPE.user_id, SCOPE.agent_id)
        old = coord.store(BOILS, SCOPE)
        clock.advance(minutes=1)
        new = coord.store(BOILS_AGAIN, SCOPE)
        vecs = coord.storage.vectors(part, [old.id, new.id])
        supports = [(e.src, e.dst) for e in coord.storage.edges(part) if e.relation == "supports"]
        return dict(old=old, new=coord.get(new.id, SCOPE), cos=float(vecs[0] @ vecs[1]), supports=supports)

    on, off = run_both(open_coord, "bayesian_confidence", scenario)

    assert on["cos"] >= 0.9
    assert on["supports"] == [(on["new"].id, on["old"].id)]
    # The store computed the cosine from the new vector in float32; the test reads both back
    # from storage, in float16 (about three significant digits).
    assert on["new"].conf_alpha == pytest.approx(1.0 + on["cos"], rel=1e-3)
    assert on["new"].conf_beta == 1.0
    assert on["new"].confidence > 0.6

    assert off["supports"] == []
    assert (off["new"].conf_alpha, off["new"].conf_beta) == (1.0, 1.0)


def test_bayesian_confidence_off_leaves_confidence_alone_on_a_confirming_revision(open_coord):
    coord, _clock = open_coord(Config().without("bayesian_confidence"), "off")
    m = coord.store(BOILS, SCOPE)
    out = coord.revise(m.id, SCOPE, BOILS)  # the same content again: PE 0, 'confirmed'
    assert out["mode"] == "confirmed"
    item = coord.get(m.id, SCOPE)
    assert (item.conf_alpha, item.conf_beta) == (1.0, 1.0)


# ----------------------------------------------------------------------------- contexts


WORK = Scope("u1", context="work")
PERSONAL = Scope("u1", context="personal")
LINKED = Config(context_links=frozenset({("work", "personal")}))
WORK_NOTES = ["Weekly calendar review every Monday morning", "Emails are answered before lunch on weekdays",
              "Exercise break for a walk around the block at noon", "Deadline for the quarterly report is Friday",
              "Standup meeting with the backend team at nine", "Expense reports go to the finance department"]
PERSONAL_NOTES = ["Weekly calendar review every Sunday evening", "Emails are answered after dinner on weekends",
                  "Exercise with a run around the park at dawn", "Dentist appointment next Tuesday afternoon",
                  "Yoga class with Emma on Wednesday night", "Birthday dinner for mum on Saturday"]
COMP_PARAMS = compositional.CompositionalParams(per_context_dim=8, min_context_size=3, agreement=0.6)
COMP_QUERY = "calendar review and emails"


def _compositional_scenario(coord, clock):
    """Store both contexts, fit the shared/specific bases on the stored vectors and put the
    state where the coordinator reads it (the sleep cycle does not fit it)."""
    part = (WORK.user_id, WORK.agent_id)
    work = coord.store_many([dict(content=t) for t in WORK_NOTES], WORK)
    personal = coord.store_many([dict(content=t) for t in PERSONAL_NOTES], PERSONAL)
    ids = [i.id for i in work + personal]
    vecs = coord.storage.vectors(part, ids)
    state = compositional.fit(vectors=vecs, contexts=["work"] * len(work) + ["personal"] * len(personal),
                              params=COMP_PARAMS)
    with coord.storage.transaction() as tx:
        tx.kv_put(part, {keys.KV_COMPOSITIONAL: state.to_json()})
    hits = coord.recall(COMP_QUERY, WORK, k=12, touch=False)
    qvec = coord.embedder.embed([COMP_QUERY])[0]
    raw = {i: float(v @ qvec) for i, v in zip(ids, vecs)}
    shared = {i: float(s) for i, s in zip(ids, np.atleast_1d(compositional.cross_context_similarity(qvec, vecs, state=state)))}
    return dict(hits=hits, raw=raw, shared=shared, state=state)


def test_compositional_context_scores_cross_context_hits_through_the_shared_component(open_coord):
    """On: a memory from a linked context (personal, read from work) is compared with the
    query through the learned shared subspace only: its dense similarity is the cosine of
    the shared components, and its fused score is built from it; memories of the
    reader's own context are untouched. Off: foreign memories keep their raw cosine."""

    on, off = run_both(open_coord, "compositional_context", _compositional_scenario, base=LINKED)

    assert on["state"].shared_dim >= 2
    rp = LINKED.recall
    foreign = [h for h in on["hits"] if h.item.context == "personal"]
    assert len(foreign) == len(PERSONAL_NOTES)
    changed = 0
    for h in foreign:
        s = max(0.0, on["shared"][h.item.id])
        assert h.why.other["cross_context_shared_sim"] == pytest.approx(on["shared"][h.item.id], abs=1e-6)
        assert h.why.dense == pytest.approx(s, abs=1e-6)
        assert h.why.layer_weight == pytest.approx(rp.cross_context_weight)
        added = sum(h.why.other.get(p, 0.0) for p in ("neighbours", "speaker", "time"))
        assert h.why.fused == pytest.approx(h.why.layer_weight * (h.why.other["fusion"] + added), abs=1e-6)
        changed += abs(s - max(0.0, on["raw"][h.item.id])) > 0.05
    assert changed >= 3  # the shared-space similarity really differs from the raw cosine
    # The personal calendar review is phrased like its work twin; in the shared subspace it
    # matches the query much better than its raw cosine says.
    cal = by_content(on["hits"], PERSONAL_NOTES[0])
    assert cal.why.dense > on["raw"][cal.item.id] + 0.2

    off_by_text = {h.item.content: h for h in off["hits"]}
    for h in off["hits"]:
        assert "cross_context_shared_sim" not in h.why.other
        assert h.why.dense == pytest.approx(max(0.0, off["raw"][h.item.id]), abs=1e-6)
    for h in on["hits"]:
        if h.item.context == "work":  # same-context hits are scored identically in both runs
            assert h.why.dense == pytest.approx(off_by_text[h.item.content].why.dense, abs=1e-6)
            assert "cross_context_shared_sim" not in h.why.other


def test_compositional_context_basis_fitted_by_sleep_is_used_by_recall(open_coord):
    """The same contexts, with the basis fitted by the sleep cycle instead of by hand. On:
    sleep's compositional stage fits and saves the bases, and recall scores the personal
    memories through the saved shared subspace. Off: the stage is skipped, nothing is
    saved and the raw cosine stays."""
    base = Config(context_links=LINKED.context_links, params={"compositional_context": COMP_PARAMS})

    def scenario(coord, clock):
        part = (WORK.user_id, WORK.agent_id)
        coord.store_many([dict(content=t) for t in WORK_NOTES], WORK)
        coord.store_many([dict(content=t) for t in PERSONAL_NOTES], PERSONAL)
        clock.advance(hours=1)
        stage = coord.sleep(WORK).stages.get("compositional_context")
        raw = coord.storage.kv_get(part, keys.KV_COMPOSITIONAL)
        hits = coord.recall(COMP_QUERY, WORK, k=12, touch=False)
        qvec = coord.embedder.embed([COMP_QUERY])[0]
        vecs = {h.item.id: coord.storage.vectors(part, [h.item.id])[0] for h in hits}
        return dict(stage=stage, raw=raw, hits=hits, qvec=qvec, vecs=vecs)

    on, off = run_both(open_coord, "compositional_context", scenario, base=base)

    assert on["stage"]["context_sizes"] == {"personal": len(PERSONAL_NOTES), "work": len(WORK_NOTES)}
    assert on["stage"]["shared_dim"] >= 1
    state = compositional.CompositionalState.from_json(on["raw"])
    assert state.shared_dim == on["stage"]["shared_dim"]
    foreign = [h for h in on["hits"] if h.item.context == "personal"]
    assert len(foreign) == len(PERSONAL_NOTES)
    for h in foreign:
        s = float(compositional.cross_context_similarity(on["qvec"], on["vecs"][h.item.id], state=state))
        assert h.why.other["cross_context_shared_sim"] == pytest.approx(s, abs=1e-6)
        assert h.why.dense == pytest.approx(max(0.0, s), abs=1e-6)

    assert off["stage"] == {"skipped": "switched off"}
    assert off["raw"] is None
    for h in off["hits"]:
        assert "cross_context_shared_sim" not in h.why.other
        assert h.why.dense == pytest.approx(max(0.0, float(off["vecs"][h.item.id] @ off["qvec"])), abs=1e-6)


def test_compositional_context_fused_score_without_lexical_candidates(open_coord):
    coord, clock = open_coord(LINKED.without("bm25_hybrid"), "no_bm25")
    out = _compositional_scenario(coord, clock)
    foreign = [h for h in out["hits"] if h.item.context == "personal"]
    assert foreign
    for h in foreign:
        assert "cross_context_shared_sim" in h.why.other  # scored through the shared subspace
        assert h.why.lexical == 0.0
    # With no lexical component the fusion is the dense similarity relative to the best one.
    ratios = [h.why.other["fusion"] / h.why.dense for h in out["hits"] if h.why.dense > 0]
    assert max(ratios) == pytest.approx(min(ratios), rel=1e-6)


# ----------------------------------------------------------------------------- revision


OLD_PLAN = ("The quarterly planning meeting of the platform team is on Tuesday at 10am in room 4 "
            "of the north building, as agreed")
NEW_PLAN = ("The quarterly planning meeting of the platform team is on Wednesday at 10am in room 4 "
            "of the north building")
EDITED_PLAN = OLD_PLAN.replace("Tuesday", "Wednesday")


def test_reconsolidation_edits_a_labile_memory_in_place_and_rollback_restores_it(open_coord):
    """On: a recall opens a 10-minute lability window; a small correction inside it
    (PE_eff between 0.1 and 0.3) is a token-level edit of the same memory that changes the
    day and keeps the part the correction left out (', as agreed'); rollback restores the
    original. Outside a window the revision is blocked and the correction is stored as a
    new memory. Off: revise() overwrites the content with the new text, window or not."""

    def scenario(coord, clock):
        m = coord.store(OLD_PLAN, SCOPE)
        clock.advance(hours=2)
        coord.recall("quarterly planning meeting", SCOPE, k=1)
        labile_until = coord.get(m.id, SCOPE).state.get(keys.LABILE_UNTIL)
        clock.advance(minutes=2)
        revised = coord.revise(m.id, SCOPE, NEW_PLAN)
        history = [ev.action for ev in coord.history(m.id, SCOPE)]
        restored = coord.rollback(m.id, SCOPE)
        clock.advance(hours=1)  # the window is closed now
        late = coord.revise(m.id, SCOPE, NEW_PLAN)
        return dict(id=m.id, recalled_at=clock.now() - HOUR - 120, labile_until=labile_until, revised=revised,
                    history=history, restored=restored, late=late, late_item=coord.get(m.id, SCOPE))

    on, off = run_both(open_coord, "reconsolidation", scenario)

    assert on["labile_until"] == pytest.approx(on["recalled_at"] + 600.0)
    r = on["revised"]
    assert r["mode"] == "selective_edit" and r["new_memory"] is None
    assert 0.1 <= r["plan"]["pe_eff"] < 0.3
    assert r["memory"].id == on["id"] and r["memory"].version == 2
    assert r["memory"].content == EDITED_PLAN
    assert on["history"][-1] == "reconsolidated"
    assert on["restored"].content == OLD_PLAN
    assert on["late"]["mode"] == "blocked"
    assert on["late_item"].content == OLD_PLAN
    assert on["late"]["new_memory"].content == NEW_PLAN
    assert on["late"]["new_memory"].metadata["revises"] == on["id"]

    assert off["labile_until"] is None
    r = off["revised"]
    assert r["mode"] == "overwrite" and r["plan"] is None
    assert r["memory"].content == NEW_PLAN  # ', as agreed' is lost
    assert off["history"][-1] == "updated"
    assert off["restored"].content == OLD_PLAN
    assert off["late"]["mode"] == "overwrite" and off["late"]["new_memory"] is None
    assert off["late_item"].content == NEW_PLAN


def test_stability_protector_guards_an_established_memory_against_a_small_revision(open_coord):
    """On: a memory recalled ten times over 200 days has lock score
    0.3 log2(11)/log2(11) + 0.3 * 0.5 + 0.2 * 200/365 ~ 0.56 and an update threshold
    ~ 0.8; a correction with PE_eff ~ 0.2 inside the lability window is refused
    ('protected'), the memory keeps its content and the correction becomes a new memory.
    Off: the same correction edits the memory in place."""

    def scenario(coord, clock):
        m = coord.store(OLD_PLAN, SCOPE)
        for _ in range(10):
            clock.advance(days=20)
            coord.recall("quarterly planning meeting platform team", SCOPE, k=1)
        clock.advance(minutes=2)
        before = coord.get(m.id, SCOPE)
        out = coord.revise(m.id, SCOPE, NEW_PLAN)
        return dict(id=m.id, before=before, out=out, item=coord.get(m.id, SCOPE))

    on, off = run_both(open_coord, "stability_protector", scenario)

    assert on["before"].access_count == 10
    out = on["out"]
    assert out["mode"] == "protected"
    assert out["plan"]["pe_eff"] < 0.3
    assert "StabilityProtector refuses" in out["plan"]["reason"]
    assert on["item"].content == OLD_PLAN and on["item"].version == 1
    assert out["new_memory"].content == NEW_PLAN
    assert out["new_memory"].metadata["revises"] == on["id"]
    assert out["new_memory"].metadata["reconsolidation"] == "protected"

    out = off["out"]
    assert out["mode"] == "selective_edit" and out["new_memory"] is None
    assert out["plan"]["pe_eff"] == pytest.approx(on["out"]["plan"]["pe_eff"])
    assert off["item"].content == EDITED_PLAN


# ----------------------------------------------------------------------------- context assembly


CORE_FACT = "My name is Dana and I live in Lisbon"
LISBON = [dict(content="Visited the tile museum in Lisbon with my sister", layer="episodic"),
          dict(content="Went hiking in Sintra last spring", layer="episodic"),
          dict(content="The tile museum in Lisbon opens at ten", layer="semantic"),
          dict(content="Sintra is a short train ride from Lisbon", layer="semantic")]


def test_global_workspace_assembles_module_sections_instead_of_rank_order(open_coord):
    """On: the context is Markdown sections by module (core facts first in their reserved
    share, then the winning layers), with a per-module account. Off: the recall hits'
    contents in rank order, one per line, and no modules."""

    query = "tile museum in Lisbon"

    def scenario(coord, clock):
        coord.store(CORE_FACT, SCOPE)
        coord.store_many(LISBON, SCOPE)
        clock.advance(minutes=1)
        ranked = [h.item.content for h in coord.recall(query, SCOPE, k=10, touch=False)]
        out = coord.assemble_prompt(query, SCOPE)
        return dict(ranked=ranked, out=out, state=coord.storage.kv_get((SCOPE.user_id, SCOPE.agent_id), keys.KV_WORKSPACE))

    on, off = run_both(open_coord, "global_workspace", scenario)

    text = on["out"]["text"]
    assert text.startswith(f"## About the user\n- {CORE_FACT}\n\n")
    assert "## Known facts\n- The tile museum in Lisbon opens at ten" in text
    assert "## Past events\n- Visited the tile museum in Lisbon with my sister" in text
    modules = {m["module"]: m for m in on["out"]["modules"]}
    assert modules["core"]["won"] and "always included" in modules["core"]["reason"]
    assert modules["semantic"]["won"] and modules["episodic"]["won"]
    assert max(m["salience"] for m in on["out"]["modules"] if m["module"] != "core") == 1.0
    assert sorted(on["state"]["winners"]) == sorted(m for m, s in modules.items() if s["won"] and m != "core")

    assert off["out"] == {"text": "\n".join(off["ranked"]), "tokens": off["out"]["tokens"], "modules": []}
    assert "##" not in off["out"]["text"]
    assert off["state"] is None


def test_global_workspace_hysteresis_keeps_the_last_winner_within_its_margin(open_coord):
    """With one winning slot: the episodic module wins a question about a visit; a minute
    later a query where the semantic module bids higher (1.0 vs ~0.93) is still won by the
    episodic module thanks to the +0.1 hysteresis bonus. Two hours later (past the TTL)
    the same bids go to the semantic module."""

    config = Config(params={"global_workspace": WorkspaceParams(max_winners=1, min_winners=1)})

    def rounds(gap_s):
        coord, clock = open_coord(config, f"gap{int(gap_s)}")
        coord.store(CORE_FACT, SCOPE)
        coord.store_many(LISBON, SCOPE)
        clock.advance(minutes=1)
        first = coord.assemble_prompt("When did I visit the tile museum with my sister?", SCOPE)
        clock.advance(gap_s)
        second = coord.assemble_prompt("museum in Lisbon", SCOPE)
        return first, {m["module"]: m for m in second["modules"]}, second["text"]

    first, mods, text = rounds(60)
    assert [m["module"] for m in first["modules"] if m["won"] and m["module"] != "core"] == ["episodic"]
    ep, sem = mods["episodic"], mods["semantic"]
    assert sem["salience"] == 1.0 and 0.9 < ep["salience"] < 1.0
    assert ep["effective"] == pytest.approx(ep["salience"] + 0.1)
    assert ep["won"] and not sem["won"]
    assert "(+hysteresis)" in ep["reason"]
    assert "## Past events" in text and "## Known facts" not in text

    _, mods, text = rounds(2 * HOUR)
    ep, sem = mods["episodic"], mods["semantic"]
    assert ep["effective"] == pytest.approx(ep["salience"])
    assert sem["won"] and not ep["won"]
    assert "## Known facts" in text and "## Past events" not in text

    coord, _clock = open_coord(config.without("global_workspace"), "off")
    coord.store(CORE_FACT, SCOPE)
    coord.store_many(LISBON, SCOPE)
    assert coord.assemble_prompt("museum in Lisbon", SCOPE)["modules"] == []


def test_prospective_memory_fires_cue_and_time_intentions_once(open_coord):
    """On: an intention cued by 'passport' fires in the first recall whose query mentions
    it (reported in recall(...).info['intentions']) and never again; a time intention is
    not due before its time, fires once via due_intentions() at its time, and not again.
    Off: intentions are stored but never fire."""

    def scenario(coord, clock):
        coord.store("My passport expires in June next year", SCOPE)
        coord.store("The gym opens at six on weekdays", SCOPE)
        cue = coord.intend("Remind the user to book the passport renewal appointment", SCOPE, cue="passport")
        timed = coord.intend("Water the balcony plants", SCOPE, due_at=clock.now() + 3 * HOUR)
        r_other = coord.recall("gym opening hours", SCOPE, k=1)
        r_cue = coord.recall("when does my passport expire?", SCOPE, k=1)
        r_again = coord.recall("passport expiry date", SCOPE, k=1)
        early = coord.due_intentions(SCOPE)
        clock.advance(hours=3)
        due = coord.due_intentions(SCOPE)
        clock.advance(hours=1)
        later = coord.due_intentions(SCOPE)
        return dict(cue=cue, timed=timed, infos=[r.info for r in (r_other, r_cue, r_again)], early=early, due=due,
                    later=later, stored=coord.storage.kv_get((SCOPE.user_id, SCOPE.agent_id), keys.intentions_key(SCOPE.context)))

    on, off = run_both(open_coord, "prospective_memory", scenario)

    other, cued, again = on["infos"]
    assert "intentions" not in other
    (fired,) = cued["intentions"]
    assert fired["intention_id"] == on["cue"]["id"]
    assert fired["trigger"] == "keyword" and fired["detail"] == "passport"
    assert fired["action"] == "Remind the user to book the passport renewal appointment"
    assert "intentions" not in again
    assert on["early"] == []
    (tfired,) = on["due"]
    assert tfired["intention_id"] == on["timed"]["id"] and tfired["trigger"] == "time"
    assert on["later"] == []
    assert all(i["done"] and i["fired_count"] == 1 for i in on["stored"])

    assert all("intentions" not in info for info in off["infos"])
    assert off["early"] == off["due"] == off["later"] == []
    assert len(off["stored"]) == 2 and not any(i["done"] for i in off["stored"])


def test_a_recall_that_finds_nothing_still_fires_cue_intentions_and_is_logged_as_a_miss(open_coord):
    """An empty store: the recall returns no hit, yet the cue intention fires and the
    monitor logs a recall that returned nothing."""

    def scenario(coord, clock):
        coord.intend("Ask about the passport renewal", SCOPE, cue="passport")
        r = coord.recall("passport", SCOPE, k=3)
        log = monitor_log.load(coord.storage, (SCOPE.user_id, SCOPE.agent_id))
        return dict(hits=list(r), info=r.info, log=log)

    on, off = run_both(open_coord, "prospective_memory", scenario)
    assert on["hits"] == [] and off["hits"] == []
    (fired,) = on["info"]["intentions"]
    assert fired["trigger"] == "keyword" and fired["detail"] == "passport"
    assert "intentions" not in off["info"]
    (miss,) = on["log"].retrievals
    assert miss.returned == 0 and miss.used == 0
