import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError
from zenbrain.mechanisms import two_factor as tf
from zenbrain.mechanisms.two_factor import TwoFactorParams

FAST = settings(derandomize=True, max_examples=50, deadline=None, database=None)
unit = st.floats(0.0, 1.0)
weight = st.floats(0.05, 10.0)
variance = st.floats(0.01, 1.0)


# ---- golden values -------------------------------------------------------------------

def test_first_coactivation_golden():
    # w = 1 + 0.1 * 1 * 1; var = 1 * (1 - 0.15 / (1 + 0.1 * 1)) = 1 - 0.15 / 1.1
    w, v, k = tf.update(1.0, 1.0, 0, 1.0, 1.0)
    assert w == pytest.approx(1.1)
    assert v == pytest.approx(1 - 0.15 / 1.1)
    assert k == 1 and isinstance(k, int)


def test_lock_gates_the_learning_rate():
    # L = 1: eta = 0.1 * (1 - 0.5) = 0.05; tag 0.8, amplitude 0.5 -> +0.02
    w, _, _ = tf.update(2.0, 0.5, 4, 0.8, 0.5, lock=1.0)
    assert w == pytest.approx(2.02)


def test_variance_sequence_and_floor():
    # three co-activations from var 1: prod (1 - 0.15/(1 + 0.1 k)), k = 1..3
    want = (1 - 0.15 / 1.1) * (1 - 0.15 / 1.2) * (1 - 0.15 / 1.3)
    w, v, k = 1.0, 1.0, 0
    for _ in range(3):
        w, v, k = tf.update(w, v, k, 1.0, 1.0)
    assert v == pytest.approx(want) and k == 3 and w == pytest.approx(1.3)
    # eventually the variance hits the floor
    for _ in range(500):
        w, v, k = tf.update(w, v, k, 1.0, 1.0)
    assert v == 0.01 and w == 10.0


def test_vectorised_update():
    w, v, k = tf.update(np.array([1.0, 9.95]), np.array([1.0, 0.011]), np.array([0, 50]), 1.0, np.array([0.5, 1.0]))
    np.testing.assert_allclose(w, [1.05, 10.0])
    np.testing.assert_allclose(v, [1 - 0.15 / 1.1, 0.011 * (1 - 0.15 / (1 + 0.1 * 51))])
    assert k.tolist() == [1, 51]


def test_importance_and_lock():
    assert tf.importance(0.01) == pytest.approx(100.0)
    assert tf.variance_lock(0.25) == pytest.approx(0.75)
    assert tf.variance_lock(2.0) == 0.0


def test_ewc_penalty_golden():
    # lambda/2 * I * dw^2 = 0.25 * 100 * 0.01 = 0.25 ; fresh edge: 0.25 * 1 * 0.01
    assert tf.ewc_penalty(0.01, 0.1) == pytest.approx(0.25)
    assert tf.ewc_penalty(1.0, 0.1) == pytest.approx(0.0025)
    # ratio mature / fresh = 100
    assert tf.ewc_penalty(0.01, 0.1) / tf.ewc_penalty(1.0, 0.1) == pytest.approx(100.0)
    assert tf.ewc_penalty(0.01, 0.1, lam=1.0) == pytest.approx(0.5)


def test_constrain_change_is_the_map_step():
    # dw * 1 / (1 + 0.5 I): fresh keeps 2/3, mature (I = 100) keeps 1/51
    assert tf.constrain_change(1.0, 0.3) == pytest.approx(0.2)
    assert tf.constrain_change(0.01, 0.51) == pytest.approx(0.01)
    assert tf.constrain_change(0.01, -0.51) == pytest.approx(-0.01)
    # it minimises p/2 (x - d)^2 + lambda/2 I x^2: check against a grid search
    d, var = 0.4, 0.2
    xs = np.linspace(-1, 1, 200001)
    obj = 0.5 * (xs - d) ** 2 + tf.ewc_penalty(var, xs)
    assert tf.constrain_change(var, d) == pytest.approx(xs[np.argmin(obj)], abs=1e-5)


def test_decay_golden_and_pruning():
    # I = 1: r_eff = 0.02 / 1.1 ; 30 days
    w, prune = tf.decay(1.0, 1.0, days=30.0)
    assert w == pytest.approx((1 - 0.02 / 1.1) ** 30) and prune is False
    # mature edge: r_eff = 0.02 / 11
    w, _ = tf.decay(1.0, 0.01, days=1.0)
    assert w == pytest.approx(1 - 0.02 / 11)
    # 0.0505 * (1 - 0.02/1.1) = 0.04958 < 0.05 -> pruned
    w, prune = tf.decay(np.array([0.0505, 0.2]), np.array([1.0, 1.0]))
    assert prune.tolist() == [True, False]


