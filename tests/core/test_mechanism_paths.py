"""Mechanisms whose output must reach the data path: each test runs the public API with the
mechanism on and off (or with and without the signal it reads) and asserts the difference
it makes downstream, not only that it wrote something."""

from __future__ import annotations

import pytest
from core_helpers import DIM, T0

from zenbrain import Scope, SimulatedClock
from zenbrain.api import open_memory
from zenbrain.config import Config, RecallParams
from zenbrain.mechanisms import emotional, two_factor
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams
from zenbrain.pipeline import monitor_log
from zenbrain.pma import hyperagent, metacognition
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.state import (
    KV_HYPER,
    RELATION_SHARES_ENTITY,
    RELATION_SIMILAR,
    RELATION_TEMPORAL,
)

SCOPE = Scope("alice", "assistant")
PART = (SCOPE.user_id, SCOPE.agent_id)
ASSOCIATIONS = {RELATION_TEMPORAL, RELATION_SIMILAR, RELATION_SHARES_ENTITY}


@pytest.fixture
def opened(tmp_path):
    """``opened(config, label)`` -> (coordinator, clock), each label its own store."""
    made = []

    def make(config: Config | None = None, label: str = "run"):
        clock = SimulatedClock(T0)
        mem = open_memory(str(tmp_path / f"{label}.db"), embedder=HashingEmbedder(DIM), clock=clock,
                          config=config or Config())
        made.append(mem)
        return mem, clock

    yield make
    for m in made:
        m.close()


# ----------------------------------------------------------------------------- store-time edges
EMOTIONAL = "The terrible car accident left me terrified and devastated!"
NEUTRAL = "The car was parked near the office building."
CALM = "The red car was parked behind the office building."


def _edges(mem):
    return {(e.src, e.dst, e.relation): e for e in mem.storage.edges(PART)}


def test_emotional_arousal_scales_the_initial_weight_of_store_time_edges(opened):
    """On: the edge an arousing memory makes at store time starts at weight x m and variance
    / m, m its emotional encoding multiplier; two neutral memories link at the Two-Factor
    defaults. Off: every new edge starts at the defaults."""
    w0, v0, _ = two_factor.new_edge()
    m = emotional.tag(EMOTIONAL).encoding_multiplier
    assert m > 1.2

    def run(config, label):
        mem, _ = opened(config, label)
        emo, neutral = mem.store_many([dict(content=EMOTIONAL), dict(content=NEUTRAL)], SCOPE)
        calm = mem.store(CALM, SCOPE)
        return _edges(mem), emo, neutral, calm

    edges, emo, neutral, calm = run(Config(), "on")
    hot = edges[(emo.id, neutral.id, RELATION_TEMPORAL)]
    assert hot.weight == pytest.approx(w0 * m) and hot.variance == pytest.approx(v0 / m)
    cool = [e for (a, _b, rel), e in edges.items() if a == calm.id and rel in ASSOCIATIONS]
    assert cool and all(e.weight == pytest.approx(w0) and e.variance == pytest.approx(v0) for e in cool)

    edges_off, emo, neutral, _ = run(Config().without("emotional_tagging"), "off")
    plain = edges_off[(emo.id, neutral.id, RELATION_TEMPORAL)]
    assert (plain.weight, plain.variance) == (pytest.approx(w0), pytest.approx(v0))


def test_an_emotional_edge_outlasts_a_neutral_one_under_two_factor_decay():
    """Lower variance is higher importance, so the emotional edge also decays more slowly."""
    w_hot, v_hot, _ = two_factor.new_edge(encoding_multiplier=1.4)
    w_cold, v_cold, _ = two_factor.new_edge()
    (hot, _), (cold, _) = (two_factor.decay(w, v, days=30.0) for w, v in ((w_hot, v_hot), (w_cold, v_cold)))
    assert hot / w_hot > cold / w_cold


def test_new_edge_refuses_a_multiplier_below_one():
    from zenbrain.errors import ValidationError

    with pytest.raises(ValidationError):
        two_factor.new_edge(encoding_multiplier=0.5)


def test_two_factor_off_makes_no_store_time_association_edges(opened):
    """Off: storing related memories (one batch, similar content, a shared name) creates no
    temporal, similar or shared-entity edge; on: it creates all three kinds."""

    def run(config, label):
        mem, _ = opened(config, label)
        mem.store("Alice Walker moved to Berlin in spring", SCOPE, kind="fact")
        mem.store_many([dict(content="Alice Walker works at the Berlin observatory", kind="fact"),
                        dict(content="The observatory in Berlin opens at night")], SCOPE)
        mem.store("The observatory in Berlin opens every night", SCOPE)
        return {rel for (_a, _b, rel) in _edges(mem)}

    assert ASSOCIATIONS <= run(Config(), "on")
    assert not ASSOCIATIONS & run(Config().without("two_factor_hebbian"), "off")


