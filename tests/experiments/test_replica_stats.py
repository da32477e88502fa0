"""The statistics as implemented by the paper's simulation protocol (not proper statistics)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from zenbrain.experiments.published import AUTHORS_RESULT_FILES, REFERENCE_VERIFIED
from zenbrain.experiments.replica.stats import (
    as_erf,
    js_mean,
    js_std,
    js_sum,
    population_std,
    protocol_cohens_d,
    protocol_wilcoxon,
)


def test_wilcoxon_floor_for_ten_same_sign_differences():
    base = [1.0 + i for i in range(10)]
    worse = [b - 0.5 - 0.01 * i for i, b in enumerate(base)]
    w = protocol_wilcoxon(base, worse)
    assert w["n"] == 10 and w["W"] == 0
    assert w["p"] == pytest.approx(AUTHORS_RESULT_FILES["moderate"]["p_min"], abs=1e-15)
    assert round(w["p"], 6) == REFERENCE_VERIFIED["wilcoxon_min_p_n10"]
    # The protocol's p is a floor, whatever the effect size.
    assert protocol_wilcoxon(base, [b - 1000 for b in base])["p"] == w["p"]


def test_wilcoxon_small_samples_are_hard_coded():
    x = [1.0] * 9
    assert protocol_wilcoxon(x, [0.0] * 9)["p"] == 0.05  # 5 <= n < 10
    assert protocol_wilcoxon(x[:5], [0.0] * 5)["p"] == 0.05
    assert protocol_wilcoxon(x[:4], [0.0] * 4)["p"] == 1.0  # n < 5
    # zero differences are dropped before counting n
    assert protocol_wilcoxon([1.0] * 10, [1.0] * 9 + [0.0])["n"] == 1


def test_wilcoxon_ranks_ties_by_input_order_not_averaged():
    # |d| all equal: ranks 1..10 go by position. Positives at positions 0..4 -> W+ = 15.
    x = [1.0] * 5 + [0.0] * 5
    y = [0.0] * 5 + [1.0] * 5
    w = protocol_wilcoxon(x, y)
    assert w["W"] == 15.0
    # Reversed order gives the other split: W+ = 40, W- = 15 -> W = 15 as well, but the
    # statistic depends on order in general:
    x2 = [1.0, 0.0] * 5
    y2 = [0.0, 1.0] * 5
    assert protocol_wilcoxon(x2, y2)["W"] == 25.0  # positives at ranks 1,3,5,7,9
    # scipy averages the ties (all ranks 5.5) and so differs: this is not proper statistics.
    scipy_p = sps.wilcoxon(x, y).pvalue
    assert not math.isclose(scipy_p, w["p"], rel_tol=1e-3)


def test_cohens_d_pools_sample_sds():
    x, y = [1.0, 2.0, 3.0], [2.0, 4.0, 6.0]
    sx, sy = 1.0, 2.0
    assert protocol_cohens_d(x, y) == pytest.approx((2.0 - 4.0) / math.sqrt((sx**2 + sy**2) / 2))
    assert protocol_cohens_d([1.0, 1.0], [1.0, 1.0]) == 0.0


def test_sums_are_left_to_right():
    values = [1.0] + [1e-16] * 10
    assert js_sum(values) == 1.0  # each tiny addend is lost, as in JS reduce
    assert math.fsum(values) > 1.0
    assert js_mean([]) == 0.0 and js_std([3.0]) == 0.0
    assert js_std([1.0, 2.0, 3.0]) == 1.0
    assert population_std([1.0, 3.0]) == 1.0


def test_as_erf_is_the_abramowitz_stegun_approximation():
    for x in (-2.0, -0.3, 0.0, 0.5, 1.0, 3.0):
        assert abs(as_erf(x) - math.erf(x)) < 1.5e-7
    assert as_erf(0.5) != math.erf(0.5)
