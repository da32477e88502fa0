"""The scalar fast paths give what the vectorised formulas give."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.mechanisms import ebbinghaus, vmpfc
from zenbrain.pma import triple_copy


def test_vmpfc_scalar_paths_match_the_array_paths():
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(2, 50, 16))
    pes = vmpfc.prediction_error(c_prev=a, c_now=b)
    for i in range(50):
        assert vmpfc.prediction_error(c_prev=a[i], c_now=b[i]) == pytest.approx(pes[i], abs=1e-12)
    assert vmpfc.prediction_error(c_prev=np.zeros(4), c_now=np.ones(4)) == vmpfc.DEFAULTS.missing_context_pe
    factors = vmpfc.interval_factor(pe=np.linspace(0, 1, 11))
    for pe, f in zip(np.linspace(0, 1, 11), factors):
        assert vmpfc.interval_factor(pe=float(pe)) == pytest.approx(f, abs=1e-12)
    due = np.array([100.0, 5000.0, 1e6])
    out = vmpfc.apply(due, 0.0, np.array([0.5, 1.7, 0.3]))
    for d, f, o in zip(due, (0.5, 1.7, 0.3), out):
        assert vmpfc.apply(float(d), 0.0, f) == pytest.approx(o)


def test_ebbinghaus_review_stability_scalar_matches_array():
    s = np.array([0.1, 1.0, 30.0, 1e6])
    for ok in (True, False):
        arr = ebbinghaus.review_stability(stability=s, success=np.full(4, ok))
        for x, y in zip(s, arr):
            assert ebbinghaus.review_stability(stability=float(x), success=ok) == pytest.approx(y)


def test_triple_copy_evaluate_matches_strengths():
    st = triple_copy.CopyState(s0=0.8, anchor=0.0, deep_base=0.1, deep_target=0.6, deep_anchor=3600.0)
    for now in (0.0, 7200.0, 5 * 86400.0, 90 * 86400.0):
        one = triple_copy.evaluate(st, now=now)
        many = triple_copy.evaluate_many([st], now=now)
        for field in ("fast", "medium", "deep", "composite"):
            assert getattr(one, field) == pytest.approx(float(getattr(many, field)[0]), abs=1e-12)
