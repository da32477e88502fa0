import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import vmpfc
from zenbrain.mechanisms.vmpfc import VmpfcParams

FAST = settings(derandomize=True, max_examples=50, deadline=None, database=None)
DAY = 86400.0


def sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ---- golden values -------------------------------------------------------------------

def test_prediction_error_golden():
    assert vmpfc.prediction_error(c_prev=[1.0, 0.0], c_now=[1.0, 0.0]) == pytest.approx(0.0)
    assert vmpfc.prediction_error(c_prev=[1.0, 0.0], c_now=[0.0, 2.0]) == pytest.approx(1.0)
    assert vmpfc.prediction_error(c_prev=[1.0, 0.0], c_now=[-1.0, 0.0]) == 1.0  # clipped at 1
    # 45 degrees: 1 - cos(pi/4)
    assert vmpfc.prediction_error(c_prev=[1.0, 0.0], c_now=[1.0, 1.0]) == pytest.approx(1 - math.sqrt(0.5))


def test_missing_context_is_neutral():
    assert vmpfc.prediction_error(c_prev=[0.0, 0.0], c_now=[1.0, 0.0]) == 0.5
    assert vmpfc.interval_factor(pe=0.5) == pytest.approx(1.0)


def test_prediction_error_row_wise():
    prev = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    now = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(vmpfc.prediction_error(c_prev=prev, c_now=now), [0.0, 1.0, 0.5])


def test_rho_and_factor_golden():
    # PE 0.9: rho = sig(6 * 0.4) = sig(2.4); factor = 1 + 0.6 (1 - 2 rho)
    r = sig(2.4)
    assert vmpfc.rho(pe=0.9) == pytest.approx(r)
    assert vmpfc.interval_factor(pe=0.9) == pytest.approx(1 + 0.6 * (1 - 2 * r))
    assert vmpfc.interval_factor(pe=0.1) == pytest.approx(1 + 0.6 * (1 - 2 * sig(-2.4)))
    # sign: shorten at high PE, lengthen at low PE
    assert vmpfc.interval_factor(pe=0.9) < 1.0 < vmpfc.interval_factor(pe=0.1)


def test_alpha_03_reproduces_the_authors_code():
    # code: mult = 1 + 0.6 (0.5 - rho); base 7 d -> 5.25 d at PE 0.9, 8.75 d at PE 0.1 (rounded as published)
    p = VmpfcParams(alpha_v=0.3)
    hi = vmpfc.apply(due=7 * DAY, last_review=0.0, factor=vmpfc.interval_factor(pe=0.9, params=p), params=p)
    lo = vmpfc.apply(due=7 * DAY, last_review=0.0, factor=vmpfc.interval_factor(pe=0.1, params=p), params=p)
    assert hi / DAY == pytest.approx(7 * (1 + 0.6 * (0.5 - sig(2.4))))
    assert round(hi / DAY, 2) == 5.25 and round(lo / DAY, 2) == 8.75


def test_clamps_bind_for_large_alpha():
    p = VmpfcParams(alpha_v=1.0, min_factor=0.3, max_factor=2.0)
    # PE 1: rho = sig(3) = 0.9526 -> 1 + (1 - 1.905) = 0.095 -> clamped to 0.3
    assert vmpfc.interval_factor(pe=1.0, params=p) == 0.3


def test_apply_golden_and_floor():
    # 10-day interval from last review at day 5, factor 0.5 -> due day 10
    assert vmpfc.apply(due=15 * DAY, last_review=5 * DAY, factor=0.5) == pytest.approx(10 * DAY)
    # a 10-minute learning step shortened by 0.3 stays >= 60 s: 600 * 0.3 = 180 s
    assert vmpfc.apply(due=600.0, last_review=0.0, factor=0.3) == pytest.approx(180.0)
    # 100 s shortened by 0.3 would be 30 s: floored at the 60 s minimum
    assert vmpfc.apply(due=100.0, last_review=0.0, factor=0.3) == pytest.approx(60.0)
    # an interval already under the minimum is kept, not lengthened to the minimum
    assert vmpfc.apply(due=30.0, last_review=0.0, factor=0.5) == pytest.approx(30.0)
    # due before last review: zero interval
    assert vmpfc.apply(due=0.0, last_review=10.0, factor=1.5) == pytest.approx(10.0)


def test_apply_vectorised_and_refuses_bad_factor():
    out = vmpfc.apply(due=np.array([10 * DAY, 20 * DAY]), last_review=0.0, factor=np.array([0.5, 1.5]))
    np.testing.assert_allclose(out, [5 * DAY, 30 * DAY])
    with pytest.raises(ValidationError):
        vmpfc.apply(due=DAY, last_review=0.0, factor=-1.0)
    with pytest.raises(ValidationError):
        vmpfc.apply(due=DAY, last_review=0.0, factor=float("inf"))
    with pytest.raises(ValidationError):
        vmpfc.prediction_error(c_prev=[1.0, 0.0], c_now=[1.0, 0.0, 0.0])
    assert vmpfc.apply(10 * DAY, 0.0, 0.5) == pytest.approx(5 * DAY)  # positional form


# ---- properties ----------------------------------------------------------------------

@FAST
@given(pe1=st.floats(0, 1), pe2=st.floats(0, 1), alpha=st.floats(0, 1))
def test_factor_monotone_decreasing_in_pe_and_bounded(pe1, pe2, alpha):
    p = VmpfcParams(alpha_v=alpha)
    lo, hi = sorted((pe1, pe2))
    f_lo = vmpfc.interval_factor(pe=lo, params=p)
    f_hi = vmpfc.interval_factor(pe=hi, params=p)
    assert 0.3 <= f_hi <= f_lo <= 2.0
    assert 1 - alpha - 1e-12 <= f_hi and f_lo <= 1 + alpha + 1e-12


@FAST
@given(
    a=arrays(np.float64, 8, elements=st.floats(-10, 10)),
    b=arrays(np.float64, 8, elements=st.floats(-10, 10)),
)
def test_pe_in_unit_interval(a, b):
    pe = vmpfc.prediction_error(c_prev=a, c_now=b)
    assert 0.0 <= pe <= 1.0


@FAST
@given(last=st.floats(0, 1e9), interval=st.floats(0, 400 * DAY), pe=st.floats(0, 1))
def test_new_interval_within_limits(last, interval, pe):
    f = vmpfc.interval_factor(pe=pe)
    new = vmpfc.apply(due=last + interval, last_review=last, factor=f)
    new_interval = new - last
    assert new_interval >= min(interval, 60.0) - 1e-3
    assert new_interval <= 2.0 * interval + 1e-3
    if interval >= 60.0 / 0.3:
        assert new_interval == pytest.approx(interval * f, rel=1e-9, abs=1e-3)


# ---- params --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs",
    [{"alpha_v": 1.5}, {"alpha_v": -0.1}, {"min_factor": 0.0}, {"max_factor": 0.5}, {"steepness": 0.0},
     {"min_interval_seconds": -1.0}],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        VmpfcParams(**kwargs)
