"""experiments.stats against values computed by hand or by brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from zenbrain.experiments.stats import (
    bonferroni,
    bootstrap_ci,
    cohens_d_pooled,
    cohens_dz,
    compare_paired,
    wilcoxon_paired,
)


def _brute_force_p(d: list[float]) -> float:
    """Two-sided exact p of the signed-rank statistic min(W+, W-) over all sign flips,
    zeros dropped, tied |d| given average ranks."""
    d = [x for x in d if x != 0]
    a = np.abs(np.asarray(d, dtype=float))
    order = np.argsort(a, kind="stable")
    ranks = np.empty(len(a))
    i = 0
    while i < len(a):  # average ranks of ties
        j = i
        while j + 1 < len(a) and a[order[j + 1]] == a[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    signs = np.sign(d)

    def stat(s: np.ndarray) -> float:
        return min(ranks[s > 0].sum(), ranks[s < 0].sum())

    obs = stat(signs)
    count = total = 0
    for flips in itertools.product((1.0, -1.0), repeat=len(d)):
        total += 1
        count += stat(np.asarray(flips)) <= obs + 1e-12
    return count / total


def test_wilcoxon_exact_without_ties():
    res = wilcoxon_paired([1, 2, 3, 4, 5], [0, 0, 0, 0, 0])
    assert res["method"] == "exact"
    assert res["statistic"] == 0.0
    assert res["p"] == pytest.approx(2 / 32)  # all 5 positive: 2 of 32 sign patterns as extreme


def test_wilcoxon_ten_seeds_same_direction_is_not_floored_at_0_005():
    res = wilcoxon_paired(np.arange(1, 11) * 0.1, np.zeros(10))
    assert res["p"] == pytest.approx(2 / 1024)


@pytest.mark.parametrize("d", [[1, 1, 2, -3, 0, 4], [0.5, 0.5, 0.5, -0.5, 1.0, 2.0, 0.0, -2.0], [3, -1, -1, 2, 2, 2]])
def test_wilcoxon_ties_and_zeros_match_enumeration(d):
    res = wilcoxon_paired(d, [0.0] * len(d))
    assert res["n"] == len(d)
    assert res["n_nonzero"] == sum(1 for x in d if x != 0)
    assert res["p"] == pytest.approx(_brute_force_p(d), abs=1e-9)


def test_wilcoxon_degenerate_cases():
    assert wilcoxon_paired([1, 2, 3], [1, 2, 3])["p"] == 1.0
    assert wilcoxon_paired([1, 2, 3], [1, 2, 2])["p"] == 1.0  # one nonzero difference
    big = wilcoxon_paired([1.0] * 3 + [0.0] * 400, [0.0] * 403)  # many zeros: only 3 signs to flip
    assert big["n_nonzero"] == 3 and big["p"] == pytest.approx(0.25)


def test_wilcoxon_large_sample_uses_normal_approximation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    res = wilcoxon_paired(np.round(x, 1), np.zeros(40))
    assert "normal" in res["method"] or res["method"] == "exact"
    assert 0.0 <= res["p"] <= 1.0


def test_cohens_d_by_hand():
    assert cohens_dz([2, 4, 6], [1, 2, 3]) == pytest.approx(2.0)  # d = 1, 2, 3: mean 2, sd 1
    assert cohens_d_pooled([1, 2, 3], [2, 3, 4]) == pytest.approx(-1.0)  # pooled sd 1
    assert cohens_dz([1, 2], [0, 1]) is None  # constant difference: sd 0, undefined
    assert cohens_d_pooled([1, 1], [1, 1]) is None


def test_bonferroni():
    assert bonferroni(0.002, 15) == pytest.approx(0.03)
    assert bonferroni(0.2, 15) == 1.0
    with pytest.raises(ValueError):
        bonferroni(0.1, 0)


def test_bootstrap_seeded_and_degenerate():
    x = [0.1, 0.4, 0.35, 0.8, 0.5, 0.45]
    a, b = bootstrap_ci(x, seed=7), bootstrap_ci(x, seed=7)
    assert a == b and a["method"] == "BCa"
    assert a["low"] < np.mean(x) < a["high"]
    assert bootstrap_ci([2.0, 2.0, 2.0])["low"] == 2.0 == bootstrap_ci([2.0, 2.0, 2.0])["high"]
    paired = bootstrap_ci([1, 2, 3, 5], [0, 1, 1, 1], seed=3)
    assert paired["estimate"] == pytest.approx(2.0)


def test_compare_paired_reports_everything():
    out = compare_paired([0.5, 0.6, 0.7, 0.9], [0.4, 0.4, 0.5, 0.5], seed=1, m_tests=15)
    assert out["difference"] == pytest.approx(0.225)  # 0.675 - 0.45
    assert out["relative_change"] == pytest.approx(0.5)
    assert out["p_bonferroni"] == pytest.approx(min(1.0, out["p"] * 15))
    assert math.isfinite(out["cohens_dz"])
    with pytest.raises(ValueError):
        wilcoxon_paired([1.0, float("nan")], [0.0, 0.0])