# ----------------------------------------------------------------------------- novelty window
def test_a_novelty_window_multiplies_encoding_strength(opened):
    """The MetacognitiveMonitor's boost b after a surprise multiplies the encoding strength
    (strength x (1 + b)), as every other encoding factor does."""

    def run(config, label):
        mem, clock = opened(config, label)
        mem.store("Quarterly tax forms are filed in April", SCOPE)
        clock.advance(hours=1)
        mem.recall("purple elephant umbrella", SCOPE, k=1)  # nothing matches: a surprise
        clock.advance(seconds=60)
        return mem.store("The bakery on the corner sells rye bread", SCOPE)

    on = run(Config(), "on")
    off = run(Config().without("metacognitive_monitor"), "off")
    boost = 0.2 * (1.0 - 60.0 / 600.0)
    assert on.strength == pytest.approx(off.strength * (1.0 + boost))


# ----------------------------------------------------------------------------- sleep LTP / LTD
USEFUL = "The deploy script fixed the broken build on the staging server"
DULL = "The weather was grey and windy on Monday afternoon"
OTHER = "We ordered pizza for the team lunch on Friday"


def _sleep_scene(mem, clock):
    useful, dull, _ = mem.store_many([dict(content=t, layer="episodic") for t in (USEFUL, DULL, OTHER)], SCOPE)
    mem.record_outcome(useful.id, SCOPE, True)
    mem.record_outcome(useful.id, SCOPE, True)
    clock.advance(hours=2)
    return useful.id, dull.id


# Archive every faded memory (the paper's rule): by default decay keeps faded memories that
# say more than the store's median, and these scenes are about when, not whether.
PAPER_DECAY = Config(params={"ebbinghaus_decay": EbbinghausParams(low_information_words=0.0)})


def _archive_day(mem, clock, mid, days=40):
    """The first whole day on which decay archives the memory (None: not within ``days``)."""
    for day in range(1, days + 1):
        clock.advance(days=1)
        rep = mem.decay(SCOPE)
        if mid in rep.stages["archive"]["ids"]:
            return day
    return None


@pytest.mark.parametrize("forgetting", ["ebbinghaus", "default"])
def test_sleep_ltp_and_ltd_reach_retrievability_ranking_and_archiving(opened, forgetting):
    """A rewarded episode strengthened by sleep (LTP) keeps a longer stability, ranks higher
    later and (Ebbinghaus forgetting only) is archived later than in the same run without
    Simulation-Selection sleep; an unused one (LTD) fades sooner. With TripleCopy on as
    well (the default), its copies follow the same factor."""
    base = PAPER_DECAY.without("triple_copy") if forgetting == "ebbinghaus" else Config()

    def run(config, label):
        mem, clock = opened(config, label)
        useful, dull = _sleep_scene(mem, clock)
        rep = mem.sleep(SCOPE, detail=True)
        clock.advance(days=2)
        hits = mem.recall("deploy script build staging", SCOPE, k=3, touch=False)
        (hit,) = [h for h in hits if h.item.id == useful]
        out = dict(rep=rep, useful=mem.get(useful, SCOPE), dull=mem.get(dull, SCOPE), hit=hit)
        out["archived_useful"] = _archive_day(mem, clock, useful)
        return out

    on, off = run(base, "on"), run(base.without("simulation_selection_sleep"), "off")
    sel = on["rep"].stages["simulation_selection_sleep"]
    assert on["useful"].id in sel["ltp"] and on["dull"].id in sel["ltd"]
    factor_up = on["useful"].strength / off["useful"].strength
    factor_down = on["dull"].strength / off["dull"].strength
    assert factor_up > 1.0 > factor_down
    assert on["useful"].stability == pytest.approx(off["useful"].stability * factor_up)
    assert on["dull"].stability == pytest.approx(off["dull"].stability * factor_down)
    assert on["hit"].why.retrievability > off["hit"].why.retrievability
    assert on["hit"].score > off["hit"].score
    if forgetting == "ebbinghaus":
        assert off["archived_useful"] is not None
        assert on["archived_useful"] is None or on["archived_useful"] > off["archived_useful"]
    else:  # TripleCopy's consolidated deep copy keeps it either way; its copies follow the factor
        for name, f in (("useful", factor_up), ("dull", factor_down)):
            s0_on, s0_off = on[name].state["copies"]["s0"], off[name].state["copies"]["s0"]
            assert s0_on == pytest.approx(min(1.0, s0_off * f))
        assert on["dull"].state["copies"]["s0"] < off["dull"].state["copies"]["s0"]


