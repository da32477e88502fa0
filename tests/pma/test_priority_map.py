"""PriorityMap: weighted sum by hand, fast path, neuromodulated weights, derived inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.priority_map import (
    PriorityParams,
    goal_alignment,
    modulated_weights,
    novelty_saliency,
    priority,
    reward_relevance,
)

FAST = settings(derandomize=True, max_examples=80, deadline=None)


def test_weighted_sum_by_hand():
    assert priority(saliency=0.4, valence=-0.3, reward=0.7, goal=0.5) == pytest.approx(
        0.2 * 0.4 + 0.25 * 0.3 + 0.25 * 0.7 + 0.3 * 0.5
    )
    assert priority(saliency=1, valence=1, reward=1, goal=1) == pytest.approx(1.0)


def test_amygdala_fast_path():
    assert priority(saliency=0, valence=0.7, reward=0, goal=0) == 0.5  # 0.175 raised to 0.5
    assert priority(saliency=0, valence=-0.61, reward=0, goal=0) == 0.5
    assert priority(saliency=0, valence=0.6, reward=0, goal=0) == pytest.approx(0.15)  # strictly above 0.6
    assert priority(saliency=1, valence=0.9, reward=1, goal=1) == pytest.approx(0.2 + 0.225 + 0.25 + 0.3)


def test_neuromodulated_weights_by_hand():
    assert modulated_weights() == pytest.approx((0.2, 0.25, 0.25, 0.3))
    # DA = 1: w_s x 1.15 -> 0.23, total 1.03
    w = modulated_weights(levels={"DA": 1.0, "NE": 0.5, "5HT": 0.5, "ACh": 0.5})
    assert w == pytest.approx((0.23 / 1.03, 0.25 / 1.03, 0.25 / 1.03, 0.3 / 1.03))
    # ACh = 0, 5HT = 1: w_s x 0.9, w_r x 0.9, w_g x 1.15
    raw = (0.2 * 0.9, 0.25, 0.25 * 0.9, 0.3 * 1.15)
    w = modulated_weights(levels={"ACh": 0.0, "5HT": 1.0})
    assert w == pytest.approx(tuple(x / sum(raw) for x in raw))
    with pytest.raises(ValidationError):
        modulated_weights(levels={"DA": float("nan")})


def test_vectorised():
    s = np.array([0.1, 0.9, 0.5])
    v = np.array([0.0, -0.8, 0.2])
    out = priority(saliency=s, valence=v, reward=0.5, goal=np.array([1.0, 0.0, 0.5]))
    assert out.shape == (3,)
    assert out[0] == pytest.approx(0.02 + 0.125 + 0.3)
    assert out[1] == pytest.approx(max(0.5, 0.18 + 0.2 + 0.125))


def test_novelty_saliency():
    existing = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert novelty_saliency(embeddings=[1.0, 0.0], existing=existing) == pytest.approx(0.0)
    diag = [1.0, 1.0]
    assert novelty_saliency(embeddings=diag, existing=existing) == pytest.approx(1 - 1 / math.sqrt(2))
    assert novelty_saliency(embeddings=[-1.0, 0.0], existing=existing[:1]) == 1.0  # clipped
    assert novelty_saliency(embeddings=np.ones((3, 2)), existing=np.empty((0, 2))).tolist() == [1.0, 1.0, 1.0]


def test_reward_and_goal():
    assert reward_relevance(positive=0, negative=0) == 0.5
    assert reward_relevance(positive=3, negative=1) == pytest.approx(4 / 6)
    assert reward_relevance(positive=np.array([0, 8]), negative=np.array([4, 0])).tolist() == pytest.approx(
        [1 / 6, 9 / 10]
    )
    assert goal_alignment(embeddings=[1.0, 0.0], goal=None) == 0.5
    assert goal_alignment(embeddings=[3.0, 4.0], goal=[1.0, 0.0]) == pytest.approx(0.6)
    assert goal_alignment(embeddings=[-1.0, 0.0], goal=[1.0, 0.0]) == 0.0


def test_goal_relevant_items_outrank_irrelevant_ones():
    # ground truth from geometry, not from the scorer: 10 items near the goal, 10 orthogonal to it
    rng = np.random.default_rng(11)
    goal = np.zeros(16)
    goal[0] = 1.0
    near = np.hstack([np.ones((10, 1)), 0.3 * rng.normal(size=(10, 15))])
    far = np.hstack([np.zeros((10, 1)), rng.normal(size=(10, 15))])
    emb = np.vstack([near, far])
    g = goal_alignment(embeddings=emb, goal=goal)
    p = priority(saliency=0.5, valence=0.0, reward=0.5, goal=g)
    top10 = set(np.argsort(-p)[:10].tolist())
    assert top10 == set(range(10))


def test_params_are_validated():
    with pytest.raises(ConfigError):
        PriorityParams(w_goal=1.5)
    with pytest.raises(ConfigError):
        PriorityParams(w_saliency=0, w_emotion=0, w_reward=0, w_goal=0)


unit = st.floats(0, 1)
lv = st.fixed_dictionaries({"DA": unit, "NE": unit, "5HT": unit, "ACh": unit})


@FAST
@given(unit, st.floats(-1, 1), unit, unit, lv, unit)
def test_bounded_monotone_and_floor(s, v, r, g, levels, bump):
    w = modulated_weights(levels=levels)
    assert sum(w) == pytest.approx(1.0) and min(w) >= 0
    p = priority(saliency=s, valence=v, reward=r, goal=g, levels=levels)
    assert 0.0 <= p <= 1.0
    if abs(v) > 0.6:
        assert p >= 0.5
    up = lambda x: min(1.0, x + bump)
    assert priority(saliency=up(s), valence=v, reward=r, goal=g, levels=levels) >= p - 1e-12
    assert priority(saliency=s, valence=v, reward=up(r), goal=g, levels=levels) >= p - 1e-12
    assert priority(saliency=s, valence=v, reward=r, goal=up(g), levels=levels) >= p - 1e-12
    assert priority(saliency=s, valence=math.copysign(up(abs(v)), v), reward=r, goal=g, levels=levels) >= p - 1e-12
