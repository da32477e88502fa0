import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import sleep_selection as ss
from zenbrain.mechanisms.sleep_selection import SleepParams

FAST = settings(derandomize=True, max_examples=60, deadline=None, database=None)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---- TAG -----------------------------------------------------------------------------

def test_tag_golden_paper_weights():
    # 0.4 * 0.5 + 0.35 * 0.4 + 0.25 * 0.4
    assert float(ss.tag_score(td_error=0.5, reward=0.4, novelty=0.4)) == pytest.approx(0.44)
    assert float(ss.tag_score(td_error=-0.5, reward=0.4, novelty=0.4)) == pytest.approx(0.44)  # |delta|


def test_tag_emotion_term_reproduces_code_weights():
    p = SleepParams(w_emotion=0.15)
    # pure components give the effective weights: 0.85 * (0.4, 0.35, 0.25) and 0.15
    assert float(ss.tag_score(td_error=1, reward=0, novelty=0, params=p)) == pytest.approx(0.34)
    assert float(ss.tag_score(td_error=0, reward=1, novelty=0, params=p)) == pytest.approx(0.2975)
    assert float(ss.tag_score(td_error=0, reward=0, novelty=1, params=p)) == pytest.approx(0.2125)
    assert float(ss.tag_score(td_error=0, reward=0, novelty=0, emotion=1, params=p)) == pytest.approx(0.15)


def test_novelty_golden():
    np.testing.assert_allclose(ss.novelty([0, 2, 5, 9]), [0.0, 0.4, 1.0, 1.0])


# ---- selection, LTP / LTD, pruning ---------------------------------------------------

def base_plan(**overrides):
    kwargs = dict(
        memory_ids=["a", "b", "c"],
        strengths=[0.5, 0.95, 0.3],
        td_errors=[0.9, 0.5, 0.0],
        rewards=[0.8, 0.4, 0.1],
        related_counts=[3, 2, 0],
        edges=[("a", "b", "rel"), ("b", "c", "rel"), ("c", "z", "rel"), ("x", "y", "rel"), ("x", "y2", "rel")],
        edge_weights=[1.0, 0.08, 0.04, 0.03, 2.0],
        rng=rng(),
    )
    kwargs.update(overrides)
    return ss.plan_sleep(**kwargs)


def test_plan_golden():
    plan = base_plan()
    # TAG a = 0.36 + 0.28 + 0.15 = 0.79 (LTP); b = 0.44 (LTD); c = 0.035 (LTD)
    assert plan.tags == pytest.approx({"a": 0.79, "b": 0.44, "c": 0.035})
    assert plan.ltp_ids == ["a"] and plan.ltd_ids == ["b", "c"] and plan.skipped_ids == []
    assert plan.strengths == pytest.approx({"a": 0.6, "b": 0.9, "c": 0.25})
    # (a,b): +0.10 - 0.05 ; (b,c): 0.08 - 0.05 - 0.05 < 0 -> pruned ; (c,z): 0.04 - 0.05 -> pruned ;
    # (x,y): untouched but below tau -> pruned ; (x,y2) untouched and healthy -> not reported
    assert plan.edge_weights == pytest.approx({("a", "b", "rel"): 1.05})
    assert plan.pruned_edges == [("b", "c", "rel"), ("c", "z", "rel"), ("x", "y", "rel")]
    assert plan.counterfactuals == [] and plan.new_edges == {}
    s = plan.summary()
    assert (s["ltp"], s["ltd"], s["edges_pruned"], s["edges_changed"]) == (1, 2, 3, 1)


def test_strength_caps_and_floors():
    plan = base_plan(strengths=[0.97, 0.03, 0.01])
    assert plan.strengths.get("a") == pytest.approx(1.0)
    assert plan.strengths.get("b") == pytest.approx(0.01)
    assert "c" not in plan.strengths  # already at the floor: unchanged