def test_sleep_ltd_archives_an_unused_episode_sooner(opened):
    base = PAPER_DECAY.without("triple_copy")

    def run(config, label):
        mem, clock = opened(config, label)
        _, dull = _sleep_scene(mem, clock)
        mem.sleep(SCOPE)
        return _archive_day(mem, clock, dull)

    on, off = run(base, "on"), run(base.without("simulation_selection_sleep"), "off")
    assert off is not None and on is not None and on < off
    mem, clock = opened(base, "history")
    _, dull = _sleep_scene(mem, clock)
    mem.sleep(SCOPE)
    (ev,) = [e for e in mem.history(dull, SCOPE) if e.action == "replayed"]
    assert ev.detail["action"] == "ltd" and ev.detail["stability"][1] < ev.detail["stability"][0]


# ----------------------------------------------------------------------------- counterfactual surprise
BUILD_FAILED = "The deploy script failed to fix the broken build on the staging server"
BUILD_FIXED = "The deploy script fixed the broken build on the staging server at night"


def test_a_recalled_episode_that_then_fails_is_replayed_as_a_counterfactual(opened):
    """Real use only: an episode recalled four times (a spaced hour apart) and then used
    without success is a surprising failure, |delta_TD| = max(confidence 0.5, usage 4/5) - 0
    = 0.8 > failed_td 0.6, so sleep recombines it with its similar successful neighbour.
    Never recalled, the same failure predicts nothing (|delta_TD| = 0.5) and no
    counterfactual is generated."""

    def run(label, recalls):
        mem, clock = opened(Config(), label)
        failed, fixed = mem.store_many([dict(content=BUILD_FAILED, layer="episodic"),
                                        dict(content=BUILD_FIXED, layer="episodic")], SCOPE)
        for _ in range(recalls):
            clock.advance(hours=2)
            assert failed.id in {h.item.id for h in mem.recall("deploy script broken build staging", SCOPE, k=3)}
        mem.record_outcome(failed.id, SCOPE, False)
        mem.record_outcome(fixed.id, SCOPE, True)
        clock.advance(hours=2)
        return failed.id, fixed.id, mem.sleep(SCOPE).stages["simulation_selection_sleep"]

    failed, fixed, used = run("recalled", 4)
    (cf,) = used["counterfactuals"]
    assert (cf["source_id"], cf["neighbour_id"]) == (failed, fixed)
    _, _, unused = run("never_recalled", 0)
    assert unused["counterfactuals"] == []


# ----------------------------------------------------------------------------- MetacognitiveMonitor
def _signals(mem, clock):
    return metacognition.signals(monitor_log.load(mem.storage, PART), now=clock.now())


def test_the_monitors_hit_is_feedback_on_a_recalled_memory(opened):
    """A recall that returned memories is no hit by itself: it counts once feedback on one
    of its results arrives (a review Good or better, a successful outcome), and a review
    Again makes it a miss. Every piece of feedback carries the memory's predicted
    retrievability and whether it was remembered, so calibration has data; every recall
    carries the recent share of its results and of its candidates."""
    mem, clock = opened(Config(), "monitor")
    tea, bread = mem.store_many([dict(content="Alice drinks green tea every morning"),
                                 dict(content="The bakery sells rye bread on Fridays")], SCOPE)
    clock.advance(hours=2)
    assert tea.id in {h.item.id for h in mem.recall("What does Alice drink in the morning?", SCOPE, k=2)}
    sig = _signals(mem, clock)
    assert sig.n_retrievals == 1 and sig.n_rated == 0 and sig.hit_rate is None  # not known yet
    (logged,) = monitor_log.load(mem.storage, PART).retrievals
    assert logged.used is None and tea.id in logged.ids
    assert logged.recent_share == 1.0 and logged.recent_base == 1.0

    mem.review(tea.id, SCOPE, "good")
    sig = _signals(mem, clock)
    assert sig.n_rated == 1 and sig.hit_rate == 1.0
    (fb,) = monitor_log.load(mem.storage, PART).feedback
    assert fb.used and fb.correct and 0.0 < fb.confidence <= 1.0 and sig.n_calibrated == 1

    clock.advance(hours=2)
    mem.recall("What does Alice drink in the morning?", SCOPE, k=2)
    mem.review(tea.id, SCOPE, "again")
    assert _signals(mem, clock).hit_rate == pytest.approx(1 / 2)
    clock.advance(hours=2)
    assert bread.id in {h.item.id for h in mem.recall("rye bread at the bakery", SCOPE, k=2)}
    mem.record_outcome(bread.id, SCOPE, True)
    sig = _signals(mem, clock)
    assert sig.n_rated == 3 and sig.hit_rate == pytest.approx(2 / 3)


