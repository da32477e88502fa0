"""The statistics *as implemented by the paper's simulation protocol* (REFERENCE.md 3.4).

Part of the replica of *the paper's simulation protocol, not zenbrain*. These functions
reproduce the published p-values and effect sizes; they are **not** proper statistics:

* ``protocol_wilcoxon`` drops zero differences, ranks ``|d|`` 1..n with **no tie
  averaging** (ties keep their input order, as a stable sort leaves them), takes
  ``W = min(W+, W-)``, and for n >= 10 uses the normal approximation without continuity
  correction with the Abramowitz-Stegun erf; for 5 <= n < 10 the p-value is the
  hard-coded constant 0.05 and for n < 5 it is 1. With ten seeds all moving the same
  way the smallest attainable p is 0.005062..., the "p <= 5.1e-3" printed in the paper.
* ``protocol_cohens_d`` pools the two sample SDs as ``sqrt((s1^2 + s2^2) / 2)``.

For real inference use scipy (``scipy.stats.wilcoxon``), never these.

Sums are taken left to right (``np.add.accumulate``), as JavaScript's
``Array.reduce`` does, so means agree with the published figures to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "as_erf",
    "js_mean",
    "js_std",
    "js_sum",
    "population_std",
    "protocol_cohens_d",
    "protocol_normal_cdf",
    "protocol_wilcoxon",
]

# Abramowitz & Stegun 7.1.26 coefficients, as used by the protocol's erf.
_A1, _A2, _A3 = 0.254829592, -0.284496736, 1.421413741
_A4, _A5, _P = -1.453152027, 1.061405429, 0.3275911


def js_sum(values: Sequence[float] | np.ndarray) -> float:
    """Left-to-right float64 sum, like ``arr.reduce((a, b) => a + b, 0)``."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0.0
    return float(np.add.accumulate(arr)[-1])


def js_mean(values: Sequence[float] | np.ndarray) -> float:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0.0
    return js_sum(arr) / arr.size


def js_std(values: Sequence[float] | np.ndarray) -> float:
    """Sample standard deviation (n - 1), 0 for fewer than two values."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size < 2:
        return 0.0
    m = js_mean(arr)
    return math.sqrt(js_sum((arr - m) ** 2) / (arr.size - 1))


def population_std(values: Sequence[float] | np.ndarray) -> float:
    """Population standard deviation (n), as the protocol's PMA suite uses."""
    arr = np.asarray(values, dtype=np.float64)
    m = js_mean(arr)
    return math.sqrt(js_sum((arr - m) ** 2) / arr.size)


def as_erf(x: float) -> float:
    """The protocol's erf: Abramowitz-Stegun 7.1.26 (absolute error about 1.5e-7)."""
    sign = -1.0 if x < 0 else 1.0
    x = abs(x)
    t = 1.0 / (1.0 + _P * x)
    y = 1.0 - (((((_A5 * t + _A4) * t) + _A3) * t + _A2) * t + _A1) * t * math.exp(-x * x)
    return sign * y


def protocol_normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + as_erf(x / math.sqrt(2.0)))


def protocol_wilcoxon(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """The protocol's signed-rank test of paired samples; returns ``{"W", "p", "n"}``."""
    diffs = [float(a) - float(b) for a, b in zip(x, y)]
    diffs = [d for d in diffs if d != 0]
    n = len(diffs)
    abs_d = np.abs(np.asarray(diffs, dtype=np.float64))
    order = np.argsort(abs_d, kind="stable")
    w_plus = 0.0
    w_minus = 0.0
    for rank, idx in enumerate(order, start=1):
        if diffs[idx] > 0:
            w_plus += rank
        else:
            w_minus += rank
    w = min(w_plus, w_minus)
    if n >= 10:
        mu = n * (n + 1) / 4
        sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        z = (w - mu) / sigma
        p = 2 * (1 - protocol_normal_cdf(abs(z)))
    else:
        p = 1.0 if n < 5 else 0.05
    return {"W": w, "p": p, "n": n}


def protocol_cohens_d(x: Sequence[float], y: Sequence[float]) -> float:
    """``(mean(x) - mean(y)) / sqrt((sd_x^2 + sd_y^2) / 2)`` with sample SDs; 0 if pooled is 0."""
    mx, my = js_mean(x), js_mean(y)
    sx, sy = js_std(x), js_std(y)
    pooled = math.sqrt((sx * sx + sy * sy) / 2)
    return 0.0 if pooled == 0 else (mx - my) / pooled
