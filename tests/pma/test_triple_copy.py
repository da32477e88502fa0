"""TripleCopyMemory: closed forms by hand, bounds and monotone pieces, reinforcement, paper replica."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma import triple_copy
from zenbrain.pma.triple_copy import (
    CopyState,
    TripleCopyParams,
    consolidate,
    dominant_copy,
    encode,
    evaluate,
    evaluate_many,
    reinforce,
    strengths,
)

H, D = 3600.0, 86400.0
T0 = 1_700_000_000.0
PAPER = TripleCopyParams(deep_initial_share=1.0)
FAST = settings(derandomize=True, max_examples=80, deadline=None)


def test_golden_at_four_hours():
    s = strengths(s0=0.9, age_s=4 * H)
    assert s.fast == pytest.approx(0.9 * math.exp(-1))
    assert s.medium == pytest.approx(0.72 * math.exp(-(4 / 24) / 14))
    assert s.deep == 0.0
    assert s.composite == pytest.approx(0.711479, abs=1e-6)
    assert dominant_copy(s) == 1


def test_paper_curves_with_unconditional_deep_copy():
    s = strengths(s0=1.0, age_s=30 * D, params=PAPER)
    assert s.deep == pytest.approx(1 - math.exp(-30 / 7))
    assert s.composite == pytest.approx(0.98623, abs=1e-5)
    # the medium and deep curves cross near 5.3 days, where the composite is lowest (~0.55 S0)
    ages = np.linspace(0, 60, 6001) * D
    comp = strengths(s0=1.0, age_s=ages, params=PAPER).composite
    assert 0.5 < comp.min() < 0.6  # nothing is ever forgotten under the paper's law


def test_unrehearsed_memory_fades_below_archive_level_after_14_ln_8_days():
    t_cross = 14 * math.log(8) * D  # 0.8 * exp(-t / 14 d) = 0.1
    assert strengths(s0=1.0, age_s=t_cross - D).composite > 0.1
    assert strengths(s0=1.0, age_s=t_cross + D).composite < 0.1


def test_reinforce_golden():
    st0 = encode(s0=1.0, now=T0)
    assert st0 == CopyState(1.0, T0, 0.0, 0.0, T0)
    st1 = reinforce(st0, now=T0 + D)
    # composite at 1 day is the medium copy 0.8 e^(-1/14) < S0, so S0 stays 1; deep target 0 -> 0.5
    assert st1.s0 == 1.0 and st1.anchor == T0 + D
    assert st1.deep_target == pytest.approx(0.5) and st1.deep_base == 0.0
    later = evaluate(st1, now=T0 + 8 * D)
    assert later.deep == pytest.approx(0.5 * (1 - math.exp(-1)))
    # weaker encoding: S0 0.4 -> 0.4 + 0.5 * 0.6 = 0.7; target 0 -> 0.35
    st2 = reinforce(encode(s0=0.4, now=T0), now=T0 + H, quality=1.0)
    assert st2.s0 == pytest.approx(0.7) and st2.deep_target == pytest.approx(0.35)
    st3 = reinforce(encode(s0=0.4, now=T0), now=T0 + H, quality=0.5)
    assert st3.s0 == pytest.approx(0.4 + 0.25 * 0.6)


def test_consolidate_only_grows_deep_copy_continuously():
    st0 = encode(s0=0.8, now=T0)
    st1 = consolidate(st0, now=T0 + 2 * D)
    assert (st1.s0, st1.anchor) == (st0.s0, st0.anchor)
    assert st1.deep_target == pytest.approx(0.4)
    # continuity: no jump at the moment of consolidation
    assert evaluate(st1, now=T0 + 2 * D).deep == pytest.approx(evaluate(st0, now=T0 + 2 * D).deep)
    st2 = consolidate(st1, now=T0 + 3 * D)
    assert st2.deep_target == pytest.approx(0.6)
    assert st2.deep_base == pytest.approx(0.4 * (1 - math.exp(-1 / 7)))


def test_evaluate_many_matches_scalar_and_state_round_trips():
    rng = np.random.default_rng(3)
    states = []
    for i in range(50):
        s = encode(s0=rng.uniform(0.2, 1.0), now=T0 - rng.uniform(0, 60) * D)
        if i % 3 == 0:
            s = reinforce(s, now=T0 - rng.uniform(0, 5) * D)
        states.append(s)
    many = evaluate_many(states, now=T0)
    for i, s in enumerate(states):
        one = evaluate(s, now=T0)
        assert many.composite[i] == pytest.approx(one.composite)
        assert many.deep[i] == pytest.approx(one.deep)
        assert CopyState.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert evaluate_many([], now=T0).composite.shape == (0,)


def test_bad_inputs_and_params():
    with pytest.raises(ValidationError):
        encode(s0=float("nan"), now=T0)
    with pytest.raises(ValidationError):
        reinforce(encode(s0=1, now=T0), now=T0, quality=float("inf"))
    with pytest.raises(ConfigError):
        TripleCopyParams(tau_fast_s=0.0)
    with pytest.raises(ConfigError):
        TripleCopyParams(medium_share=1.5)


unit = st.floats(0.0, 1.0)
age = st.floats(0.0, 400 * D)


@FAST
@given(unit, age, age, unit, unit)
def test_bounded_and_monotone_pieces(s0, t, dt, base, target):
    a = strengths(s0=s0, age_s=t, deep_base=base, deep_target=target)
    b = strengths(s0=s0, age_s=t + dt, deep_base=base, deep_target=target)
    for s in (a, b):
        for v in (s.fast, s.medium, s.deep, s.composite):
            assert 0.0 <= v <= 1.0
        assert s.composite == max(s.fast, s.medium, s.deep)
    assert b.fast <= a.fast + 1e-12 and b.medium <= a.medium + 1e-12
    # the deep copy moves monotonically from its base towards its target
    if target >= base:
        assert a.deep - 1e-12 <= b.deep <= target + 1e-12
    else:
        assert target - 1e-12 <= b.deep <= a.deep + 1e-12
    assert strengths(s0=s0, age_s=t, params=PAPER).deep <= s0 + 1e-12


@FAST
@given(unit, st.floats(0, 100 * D), unit, st.floats(0, 100 * D))
def test_reinforcement_never_weakens(s0, t, q, later):
    s = encode(s0=s0, now=T0)
    before = evaluate(s, now=T0 + t)
    r = reinforce(s, now=T0 + t, quality=q)
    after = evaluate(r, now=T0 + t)
    assert r.s0 >= s.s0 - 1e-12 and r.deep_target >= s.deep_target - 1e-12
    assert after.composite >= before.composite - 1e-12
    assert evaluate(r, now=T0 + t + later).composite >= evaluate(s, now=T0 + t + later).composite - 1e-12


def test_reinforce_refuses_a_quality_that_is_not_a_number():
    state = triple_copy.encode(s0=0.5, now=T0)
    with pytest.raises(ValidationError):
        triple_copy.reinforce(state, now=T0 + 1.0, quality=float("nan"))


def test_reinforce_many_is_reinforce_of_each_state():
    rng = np.random.default_rng(5)
    states = [encode(s0=rng.uniform(0.0, 1.0), now=T0 - rng.uniform(0, 60) * D) for _ in range(20)]
    states = [reinforce(s, now=T0 - rng.uniform(0, 3) * D) if i % 2 else s for i, s in enumerate(states)]
    qualities = rng.uniform(-0.2, 1.2, len(states)).tolist()  # clamped to [0, 1] like reinforce's
    many = triple_copy.reinforce_many(states, now=T0, qualities=qualities)
    assert many == [reinforce(s, now=T0, quality=q) for s, q in zip(states, qualities)]
    assert triple_copy.reinforce_many([], now=T0, qualities=[]) == []
    with pytest.raises(ValidationError):
        triple_copy.reinforce_many(states[:2], now=T0, qualities=[1.0])
    with pytest.raises(ValidationError):
        triple_copy.reinforce_many(states[:2], now=T0, qualities=[1.0, float("nan")])