def test_revisions_and_debates_are_logged_as_evidence_decisions(opened):
    """Confirming a memory is confirming evidence, accepted; a new fact that loses an iMAD
    debate against the stored facts it contradicts is contradicting evidence, refused."""
    mem, clock = opened(Config(), "evidence")
    berlin, _ = mem.store_many([dict(content="Alice lives in Berlin", layer="semantic"),
                                dict(content="Alice lives in Berlin today", layer="semantic")], SCOPE)
    clock.advance(hours=1)
    paris = mem.store("Alice lives in Paris", SCOPE, layer="semantic")
    assert paris.metadata.get("disputed") is True
    assert mem.revise(berlin.id, SCOPE, "Alice lives in Berlin")["mode"] == "confirmed"
    evidence = monitor_log.load(mem.storage, PART).evidence
    assert [(e.confirming, e.accepted) for e in evidence] == [(False, False), (True, True)]
    sig = _signals(mem, clock)
    assert sig.confirm_accept_rate == 1.0 and sig.contradict_accept_rate == 0.0


# ----------------------------------------------------------------------------- HyperAgent
def test_the_hyperagent_shortens_review_intervals_after_overconfident_reviews(opened):
    """Real use only: twelve memories, each recalled and then reviewed Again while the
    library predicted it fully retrievable (R ~ 1). The monitor sees an overconfident
    calibration (ECE > 0.1), sleep's HyperAgent moves review_interval_factor from 1 to 0.9,
    and the next review's interval is 0.9 times the one of the same run without it."""
    topics = ["tea", "bread", "train", "garden", "piano", "invoice", "dentist", "bicycle", "museum", "football",
              "printer", "passport"]

    def run(config, label):
        mem, clock = opened(config, label)
        items = mem.store_many([dict(content=f"Alice talked about the {t} on day {i}") for i, t in enumerate(topics)],
                               SCOPE)
        for it, t in zip(items, topics):
            clock.advance(minutes=5)
            assert it.id in {h.item.id for h in mem.recall(f"the {t}", SCOPE, k=3)}
            mem.review(it.id, SCOPE, "again")
        stage = mem.sleep(SCOPE).stages["metacognitive_hyperagent"]
        clock.advance(hours=1)
        probe = mem.store("The quarterly report is due at the end of March", SCOPE)
        clock.advance(hours=1)
        reviewed = mem.review(probe.id, SCOPE, "good")
        return stage, reviewed.state["due_at"] - clock.now()

    stage, interval = run(Config(), "on")
    _, plain = run(Config().without("metacognitive_hyperagent"), "off")
    assert "calibration" in stage["signals"]["alerts"]
    (change,) = [c for c in stage["changes"] if c["name"] == "review_interval_factor"]
    assert change["old"] == 1.0 and change["new"] == pytest.approx(0.9)
    assert interval == pytest.approx(0.9 * plain)


def _set_tuned(mem, **values):
    state = hyperagent.initial_state(values=values)
    with mem.storage.transaction() as tx:
        tx.kv_put(PART, {KV_HYPER: state.to_dict()})


def _probe_lexical_weight(mem, clock):
    mem.store_many([dict(content="The invoice for the printer arrived on Tuesday"),
                    dict(content="Alice paid the printer bill"), dict(content="The new invoice template is ready")], SCOPE)
    clock.advance(hours=1)
    return [h.score for h in mem.recall("printer invoice", SCOPE, k=3, touch=False)]


def _probe_review_interval_factor(mem, clock):
    m = mem.store("The quarterly report is due at the end of March", SCOPE)
    clock.advance(hours=1)
    return mem.review(m.id, SCOPE, "good").state["due_at"] - clock.now()


def _probe_retrievability_floor(mem, clock):
    mem.store("The invoice for the printer arrived on Tuesday", SCOPE)
    clock.advance(days=20)
    (h,) = mem.recall("printer invoice", SCOPE, k=1, touch=False)
    return h.why.retrievability


def _probe_contradiction_weight(mem, clock):
    m = mem.store("Alice lives in Berlin", SCOPE, layer="semantic")
    return mem.record_evidence(m.id, SCOPE, supports=False, strength=1.0).conf_beta


