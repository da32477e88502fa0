"""Statistics for the real-system experiments, with scipy.

Choices (docs/experiments.md, "Statistics"):

* **Wilcoxon signed-rank** (``wilcoxon_paired``) on paired per-seed values (or paired
  per-query values). ``zero_method="wilcox"``: a pair with exactly equal values carries
  no sign and is dropped (many ablation rows equal the full system on some seeds);
  ``n_nonzero`` is reported beside ``n``. Ties among the remaining ``|d|`` get average
  ranks (scipy). p-value: the exact null distribution when there are no ties and no
  zeros (``method="exact"``); with ties or zeros, the exact *conditional* distribution
  by enumerating all 2^m sign flips (``PermutationMethod(n_resamples=inf)``) when
  m <= 16 nonzero pairs, otherwise the normal approximation with tie correction and
  continuity correction. With m nonzero pairs the smallest attainable two-sided p is
  2 / 2^m (0.00195 for m = 10): p is reported as computed, never floored or capped.
  When every difference is zero there is nothing to test: p = 1, statistic None.
* **Bootstrap** (``bootstrap_ci``): ``scipy.stats.bootstrap`` of the mean (or of the
  mean paired difference, resampling pairs), BCa, 2,000 resamples, generator seeded from
  the caller's seed, so intervals repeat exactly. Degenerate samples (all values equal)
  give the point interval [v, v]; when BCa cannot be computed the percentile interval is
  used and named.
* **Cohen's d**: ``cohens_dz`` is the paired effect size d_z = mean(d) / sd(d) (sample
  SD, n - 1); ``cohens_d_pooled`` is (mean(x) - mean(y)) / pooled SD with
  ((n1 - 1) s1^2 + (n2 - 1) s2^2) / (n1 + n2 - 2). Either is None when its SD is 0
  (the effect is then undefined, not infinite).
* **Bonferroni** across the m = 15 single removals: p_adj = min(1, m p).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
from scipy import stats as _st

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "PERMUTATION_MAX_N",
    "bonferroni",
    "bootstrap_ci",
    "cohens_d_pooled",
    "cohens_dz",
    "compare_paired",
    "describe",
    "wilcoxon_paired",
]

PERMUTATION_MAX_N = 16
BOOTSTRAP_RESAMPLES = 2000

# One sample of values: a sequence of floats or a 1-d array.
Sample: TypeAlias = Sequence[float] | np.ndarray
Alternative: TypeAlias = Literal["two-sided", "less", "greater"]


def _arr(x: Sample) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if not np.isfinite(a).all():
        raise ValueError("statistics need finite values")
    return a


def wilcoxon_paired(x: Sample, y: Sample, *, alternative: Alternative = "two-sided") -> dict[str, Any]:
    """Wilcoxon signed-rank test of d = x - y. Returns n, n_nonzero, statistic, p and the method."""
    a, b = _arr(x), _arr(y)
    if a.shape != b.shape:
        raise ValueError("paired samples must have the same length")
    d = a - b
    n = int(d.size)
    nz = d[d != 0]
    m = int(nz.size)
    out: dict[str, Any] = {"n": n, "n_nonzero": m, "zero_method": "wilcox", "alternative": alternative}
    if m == 0:
        out.update(statistic=None, p=1.0, method="all differences zero: no test")
        return out
    if m == 1:  # two equally likely sign patterns, both as extreme as the one observed
        out.update(statistic=0.0, p=1.0, method="one nonzero difference: exact p = 1")
        return out
    ties = np.unique(np.abs(nz)).size < m
    zeros = m < n
    if not ties and not zeros and m <= 50:
        method: Literal["exact", "asymptotic"] | _st.PermutationMethod = "exact"
        label = "exact"
    elif m <= PERMUTATION_MAX_N:
        # n_resamples at least the number of sign patterns: scipy then enumerates them all.
        method = _st.PermutationMethod(n_resamples=2**m)
        label = f"exact conditional (all 2^{m} sign flips; ties average-ranked)"
    else:
        method = "asymptotic"
        label = "normal approximation, tie and continuity corrected"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Zeros are dropped here (as zero_method="wilcox" would): a permutation method must
        # flip the signs of the m nonzero differences only, not of all n pairs.
        res = _st.wilcoxon(  # type: ignore[call-overload]  # stub: names "approx" where scipy takes "asymptotic"
            nz, zero_method="wilcox", correction=(method == "asymptotic"), alternative=alternative, method=method
        )
    out.update(statistic=float(res.statistic), p=float(res.pvalue), method=label)
    return out


def bootstrap_ci(
    x: Sample,
    y: Sample | None = None,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Any]:
    """BCa bootstrap interval of mean(x), or of mean(x - y) with pairs resampled together."""
    a = _arr(x)
    d = a if y is None else a - _arr(y)
    point = float(d.mean()) if d.size else float("nan")
    out: dict[str, Any] = {"estimate": point, "confidence": confidence, "n_resamples": n_resamples, "seed": int(seed)}
    if d.size < 2 or np.ptp(d) == 0:
        out.update(low=point, high=point, method="degenerate: every value equal")
        return out
    rng = np.random.default_rng(int(seed))
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = _st.bootstrap((d,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                                method=method, random_state=rng, vectorized=True)
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            out.update(low=lo, high=hi, method=method)
            return out
        rng = np.random.default_rng(int(seed))
    out.update(low=float("nan"), high=float("nan"), method="failed")
    return out


def cohens_dz(x: Sample, y: Sample) -> float | None:
    """Paired d_z = mean(x - y) / sd(x - y), sample SD; None when the SD is 0 or n < 2."""
    d = _arr(x) - _arr(y)
    if d.size < 2:
        return None
    sd = float(d.std(ddof=1))
    return None if sd == 0 else float(d.mean()) / sd


def cohens_d_pooled(x: Sample, y: Sample) -> float | None:
    """(mean(x) - mean(y)) / pooled SD (n - 1 weights); None when the pooled SD is 0."""
    a, b = _arr(x), _arr(y)
    n1, n2 = a.size, b.size
    if n1 < 2 or n2 < 2:
        return None
    pooled = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
    return None if pooled == 0 else float(a.mean() - b.mean()) / pooled


def bonferroni(p: float, m: int) -> float:
    if m < 1:
        raise ValueError("m must be at least 1")
    return float(min(1.0, p * m))


def describe(x: Sequence[float | None]) -> dict[str, Any]:
    """Mean, sample SD and the values; missing values (None or NaN, e.g. a mean over an
    empty group) are left out of mean and SD and counted in ``n_missing``."""
    raw = np.asarray([np.nan if v is None else v for v in x], dtype=np.float64).reshape(-1)
    a = raw[np.isfinite(raw)]
    return {
        "n": int(a.size),
        "n_missing": int(raw.size - a.size),
        "mean": float(a.mean()) if a.size else float("nan"),
        "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        "per_seed": [None if not np.isfinite(v) else float(v) for v in raw],
    }


def compare_paired(
    treatment: Sequence[float], baseline: Sequence[float], *, seed: int = 0, m_tests: int = 1
) -> dict[str, Any]:
    """Everything reported for one paired contrast (treatment - baseline). Pairs with a
    missing value (None or NaN) on either side are dropped and counted."""
    t0 = np.asarray([np.nan if v is None else v for v in treatment], dtype=np.float64).reshape(-1)
    b0 = np.asarray([np.nan if v is None else v for v in baseline], dtype=np.float64).reshape(-1)
    if t0.shape != b0.shape:
        raise ValueError("paired samples must have the same length")
    keep = np.isfinite(t0) & np.isfinite(b0)
    t, b = t0[keep], b0[keep]
    mb = float(b.mean()) if b.size else float("nan")
    mt = float(t.mean()) if t.size else float("nan")
    w = wilcoxon_paired(t, b)
    if t.size == 0:
        return {"n": 0, "n_dropped": int(t0.size), "mean_treatment": mt, "mean_baseline": mb, "difference": float("nan"),
                "relative_change": None, "wilcoxon": None, "p": None, "p_bonferroni": None, "m_tests": int(m_tests),
                "ci95_difference": None, "cohens_dz": None, "cohens_d_pooled": None}
    return {
        "n": int(t.size),
        "n_dropped": int(t0.size - t.size),
        "mean_treatment": mt,
        "mean_baseline": mb,
        "difference": mt - mb,
        "relative_change": (mt - mb) / mb if mb != 0 else None,
        "wilcoxon": w,
        "p": w["p"],
        "p_bonferroni": bonferroni(w["p"], m_tests),
        "m_tests": int(m_tests),
        "ci95_difference": bootstrap_ci(t, b, seed=seed),
        "cohens_dz": cohens_dz(t, b),
        "cohens_d_pooled": cohens_d_pooled(t, b),
    }