def test_ltd_threshold_opens_a_skip_band():
    plan = base_plan(params=SleepParams(ltd_threshold=0.3))
    assert plan.skipped_ids == ["b"] and plan.ltd_ids == ["c"]
    # (a,b) now gets only a's +0.10
    assert plan.edge_weights[("a", "b", "rel")] == pytest.approx(1.1)


def test_max_ltp_keeps_the_best():
    plan = base_plan(td_errors=[0.9, 0.9, 0.9], rewards=[0.8, 0.7, 0.9], related_counts=[3, 3, 3],
                     params=SleepParams(max_ltp=1))
    # TAGs: a 0.79, b 0.755, c 0.825 -> only c strengthened, the others skipped (not depressed)
    assert plan.ltp_ids == ["c"] and plan.ltd_ids == [] and sorted(plan.skipped_ids) == ["a", "b"]


def test_ewc_damps_edge_changes():
    # (a,b) summed change +0.05; variance 0.5 -> I = 2 -> accepted 0.05 / (1 + 0.5 * 2) = 0.025
    plan = base_plan(edge_variances=[0.5, 1.0, 1.0, 1.0, 1.0])
    assert plan.edge_weights[("a", "b", "rel")] == pytest.approx(1.025)


# ---- counterfactuals -----------------------------------------------------------------

def cf_inputs(**overrides):
    kwargs = dict(
        memory_ids=["f", "s", "o"],
        strengths=[0.5, 0.5, 0.5],
        td_errors=[0.9, 0.1, 0.1],
        rewards=[0.1, 0.9, 0.95],
        related_counts=[2, 3, 0],
        embeddings=np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]]),
    )
    kwargs.update(overrides)
    return kwargs


def test_counterfactual_is_generated_not_copied():
    p = SleepParams(mix_low=0.5, mix_high=0.5)
    plan = ss.plan_sleep(**cf_inputs(), rng=rng(), params=p)
    (cf,) = plan.counterfactuals
    assert (cf.source_id, cf.neighbour_id) == ("f", "s")  # "o" is successful but dissimilar
    assert cf.similarity == pytest.approx(0.8)
    # reward = 0.1 + 0.5 * 0.8 * (0.9 - 0.1) = 0.42 ; |delta| = 0.32 ; novelty = min(1, 0.2 * 5) = 1
    assert cf.reward == pytest.approx(0.42) and cf.td_error == pytest.approx(0.32) and cf.novelty == 1.0
    # TAG = 0.4 * 0.32 + 0.35 * 0.42 + 0.25 = 0.525 -> selected -> new bridge edge of weight 0.10
    assert cf.tag == pytest.approx(0.525) and cf.action == ss.LTP
    assert plan.new_edges == pytest.approx({("f", "s"): 0.10})
    # vector = normalise(0.5 [1,0,0] + 0.5 [0.8,0.6,0]) = [0.9, 0.3, 0] / sqrt(0.9)
    np.testing.assert_allclose(cf.vector, np.array([0.9, 0.3, 0.0]) / math.sqrt(0.9))
    emb = cf_inputs()["embeddings"]
    assert np.all(emb @ cf.vector < 1 - 1e-6)  # not a duplicate of any real episode


def test_counterfactual_mixing_share_comes_from_rng():
    plan = ss.plan_sleep(**cf_inputs(), rng=rng(11))
    mu = np.random.default_rng(11).uniform(0.3, 0.7)
    (cf,) = plan.counterfactuals
    assert cf.mix == pytest.approx(mu)
    assert cf.reward == pytest.approx(0.1 + mu * 0.8 * 0.8)
    again = ss.plan_sleep(**cf_inputs(), rng=rng(11))
    assert again.counterfactuals[0].mix == cf.mix  # same seed, same plan


