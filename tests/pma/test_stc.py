"""STC rescue: planted donors by hand, time window, edges, and a brute-force property check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.stc import STCParams, find_rescues

T0 = 1_700_000_000.0
MIN = 60.0
FAST = settings(derandomize=True, max_examples=50, deadline=None)


def _scene():
    # 0 weak, similar to the strong 1, activated 10 min apart -> rescued by vector
    # 2 weak, similar to 1 but 50 min apart -> not rescued
    # 3 weak, dissimilar to 1 but linked by an edge, 20 min apart -> rescued by edge
    # 4 weak, similar to 1, in time, but archived -> not rescued
    emb = np.array([[1.0, 0.1, 0.0], [1.0, 0.0, 0.0], [1.0, 0.05, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.01]])
    strength = np.array([0.3, 0.9, 0.2, 0.35, 0.1])
    tag = np.array([T0, T0 + 10 * MIN, T0 - 40 * MIN, T0 + 30 * MIN, T0])
    return emb, strength, tag


def test_golden_rescues():
    emb, s, tag = _scene()
    res = find_rescues(strength=s, tag_time=tag, embeddings=emb, edges=[(3, 1)],
                       eligible=[True, True, True, True, False])
    got = {r.index: r for r in res.rescues}
    assert sorted(got) == [0, 3]
    r0 = got[0]
    assert r0.donor == 1 and r0.via == "vector" and r0.dt_s == 10 * MIN
    assert r0.relatedness == pytest.approx(1 / math.sqrt(1.01))
    assert r0.new_strength == pytest.approx(0.6) and r0.decay_multiplier == 0.5
    assert got[3].via == "edge" and got[3].relatedness == 1.0 and got[3].dt_s == -20 * MIN
    assert res.strength.tolist() == pytest.approx([0.6, 0.9, 0.2, 0.65, 0.1])
    assert res.decay_multiplier.tolist() == [0.5, 1.0, 1.0, 0.5, 1.0]


def test_needs_relation_and_fresh_tag():
    emb, s, tag = _scene()
    assert find_rescues(strength=s, tag_time=tag).rescues == ()  # no embeddings, no edges
    lr = np.array([T0 + 1, np.nan, np.nan, np.nan, np.nan])  # 0 was rescued after its tag
    res = find_rescues(strength=s, tag_time=tag, embeddings=emb, last_rescued=lr)
    assert 0 not in {r.index for r in res.rescues}
    # a separate donor score (e.g. stability) decides who can donate
    res = find_rescues(strength=s, tag_time=tag, embeddings=emb, donor_score=np.zeros(5))
    assert res.rescues == ()


def test_most_related_donor_is_named_and_boost_is_capped():
    emb = np.array([[1.0, 0.0], [0.8, 0.6], [1.0, 0.05]])
    res = find_rescues(strength=[0.39, 0.95, 0.8], tag_time=[T0, T0, T0], embeddings=emb,
                       params=STCParams(strength_boost=1.0))
    assert len(res.rescues) == 1
    assert res.rescues[0].donor == 2  # cosine 0.9988 beats 0.8
    assert res.strength[0] == 1.0


def test_validation():
    with pytest.raises(ValidationError):
        find_rescues(strength=[0.1, 0.9], tag_time=[T0])
    with pytest.raises(ValidationError):
        find_rescues(strength=[0.1, 0.9], tag_time=[T0, T0], edges=[(0, 5)])
    with pytest.raises(ValidationError):
        find_rescues(strength=[0.1, 0.9], tag_time=[T0, T0], embeddings=np.ones((3, 2)))
    with pytest.raises(ConfigError):
        STCParams(window_s=-1)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(2, 25))
def test_rescues_match_brute_force(seed, n):
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, 4))
    emb[: n // 2] = emb[0] + 0.2 * rng.normal(size=(n // 2, 4))  # a cluster of related memories
    s = rng.uniform(0, 1, n)
    tag = T0 + rng.uniform(-3600, 3600, n)
    edges = rng.integers(0, n, size=(n // 3, 2))
    res = find_rescues(strength=s, tag_time=tag, embeddings=emb, edges=edges)
    u = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    linked = {(int(a), int(b)) for a, b in edges} | {(int(b), int(a)) for a, b in edges}
    expected = set()
    for i in range(n):
        if s[i] >= 0.4:
            continue
        for j in range(n):
            if j != i and s[j] >= 0.7 and abs(tag[j] - tag[i]) <= 1800 and (
                float(u[i] @ u[j]) >= 0.75 or (i, j) in linked
            ):
                expected.add(i)
    assert {r.index for r in res.rescues} == expected
    assert np.all(res.strength >= s - 1e-12) and np.all(res.strength <= 1.0)
    changed = np.flatnonzero(res.strength != s)
    assert set(changed.tolist()) <= expected
