"""StabilityProtector: the paper's lock rule by hand, the cap, monotonicity, vectorisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError
from zenbrain.pma.stability import (
    StabilityParams,
    assess,
    lock_score,
    rigidity,
    update_allowed,
    update_threshold,
)

FAST = settings(derandomize=True, max_examples=80, deadline=None)


def test_fresh_memory_needs_base_threshold():
    assert lock_score(access_count=0, confidence=0.0, age_days=0.0) == 0.0
    assert rigidity(age_days=0.0) == 1.0
    assert update_threshold(access_count=0, confidence=0.0, age_days=0.0) == pytest.approx(0.5)


def test_golden_mid_memory():
    lock = 0.3 * math.log2(4) / math.log2(11) + 0.3 * 0.8 + 0.2 * 30 / 365
    rho = 1 + 0.1 * math.log2(31)
    assert lock_score(access_count=3, confidence=0.8, age_days=30) == pytest.approx(lock)
    assert rigidity(age_days=30) == pytest.approx(rho)
    thr = 0.5 + 0.3 * lock * rho
    assert thr == pytest.approx(0.69286, abs=1e-4)
    assert update_threshold(access_count=3, confidence=0.8, age_days=30) == pytest.approx(thr)
    assert update_allowed(pe=0.70, access_count=3, confidence=0.8, age_days=30) is True
    assert update_allowed(pe=0.69, access_count=3, confidence=0.8, age_days=30) is False


def test_old_locked_memory_is_capped_so_a_correction_passes():
    uncapped = 0.5 + 0.3 * 1.0 * (1 + 0.1 * math.log2(366))
    assert uncapped > 1.0  # the paper's rule would make it immutable
    assert lock_score(access_count=50, confidence=1.0, age_days=365, core=True) == pytest.approx(1.0)
    assert update_threshold(access_count=50, confidence=1.0, age_days=365, core=True) == 0.95
    assert update_allowed(pe=1.0, access_count=50, confidence=1.0, age_days=3650, core=True) is True
    assert update_allowed(pe=0.94, access_count=50, confidence=1.0, age_days=3650, core=True) is False
    # the paper's uncapped behaviour: a cap above the largest possible threshold
    raw = StabilityParams(max_threshold=2.0)
    assert update_allowed(pe=1.0, access_count=50, confidence=1.0, age_days=365, core=True, params=raw) is False


def test_vectorised_matches_scalar():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 15, 200)
    c = rng.uniform(0, 1, 200)
    d = rng.uniform(0, 400, 200)
    k = rng.uniform(0, 1, 200) < 0.2
    pe = rng.uniform(0.4, 1.0, 200)
    thr = update_threshold(access_count=a, confidence=c, age_days=d, core=k)
    ok = update_allowed(pe=pe, access_count=a, confidence=c, age_days=d, core=k)
    assert thr.shape == (200,) and ok.dtype == bool
    for i in range(0, 200, 17):
        lock = (
            0.3 * math.log2(1 + min(a[i], 10)) / math.log2(11)
            + 0.3 * c[i]
            + 0.2 * min(d[i] / 365, 1)
            + 0.2 * float(k[i])
        )
        t = min(0.5 + 0.3 * lock * (1 + 0.1 * math.log2(1 + d[i])), 0.95)
        assert thr[i] == pytest.approx(t)
        assert ok[i] == (pe[i] >= t)


def test_assess_uses_age_from_timestamps():
    now = 1_700_000_000.0
    r = assess(pe=0.6, access_count=0, confidence=0.5, created_at=now - 10 * 86400, now=now)
    lock = 0.15 + 0.2 * 10 / 365
    assert r.lock == pytest.approx(lock)
    assert r.threshold == pytest.approx(0.5 + 0.3 * lock * (1 + 0.1 * math.log2(11)))
    assert r.allowed is True and r.to_dict()["pe"] == 0.6


def test_params_are_validated():
    with pytest.raises(ConfigError):
        StabilityParams(max_threshold=2.5)
    with pytest.raises(ConfigError):
        StabilityParams(rigidity_growth=-0.1)


mem = st.tuples(
    st.integers(0, 100), st.floats(0, 1), st.floats(0, 5000), st.booleans()
)


@FAST
@given(mem, st.integers(0, 50), st.floats(0, 1), st.floats(0, 5000))
def test_threshold_bounded_and_monotone(m, da, dc, dd):
    a, c, d, core = m
    t = update_threshold(access_count=a, confidence=c, age_days=d, core=core)
    assert 0.5 <= t <= 0.95
    assert update_threshold(access_count=a + da, confidence=c, age_days=d, core=core) >= t - 1e-12
    assert update_threshold(access_count=a, confidence=min(1.0, c + dc), age_days=d, core=core) >= t - 1e-12
    assert update_threshold(access_count=a, confidence=c, age_days=d + dd, core=core) >= t - 1e-12
    assert update_threshold(access_count=a, confidence=c, age_days=d, core=True) >= t - 1e-12
    assert update_allowed(pe=1.0, access_count=a, confidence=c, age_days=d, core=core) is True