def test_unselected_counterfactual_is_skipped_not_depressed():
    # low novelty: TAG = 0.4 * 0.32 + 0.35 * 0.42 + 0 = 0.275 < 0.5
    p = SleepParams(mix_low=0.5, mix_high=0.5)
    plan = ss.plan_sleep(**cf_inputs(related_counts=[0, 0, 0]), rng=rng(), params=p,
                         edges=[("f", "s")], edge_weights=[1.0])
    (cf,) = plan.counterfactuals
    assert cf.tag == pytest.approx(0.275) and cf.action == ss.SKIP
    # only the two real candidates touch the edge: f LTD, s LTD (TAG 0.04 + 0.315 = 0.355)
    assert plan.edge_weights[("f", "s")] == pytest.approx(0.9)


def test_graph_neighbour_counterfactual_strengthens_existing_bridge():
    p = SleepParams(mix_low=0.5, mix_high=0.5)
    plan = ss.plan_sleep(
        memory_ids=["f", "s", "o"], strengths=[0.5, 0.5, 0.5], td_errors=[0.9, 0.1, 0.1],
        rewards=[0.1, 0.9, 0.5], related_counts=[2, 3, 0],
        edges=[("f", "s", "r"), ("o", "f", "r")], edge_weights=[3.0, 9.0], rng=rng(), params=p,
    )
    (cf,) = plan.counterfactuals
    # "o" is not successful; similarity to "s" = 3 / (3 + 1)
    assert cf.neighbour_id == "s" and cf.similarity == pytest.approx(0.75)
    # reward 0.1 + 0.5 * 0.75 * 0.8 = 0.4 ; delta 0.3 ; TAG 0.12 + 0.14 + 0.25 = 0.51 -> LTP
    assert cf.tag == pytest.approx(0.51) and cf.bridge_edges == (("f", "s", "r"),) and cf.vector is None
    # real: f TAG 0.36 + 0.035 + 0.1 = 0.495 (LTD), s TAG 0.04 + 0.315 + 0.15 = 0.505 (LTP)
    # edge (f,s): -0.05 + 0.10 + 0.10 = +0.15
    assert plan.edge_weights[("f", "s", "r")] == pytest.approx(3.15)
    assert plan.new_edges == {}


def test_no_counterfactual_without_a_successful_similar_neighbour():
    plan = ss.plan_sleep(**cf_inputs(rewards=[0.1, 0.5, 0.5]), rng=rng())
    assert plan.counterfactuals == []
    plan = ss.plan_sleep(**cf_inputs(td_errors=[0.2, 0.1, 0.1]), rng=rng())  # unsurprising failure
    assert plan.counterfactuals == []
    plan = ss.plan_sleep(**cf_inputs(), rng=rng(), params=SleepParams(max_counterfactuals=0))
    assert plan.counterfactuals == []


# ---- properties ----------------------------------------------------------------------

@st.composite
def episodes(draw):
    n = draw(st.integers(1, 12))
    floats = lambda lo, hi: st.lists(st.floats(lo, hi), min_size=n, max_size=n)
    ids = [f"m{i}" for i in range(n)]
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20, unique=True))
    edges = [(ids[a], ids[b], "r") for a, b in pairs]
    weights = draw(st.lists(st.floats(0.0, 10.0), min_size=len(edges), max_size=len(edges)))
    variances = draw(st.lists(st.floats(0.01, 1.0), min_size=len(edges), max_size=len(edges)))
    return dict(
        memory_ids=ids, strengths=draw(floats(0.01, 1.0)), td_errors=draw(floats(-1.0, 1.0)),
        rewards=draw(floats(0.0, 1.0)), related_counts=draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)),
        emotion=draw(floats(0.0, 1.0)), embeddings=np.array(draw(st.lists(floats(-1.0, 1.0), min_size=3, max_size=3))).T,
        edges=edges, edge_weights=weights, edge_variances=draw(st.sampled_from([None, variances])),
        seed=draw(st.integers(0, 2**31)), w_emotion=draw(st.sampled_from([0.0, 0.15])),
    )