PROBES = {
    "lexical_weight": (0.0, _probe_lexical_weight),
    "review_interval_factor": (0.5, _probe_review_interval_factor),
    "retrievability_floor": (0.5, _probe_retrievability_floor),
    "contradiction_weight": (2.0, _probe_contradiction_weight),
}


def test_every_hyperagent_tunable_has_a_probe():
    assert set(PROBES) == set(hyperagent.TUNABLES)


@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_hyperagent_tunable_has_a_consumer(opened, name):
    """The value the HyperAgent stores for each tunable changes what the engine does; with
    the HyperAgent off the stored value is ignored."""
    value, probe = PROBES[name]

    def run(config, label):
        mem, clock = opened(config, label)
        _set_tuned(mem, **{name: value})
        return probe(mem, clock)

    on, off = run(Config(), "on"), run(Config().without("metacognitive_hyperagent"), "off")
    assert on != pytest.approx(off)
    if name == "review_interval_factor":
        assert on == pytest.approx(0.5 * off)
    elif name == "retrievability_floor":  # off: the configured floor; on: the stored one
        floor = Config().recall.retrievability_floor
        assert on == pytest.approx(0.5 + 0.5 * (off - floor) / (1.0 - floor))
    elif name == "contradiction_weight":
        assert (on, off) == (3.0, 2.0)


# ----------------------------------------------------------------------------- contested facts
def test_confidence_orders_the_sides_of_a_contradiction_and_spares_uncontested_facts(opened):
    """Two facts that contradict each other (a contradicts edge): the one evidence backs
    ranks above the one evidence speaks against, though the query matches the latter a
    little better; with bayesian_confidence off their fused order stands. An uncontested
    fact keeps belief 1 and, matching better, stays first."""

    def run(config, label):
        mem, clock = opened(config, label)
        berlin = mem.store("Alice lives in Berlin", SCOPE, layer="semantic")
        paris = mem.store("Alice lives in Paris", SCOPE, layer="semantic")
        bakery = mem.store("Alice works at the bakery", SCOPE, layer="semantic")
        mem.record_evidence(berlin.id, SCOPE, supports=True, strength=5)
        mem.record_evidence(paris.id, SCOPE, supports=False, strength=5)
        clock.advance(hours=1)
        city = {h.item.id: h for h in mem.recall("Which city does Alice live in", SCOPE, k=3, touch=False)}
        work = mem.recall("Where does Alice work", SCOPE, k=3, touch=False)
        return berlin.id, paris.id, bakery.id, city, work

    berlin, paris, bakery, city, work = run(Config(), "on")
    assert city[paris].why.fused > city[berlin].why.fused
    assert city[berlin].score > city[paris].score
    assert city[berlin].why.belief == pytest.approx(1 - 0.3 * (1 - 6 / 7))
    assert city[paris].why.belief == pytest.approx(1 - 0.3 * (1 - 1 / 7))
    assert work[0].item.id == bakery and work[0].why.belief == 1.0
    _, _, _, plain, _ = run(Config().without("bayesian_confidence"), "off")
    ranked = sorted(plain.values(), key=lambda h: -h.score)
    assert ranked[0].item.content.endswith("Paris") and all(h.why.belief == 1.0 for h in ranked)


def test_a_fact_that_lost_a_debate_gives_up_the_disputed_penalty(opened):
    """The new fact that loses an iMAD debate is flagged disputed: its belief factor is
    1 - 0.3 (1 - c) - 0.1; with the penalty set to 0 only its confidence counts."""

    def run(config, label):
        mem, clock = opened(config, label)
        mem.store_many([dict(content="Alice lives in Berlin", layer="semantic"),
                        dict(content="Alice lives in Berlin today", layer="semantic")], SCOPE)
        clock.advance(hours=1)
        paris = mem.store("Alice lives in Paris", SCOPE, layer="semantic")
        hits = {h.item.id: h for h in mem.recall("Which city does Alice live in", SCOPE, k=3, touch=False)}
        return paris, hits[paris.id]

    paris, hit = run(Config(), "on")
    assert paris.metadata["disputed"] is True
    assert hit.why.belief == pytest.approx(1 - 0.3 * (1 - paris.confidence) - 0.1)
    _, lenient = run(Config(recall=RecallParams(disputed_penalty=0.0)), "lenient")
    assert lenient.why.belief == pytest.approx(1 - 0.3 * (1 - paris.confidence))
    assert hit.score < lenient.score