def test_recall_boost_golden_and_range():
    # fresh edge: 1 + 0.2 * 1/(1+1) * 1^0.1 = 1.1
    assert tf.recall_boost(1.0, 1.0) == pytest.approx(1.1)
    # mature strong edge: 1 + 0.2 * 10/11 * 100^0.1
    assert tf.recall_boost(10.0, 0.01) == pytest.approx(1 + 0.2 * (10 / 11) * 100**0.1)
    assert tf.recall_boost(0.0, 1.0) == 1.0
    assert tf.max_recall_boost() == pytest.approx(1 + 0.2 * 100**0.1)
    assert tf.max_recall_boost() == pytest.approx(1.3169786, abs=1e-6)


def test_association_lift_golden():
    # fresh edge (share 0.1), associate scoring twice as much: 0.5 + 0.1 * (1.0 - 0.5) = 0.55
    assert tf.association_lift(1.0, 1.0, 0.5, 1.0) == pytest.approx(1.1)
    # mature strong edge, associate scoring three times as much
    c = 0.2 * (10 / 11) * 100**0.1
    assert tf.association_lift(10.0, 0.01, 0.25, 0.75) == pytest.approx(1 + 2 * c)
    # an associate that scored no higher, no edge, no score of its own: no lift
    assert tf.association_lift(10.0, 0.01, 0.75, 0.25) == 1.0
    assert tf.association_lift(5.0, 0.5, 0.5, 0.5) == 1.0
    assert tf.association_lift(0.0, 1.0, 0.5, 1.0) == 1.0
    assert tf.association_lift(5.0, 0.5, 0.0, 1.0) == 1.0
    lifts = tf.association_lift(np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.array([0.5, 1.0]), np.array([1.0, 0.5]))
    np.testing.assert_allclose(lifts, [1.1, 1.0])


def test_from_legacy_weight_golden():
    w, v, k = tf.from_legacy_weight(np.array([0.0, 2.0, 10.0]))
    np.testing.assert_allclose(w, [0.05, 2.0, 10.0])
    np.testing.assert_allclose(v, [1 / (1 + 0.025), 0.5, 1 / 6])
    assert k.tolist() == [0, 0, 0]
    assert tf.new_edge() == (1.0, 1.0, 0)


# ---- properties ----------------------------------------------------------------------

@FAST
@given(w=weight, v=variance, k=st.integers(0, 1000), t=unit, a=unit, lock=unit)
def test_update_stays_in_bounds_and_matures(w, v, k, t, a, lock):
    w2, v2, k2 = tf.update(w, v, k, t, a, lock)
    assert 0.05 <= w2 <= 10.0 and w2 >= w - 1e-12
    assert 0.01 <= v2 <= v
    assert k2 == k + 1


@FAST
@given(v1=variance, v2=variance, d=st.floats(-5, 5))
def test_more_important_edges_accept_less_change(v1, v2, d):
    lo, hi = sorted((v1, v2))  # lower variance = more important
    a_imp = tf.constrain_change(lo, d)
    a_new = tf.constrain_change(hi, d)
    assert abs(a_imp) <= abs(a_new) + 1e-12 <= abs(d) + 1e-12
    assert a_imp * d >= 0


@FAST
@given(w=weight, v=variance, d1=st.floats(0, 365), d2=st.floats(0, 365))
def test_decay_monotone_in_time(w, v, d1, d2):
    lo, hi = sorted((d1, d2))
    assert tf.decay(w, v, days=hi)[0] <= tf.decay(w, v, days=lo)[0] <= w


@FAST
@given(w=weight, v1=variance, v2=variance)
def test_mature_edges_decay_slower(w, v1, v2):
    lo, hi = sorted((v1, v2))
    assert tf.decay(w, lo, days=10)[0] >= tf.decay(w, hi, days=10)[0]


@FAST
@given(w=st.floats(0, 1000), v=st.floats(1e-6, 100))
def test_boost_within_documented_range(w, v):
    b = tf.recall_boost(w, v)
    assert 1.0 <= b < tf.max_recall_boost()


@FAST
@given(w=st.floats(0, 1000), v=st.floats(1e-6, 100), own=st.floats(1e-3, 10), other=st.floats(0, 10))
def test_association_lift_moves_toward_the_associate_never_past_it(w, v, own, other):
    lifted = own * tf.association_lift(w, v, own, other)
    if other <= own:
        assert lifted == own
    else:
        share = (lifted - own) / (other - own)
        assert share == pytest.approx(tf.recall_boost(w, v) - 1.0, abs=1e-9)
        assert own <= lifted < other


# ---- params --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs",
    [
        {"learning_rate": 2.0},
        {"maturation_rate": 1.0},
        {"min_variance": 0.0},
        {"min_weight": 5.0, "max_weight": 1.0},
        {"initial_weight": 20.0},
        {"initial_variance": 0.001},
        {"ewc_lambda": -1.0},
        {"boost_alpha": 3.0},
    ],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        TwoFactorParams(**kwargs)


def test_custom_learning_rate():
    p = TwoFactorParams(learning_rate=0.05)  # the appendix text's eta
    assert tf.update(1.0, 1.0, 0, 1.0, 1.0, params=p)[0] == pytest.approx(1.05)