@FAST
@given(ep=episodes())
def test_plan_invariants(ep):
    seed = ep.pop("seed")
    p = SleepParams(w_emotion=ep.pop("w_emotion"))
    plan = ss.plan_sleep(**ep, rng=rng(seed), params=p)
    for v in plan.tags.values():
        assert 0.0 <= v <= 1.0
    for c in plan.counterfactuals:
        assert 0.0 <= c.tag <= 1.0 and 0.3 <= c.mix <= 0.7 and c.action in (ss.LTP, ss.SKIP)
        i = ep["memory_ids"].index(c.source_id)
        j = ep["memory_ids"].index(c.neighbour_id)
        assert ep["rewards"][i] < 0.3 and abs(ep["td_errors"][i]) > 0.6 and ep["rewards"][j] >= 0.7
        assert c.reward >= ep["rewards"][i] - 1e-12
    old = dict(zip(ep["memory_ids"], ep["strengths"]))
    for mid, s in plan.strengths.items():
        assert 0.01 <= s <= 1.0
        if mid in plan.ltp_ids:
            assert s > old[mid]
        if mid in plan.ltd_ids:
            assert s < old[mid]
    assert set(plan.strengths) <= set(plan.ltp_ids) | set(plan.ltd_ids)
    old_w = dict(zip(ep["edges"], ep["edge_weights"]))
    for key, w in plan.edge_weights.items():
        assert 0.05 <= w <= 10.0
    for key in plan.pruned_edges:
        assert key not in plan.edge_weights
    for key, w in old_w.items():
        if key not in plan.pruned_edges and key not in plan.edge_weights:
            assert w >= 0.05  # every surviving untouched edge is above tau
    for w in plan.new_edges.values():
        assert w == pytest.approx(0.1)
    # deterministic for a given seed
    again = ss.plan_sleep(**ep, rng=rng(seed), params=p)
    assert again.strengths == plan.strengths and again.edge_weights == plan.edge_weights
    assert [c.mix for c in again.counterfactuals] == [c.mix for c in plan.counterfactuals]


# ---- validation and params -----------------------------------------------------------

def test_bad_inputs_are_refused():
    with pytest.raises(ValidationError):
        base_plan(memory_ids=["a", "a", "c"])
    with pytest.raises(ValidationError):
        base_plan(strengths=[0.5, 0.5])
    with pytest.raises(ValidationError):
        base_plan(rng=np.random.RandomState(0))
    with pytest.raises(ValidationError):
        base_plan(edge_weights=None)
    with pytest.raises(ValidationError):
        base_plan(td_errors=[float("nan"), 0.0, 0.0])
    with pytest.raises(ValidationError):
        base_plan(edges=[("a", "b"), ("a", "b")], edge_weights=[1.0, 1.0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"w_td": 0.0, "w_reward": 0.0, "w_novelty": 0.0},
        {"ltd_threshold": 0.6},
        {"strength_floor": 0.9, "strength_cap": 0.5},
        {"mix_low": 0.8, "mix_high": 0.2},
        {"max_ltp": 1.5},
        {"w_emotion": 1.0},
        {"ltp_step": -0.1},
    ],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        SleepParams(**kwargs)


def test_defaults_follow_the_paper():
    p = SleepParams()
    assert (p.w_td, p.w_reward, p.w_novelty, p.w_emotion) == (0.40, 0.35, 0.25, 0.0)
    assert (p.select_threshold, p.ltp_step, p.ltd_step, p.prune_threshold) == (0.5, 0.10, 0.05, 0.05)


def test_no_episodes_still_prunes_weak_edges():
    plan = ss.plan_sleep(memory_ids=[], strengths=[], td_errors=[], rewards=[], related_counts=[],
                         edges=[("a", "b"), ("c", "d")], edge_weights=[0.01, 1.0], rng=rng())
    assert plan.pruned_edges == [("a", "b")] and plan.edge_weights == {} and plan.tags == {}
