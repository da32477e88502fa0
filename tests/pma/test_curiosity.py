"""Curiosity engine: Beta variance and least-squares slopes by hand, ranking by both."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.curiosity import (
    CuriosityParams,
    beta_uncertainty,
    learning_progress,
    progress_score,
    rank_gaps,
    review_queue,
)

T0 = 1_700_000_000.0
DAY = 86400.0
FAST = settings(derandomize=True, max_examples=60, deadline=None)


def test_beta_uncertainty_by_hand():
    assert beta_uncertainty(alpha=1, beta=1) == pytest.approx(1.0)
    # var(Beta(2, 8)) = 16 / (100 * 11); scaled by 12
    assert beta_uncertainty(alpha=2, beta=8) == pytest.approx(12 * 16 / 1100)
    assert beta_uncertainty(alpha=np.array([1, 50]), beta=np.array([1, 50])).tolist() == pytest.approx(
        [1.0, 12 * 2500 / (10000 * 101)]
    )
    with pytest.raises(ValidationError):
        beta_uncertainty(alpha=0, beta=1)


def test_slope_by_hand():
    days = np.array([0.0, 1.0, 2.0, 3.0])
    # centred t = -1.5 -0.5 0.5 1.5, centred y = -1 0 0 1: 3 / 5
    assert learning_progress(times=T0 + days * DAY, values=[0, 1, 1, 2], now=T0 + 3 * DAY) == pytest.approx(0.6)
    assert learning_progress(times=T0 + days[:3] * DAY, values=[0.2, 0.4, 0.6], now=T0 + 3 * DAY) == pytest.approx(0.2)
    assert learning_progress(times=[T0, T0 + DAY], values=[0, 1], now=T0 + DAY) == 0.0  # too few points
    assert learning_progress(times=[T0] * 3, values=[0, 1, 0], now=T0) == 0.0  # no time spread
    # points outside the 14-day window are ignored: the old 1.0 would make the slope negative
    t = [T0 - 30 * DAY, T0 - 2 * DAY, T0 - DAY, T0]
    assert learning_progress(times=t, values=[1.0, 0.1, 0.2, 0.3], now=T0) == pytest.approx(0.1)


def test_progress_score():
    assert progress_score(0.05) == 1.0
    assert progress_score(0.025) == pytest.approx(0.5)
    assert progress_score(-0.05) == pytest.approx(0.5)  # forgetting counts half
    assert progress_score(0.0) == 0.0


def test_priority_by_hand_and_ranking():
    days = np.arange(5.0)
    improving = (T0 - days[::-1] * DAY, 0.3 + 0.05 * days)
    flat = (T0 - days[::-1] * DAY, np.full(5, 0.5))
    gaps = rank_gaps(
        ids=["uncertain_improving", "uncertain_flat", "certain_improving", "no_history"],
        alpha=[1, 1, 40, 1], beta=[1, 1, 40, 1],
        queries=[10, 10, 0, 10], misses=[5, 5, 0, 5],
        histories=[improving, flat, improving, None], now=T0,
    )
    got = {g.id: g for g in gaps}
    # U = 0.6 * 1 + 0.4 * 0.5 = 0.8; slope 0.05/day -> p = 1 -> priority 0.8 * 2 / 2
    assert got["uncertain_improving"].uncertainty == pytest.approx(0.8)
    assert got["uncertain_improving"].slope_per_day == pytest.approx(0.05)
    assert got["uncertain_improving"].priority == pytest.approx(0.8)
    assert got["uncertain_flat"].priority == pytest.approx(0.4)
    var40 = 12 * 1600 / (6400 * 81)  # no queries: the variance alone
    assert got["certain_improving"].priority == pytest.approx(var40)
    assert [g.id for g in gaps] == ["uncertain_improving", "no_history", "uncertain_flat", "certain_improving"]
    assert "5/10 queries found little" in got["uncertain_flat"].reason
    q = review_queue(gaps[:1])
    assert q == [("uncertain_improving", pytest.approx(0.8), gaps[0].reason)]
    assert len(rank_gaps(ids=["a", "b"], alpha=1, beta=1, now=T0, limit=1)) == 1
    assert rank_gaps(ids=[], alpha=[], beta=[], now=T0) == ()


def test_validation():
    with pytest.raises(ValidationError):
        rank_gaps(ids=["a"], alpha=[1], beta=[1], queries=[1], misses=[2], now=T0)
    with pytest.raises(ValidationError):
        rank_gaps(ids=["a"], alpha=[1], beta=[1], histories=[], now=T0)
    with pytest.raises(ConfigError):
        CuriosityParams(min_points=1)
    with pytest.raises(ConfigError):
        CuriosityParams(w_variance=0, w_miss=0)


@FAST
@given(st.floats(0.5, 100), st.floats(0.5, 100), st.integers(0, 20), st.integers(0, 20),
       st.floats(-0.2, 0.2), st.integers(0, 5))
def test_priority_bounded_and_monotone(a, b, q, m, slope, extra_miss):
    m = min(m, q)
    days = np.arange(6.0)
    hist = (T0 - days[::-1] * DAY, 0.5 + slope * days)
    base = rank_gaps(ids=["x"], alpha=a, beta=b, queries=q, misses=m, histories=[hist], now=T0)[0]
    assert 0.0 <= base.priority <= base.uncertainty <= 1.0
    more_miss = rank_gaps(ids=["x"], alpha=a, beta=b, queries=q + extra_miss, misses=m + extra_miss,
                          histories=[hist], now=T0)[0]
    if q > 0:
        assert more_miss.priority >= base.priority - 1e-12
    steeper = (hist[0], 0.5 + (abs(slope) + 0.01) * days)
    up = rank_gaps(ids=["x"], alpha=a, beta=b, queries=q, misses=m, histories=[steeper], now=T0)[0]
    assert up.priority >= base.priority - 1e-12
