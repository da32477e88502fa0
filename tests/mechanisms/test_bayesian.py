"""Bayesian confidence: closed-form posteriors, exact marginals on trees, calibration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import bayesian as B
from zenbrain.model import Edge

PROPS = settings(derandomize=True, max_examples=30, deadline=None)


# --------------------------------------------------------------------------- params


def test_params_defaults_are_valid_and_bounds_enforced():
    p = B.BayesianParams()
    assert (p.prior_alpha, p.prior_beta, p.credible_level) == (1.0, 1.0, 0.95)
    for bad in ({"prior_alpha": 0.0}, {"damping": 1.0}, {"credible_level": 1.0}, {"max_iterations": 0},
                {"max_iterations": 2.5}, {"supports_coupling": float("nan")}, {"tolerance": "x"}):
        with pytest.raises(ConfigError):
            B.BayesianParams(**bad)
    assert all(len(row) == 4 and row[3] for row in B.BayesianParams.describe())


def test_relation_couplings_signs_and_factors():
    c = B.relation_couplings(B.BayesianParams(supports_coupling=2.0, contradicts_coupling=3.0))
    assert c["supports"] == 2.0 and c["contradicts"] == -3.0
    assert c["causes"] == pytest.approx(1.6) and c["similar_to"] == pytest.approx(0.4)
    assert "created_by" not in c


# --------------------------------------------------------------------------- local evidence


def test_observe_is_the_conjugate_update():
    a, b = B.prior()
    for supports in [True] * 7 + [False] * 3:
        a, b = B.observe(a, b, supports=supports, strength=1.0)
    assert (a, b) == (8.0, 4.0)
    assert B.mean(a, b) == pytest.approx(8 / 12)
    a2, b2 = B.observe(2.0, 3.0, supports=False, strength=0.25)
    assert (a2, b2) == (2.0, 3.25)


def test_observe_vectorised():
    a, b = B.observe(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0]),
                     supports=np.array([True, False, True]), strength=np.array([1.0, 2.0, 0.5]))
    np.testing.assert_allclose(a, [2.0, 2.0, 3.5])
    np.testing.assert_allclose(b, [1.0, 3.0, 1.0])


def test_observe_rejects_bad_input():
    with pytest.raises(ValidationError):
        B.observe(1.0, 1.0, supports=True, strength=-1.0)
    with pytest.raises(ValidationError):
        B.observe(0.0, 1.0, supports=True)
    with pytest.raises(ValidationError):
        B.observe(1.0, float("inf"), supports=True)


def test_credible_interval_closed_forms():
    # Beta(1,1) is uniform: the 95% equal-tailed interval is [0.025, 0.975].
    lo, hi = B.credible_interval(1.0, 1.0)
    assert (lo, hi) == (pytest.approx(0.025), pytest.approx(0.975))
    # Beta(a,1) has CDF x^a, so its q-quantile is q^(1/a).
    lo, hi = B.credible_interval(3.0, 1.0, level=0.9)
    assert lo == pytest.approx(0.05 ** (1 / 3)) and hi == pytest.approx(0.95 ** (1 / 3))
    # Beta(1,b) has CDF 1-(1-x)^b, so its q-quantile is 1-(1-q)^(1/b).
    lo, hi = B.credible_interval(1.0, 4.0)
    assert lo == pytest.approx(1 - 0.975 ** 0.25) and hi == pytest.approx(1 - 0.025 ** 0.25)
    with pytest.raises(ValidationError):
        B.credible_interval(1.0, 1.0, level=1.0)


@PROPS
@given(
    a=st.floats(0.1, 1e4), b=st.floats(0.1, 1e4), level=st.floats(0.8, 0.99),
)
def test_interval_contains_mean_and_mean_in_open_unit_interval(a, b, level):
    # Holds for alpha, beta >= 0.1 (the prior's lower bound) at levels >= 0.8: the CDF at the
    # mean of a very skewed Beta tends to that of Gamma(0.1) at its mean, about 0.835.
    m = B.mean(a, b)
    lo, hi = B.credible_interval(a, b, level=level)
    assert 0.0 < m < 1.0
    assert 0.0 <= lo <= m <= hi <= 1.0


@PROPS
@given(a=st.floats(0.1, 1e3), b=st.floats(0.1, 1e3), s=st.floats(0.0, 100.0))
def test_evidence_moves_the_mean_the_right_way(a, b, s):
    m = B.mean(a, b)
    assert B.mean(*B.observe(a, b, supports=True, strength=s)) >= m
    assert B.mean(*B.observe(a, b, supports=False, strength=s)) <= m


# --------------------------------------------------------------------------- propagation


def _exact_marginals(local, src, dst, c):
    """P(x_i = 1) by enumerating every truth assignment (independent of the BP code)."""
    n = len(local)
    num = np.zeros(n)
    z = 0.0
    for xs in itertools.product((0, 1), repeat=n):
        x = np.array(xs)
        w = math.prod(p if xi else 1 - p for p, xi in zip(local, xs))
        w *= math.exp(sum(cij * x[i] * x[j] for i, j, cij in zip(src, dst, c)))
        z += w
        num += w * x
    return num / z


def test_propagation_is_exact_on_a_tree():
    rng = np.random.default_rng(3)
    n = 9
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    src, dst = np.arange(1, n), np.array(parent)
    rel = ["supports", "contradicts", "causes", "supports", "contradicts", "part_of", "requires", "similar_to"]
    weight = rng.uniform(0.5, 2.0, n - 1)
    alpha, beta = rng.uniform(0.5, 5, n), rng.uniform(0.5, 5, n)
    p = B.BayesianParams(supports_coupling=1.7, contradicts_coupling=2.3)
    res = B.propagate(alpha=alpha, beta=beta, src=src, dst=dst, relation=rel, weight=weight, params=p)
    table = B.relation_couplings(p)
    c = [table[r] * w for r, w in zip(rel, weight)]
    exact = _exact_marginals(alpha / (alpha + beta), src, dst, c)
    assert res.converged
    np.testing.assert_allclose(res.belief, exact, atol=1e-6)
    np.testing.assert_allclose(res.alpha + res.beta, alpha + beta)
    np.testing.assert_allclose(res.alpha / (res.alpha + res.beta), res.belief)


def test_propagation_is_close_to_exact_on_a_small_loopy_graph():
    rng = np.random.default_rng(5)
    n = 10
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.3]
    src, dst = np.array([i for i, _ in pairs]), np.array([j for _, j in pairs])
    rel = [("supports", "contradicts")[int(rng.random() < 0.4)] for _ in pairs]
    alpha, beta = rng.uniform(1, 4, n), rng.uniform(1, 4, n)
    p = B.BayesianParams(supports_coupling=0.8, contradicts_coupling=0.8)
    res = B.propagate(alpha=alpha, beta=beta, src=src, dst=dst, relation=rel, params=p)
    table = B.relation_couplings(p)
    exact = _exact_marginals(alpha / (alpha + beta), src, dst, [table[r] for r in rel])
    assert res.converged
    assert np.max(np.abs(res.belief - exact)) < 0.03


def test_no_edges_or_uncoupled_relations_change_nothing():
    a, b = np.array([2.0, 1.0, 5.0]), np.array([1.0, 3.0, 5.0])
    for src, dst, rel in (([], [], []), ([0, 1], [1, 2], ["created_by", "used_by"]), ([1], [1], ["supports"])):
        res = B.propagate(alpha=a, beta=b, src=src, dst=dst, relation=rel)
        np.testing.assert_allclose(res.belief, a / (a + b))
        assert res.changes == [] and res.iterations == 0 and res.converged


def test_change_log_and_edge_arrays_from_model_edges():
    ids = ["f1", "f2", "f3"]
    edges = [Edge("f1", "f2", "supports", weight=2.0), Edge("f3", "f2", "contradicts"), Edge("f1", "zz", "supports")]
    src, dst, rel, w = B.edge_arrays(edges, {m: i for i, m in enumerate(ids)})
    assert src.tolist() == [0, 2] and dst.tolist() == [1, 1] and rel == ["supports", "contradicts"]
    assert w.tolist() == [2.0, 1.0]
    res = B.propagate(alpha=[9.0, 1.0, 1.0], beta=[1.0, 1.0, 9.0], src=src, dst=dst, relation=rel, weight=w, ids=ids)
    logged = {ch.id: ch for ch in res.changes}
    assert "f2" in logged and logged["f2"].delta > 0.1  # a sure supporter, an unlikely contradictor
    for ch in res.changes:
        assert ch.before == pytest.approx(res.local[ch.index]) and ch.after == pytest.approx(res.belief[ch.index])


def test_propagate_rejects_malformed_graphs():
    with pytest.raises(ValidationError):
        B.propagate(alpha=[1.0], beta=[1.0], src=[0], dst=[1], relation=["supports"])
    with pytest.raises(ValidationError):
        B.propagate(alpha=[1.0, 1.0], beta=[1.0], src=[], dst=[], relation=[])
    with pytest.raises(ValidationError):
        B.propagate(alpha=[1.0, 1.0], beta=[1.0, 1.0], src=[0], dst=[1], relation=[])


@st.composite
def graphs(draw, relations=("supports", "contradicts", "causes", "requires", "part_of", "similar_to", "used_by")):
    n = draw(st.integers(1, 12))
    m = draw(st.integers(0, 30))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    rel = draw(st.lists(st.sampled_from(relations), min_size=m, max_size=m))
    w = draw(st.lists(st.floats(0.0, 10.0), min_size=m, max_size=m))
    a = draw(st.lists(st.floats(0.1, 1e4), min_size=n, max_size=n))
    b = draw(st.lists(st.floats(0.1, 1e4), min_size=n, max_size=n))
    return np.array(a), np.array(b), src, dst, rel, w


@PROPS
@given(g=graphs(), coupling=st.floats(0.0, 10.0))
def test_beliefs_stay_in_open_unit_interval(g, coupling):
    a, b, src, dst, rel, w = g
    p = B.BayesianParams(supports_coupling=coupling, contradicts_coupling=coupling)
    res = B.propagate(alpha=a, beta=b, src=src, dst=dst, relation=rel, weight=w, params=p)
    assert np.all(np.isfinite(res.belief)) and np.all((res.belief > 0) & (res.belief < 1))
    assert np.all(res.alpha > 0) and np.all(res.beta > 0)
    np.testing.assert_allclose(res.alpha + res.beta, a + b, rtol=1e-12)
    big = np.abs(res.belief - res.local) >= p.log_threshold
    assert sorted(ch.index for ch in res.changes) == np.flatnonzero(big).tolist()


@PROPS
@given(g=graphs(relations=("supports", "causes", "similar_to")))
def test_positive_relations_never_lower_a_belief(g):
    a, b, src, dst, rel, w = g
    res = B.propagate(alpha=a, beta=b, src=src, dst=dst, relation=rel, weight=w)
    assert np.all(res.belief >= res.local - 1e-12)


@PROPS
@given(g=graphs(relations=("contradicts",)))
def test_contradictions_never_raise_a_belief(g):
    a, b, src, dst, rel, w = g
    res = B.propagate(alpha=a, beta=b, src=src, dst=dst, relation=rel, weight=w)
    assert np.all(res.belief <= res.local + 1e-12)


# --------------------------------------------------------------------------- calibration utilities


def test_brier_ece_and_reliability_golden_values():
    p = np.array([0.1, 0.1, 0.9, 0.9, 0.6])
    y = np.array([0, 1, 1, 1, 0])
    assert B.brier_score(p, y) == pytest.approx((0.01 + 0.81 + 0.01 + 0.01 + 0.36) / 5)
    curve = B.reliability_curve(p, y, bins=2)
    assert curve.counts.tolist() == [2, 3]
    np.testing.assert_allclose(curve.mean_predicted, [0.1, 0.8])
    np.testing.assert_allclose(curve.frequency, [0.5, 2 / 3])
    # ECE = (2 |0.5 - 0.1| + 3 |2/3 - 0.8|) / 5
    assert B.expected_calibration_error(p, y, bins=2) == pytest.approx((2 * 0.4 + 3 * (0.8 - 2 / 3)) / 5)
    assert B.reliability_curve([1.0], [1], bins=10).counts[-1] == 1
    with pytest.raises(ValidationError):
        B.brier_score([0.5], [2])


def test_roc_auc_matches_pairwise_count():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, 40).astype(float)  # many ties
    y = (rng.random(40) < 0.5).astype(float)
    pos, neg = s[y == 1], s[y == 0]
    pairs = [(1.0 if a > b else 0.5 if a == b else 0.0) for a in pos for b in neg]
    assert B.roc_auc(s, y) == pytest.approx(sum(pairs) / len(pairs))


def _synthetic_fact_graph(seed, *, n=6000, degree=2.0, p_sup_both_true=0.8, p_sup_otherwise=0.3):
    """Known generative model, drawn independently of the method.

    theta_i ~ Beta(2, 2); truth_i ~ Bernoulli(theta_i); k_i of n_i in {0..3} checks confirm,
    k_i ~ Binomial(n_i, theta_i); random pairs get 'supports' with probability 0.8 if both
    facts are true and 0.3 otherwise, else 'contradicts'.
    """
    rng = np.random.default_rng(seed)
    theta = rng.beta(2.0, 2.0, n)
    truth = (rng.random(n) < theta).astype(float)
    checks = rng.integers(0, 4, n)
    confirmed = rng.binomial(checks, theta)
    m = int(degree * n)
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = i != j
    i, j = i[keep], j[keep]
    both = (truth[i] == 1) & (truth[j] == 1)
    sup = rng.random(len(i)) < np.where(both, p_sup_both_true, p_sup_otherwise)
    rel = np.where(sup, "supports", "contradicts").tolist()
    return truth, confirmed, checks - confirmed, i, j, rel


def _ece_noise_floor(p, *, seed=99, reps=200, quantile=0.99):
    """ECE that a perfectly calibrated forecaster reaches by chance with these very predictions."""
    rng = np.random.default_rng(seed)
    draws = rng.random((reps, p.size)) < p
    return float(np.quantile([B.expected_calibration_error(p, d.astype(float)) for d in draws], quantile))


def test_posteriors_are_calibrated_and_propagation_adds_signal():
    truth, pos, neg, i, j, rel = _synthetic_fact_graph(11)
    params = B.BayesianParams(
        prior_alpha=2.0,
        prior_beta=2.0,
        # Couplings are the generative log-likelihood ratios: log P(rel | both true) / P(rel | otherwise).
        supports_coupling=math.log(0.8 / 0.3),
        contradicts_coupling=math.log(0.7 / 0.2),
    )
    a0, b0 = B.prior(params=params)
    alpha, beta = B.observe(np.full(truth.size, a0), np.full(truth.size, b0), supports=True, strength=pos)
    alpha, beta = B.observe(alpha, beta, supports=False, strength=neg)
    res = B.propagate(alpha=alpha, beta=beta, src=i, dst=j, relation=rel, params=params)
    assert res.converged

    # Threshold: the 99th percentile of the ECE that a perfectly calibrated forecaster with the
    # same predictions gets from sampling noise alone (about 0.02 at n = 6000, 10 bins).
    for p in (res.local, res.belief):
        assert B.expected_calibration_error(p, truth) < _ece_noise_floor(p)
    assert B.brier_score(res.belief, truth) < B.brier_score(res.local, truth) - 0.03

    auc_local, auc_prop = B.roc_auc(res.local, truth), B.roc_auc(res.belief, truth)
    assert auc_prop > auc_local + 0.1  # about 0.62 -> 0.81 on this generative model

    # The check has power: couplings four times too strong make overconfident beliefs fail it.
    loud = params.replace(supports_coupling=4 * params.supports_coupling,
                          contradicts_coupling=4 * params.contradicts_coupling)
    over = B.propagate(alpha=alpha, beta=beta, src=i, dst=j, relation=rel, params=loud).belief
    assert B.expected_calibration_error(over, truth) > 3 * _ece_noise_floor(over)


def test_a_graph_without_signal_adds_nothing():
    _truth, pos, neg, i, j, rel = _synthetic_fact_graph(12, p_sup_both_true=0.5, p_sup_otherwise=0.5)
    # The matching couplings are log(0.5/0.5) = 0: propagation must leave every belief alone.
    params = B.BayesianParams(prior_alpha=2.0, prior_beta=2.0, supports_coupling=0.0, contradicts_coupling=0.0)
    res = B.propagate(alpha=2.0 + pos, beta=2.0 + neg, src=i, dst=j, relation=rel, params=params)
    np.testing.assert_allclose(res.belief, res.local)


def test_credible_level_comes_from_params_by_default():
    p = B.BayesianParams(credible_level=0.9)
    assert B.credible_interval(1.0, 1.0, params=p) == (pytest.approx(0.05), pytest.approx(0.95))
    assert B.credible_interval(1.0, 1.0, level=0.8, params=p) == (pytest.approx(0.1), pytest.approx(0.9))
