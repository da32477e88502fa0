"""Mechanisms whose output must reach the data path: each test runs the public API with the
mechanism on and off (or with and without the signal it reads) and asserts the difference
it makes downstream, not only that it wrote something."""

from __future__ import annotations

import pytest
from core_helpers import DIM, T0

from zenbrain import Scope, SimulatedClock
from zenbrain.api import open_memory
from zenbrain.config import Config
from zenbrain.mechanisms import emotional, two_factor
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.state import RELATION_SHARES_ENTITY, RELATION_SIMILAR, RELATION_TEMPORAL

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
    base = Config().without("triple_copy") if forgetting == "ebbinghaus" else Config()

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
    base = Config().without("triple_copy")

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
