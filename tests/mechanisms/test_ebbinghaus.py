import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import ebbinghaus as eb
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams

FAST = settings(derandomize=True, max_examples=50, deadline=None, database=None)
unit = st.floats(0.0, 1.0)
days = st.floats(0.0, 3650.0)
stab = st.floats(0.1, 365.0)


# ---- golden values (computed by hand) -------------------------------------------------

def test_retrievability_plain_curve():
    # S = 1 day, one day later: e^-1
    assert eb.retrievability(elapsed_days=1.0, stability=1.0) == pytest.approx(0.36787944117144233)
    # S = 10, t = 5: e^-0.5
    assert eb.retrievability(elapsed_days=5.0, stability=10.0) == pytest.approx(0.6065306597126334)
    assert eb.retrievability(elapsed_days=0.0, stability=3.0) == 1.0


def test_emotional_multiplier_golden():
    # arousal 0.5 -> 1 + 2 * 0.5 = 2; |valence| 0.9 dominates arousal 0.2 -> 2.8
    assert eb.emotional_multiplier(arousal=0.5) == pytest.approx(2.0)
    assert eb.emotional_multiplier(arousal=0.2, valence=-0.9) == pytest.approx(2.8)
    assert eb.emotional_multiplier(arousal=1.0, valence=1.0) == pytest.approx(3.0)
    assert eb.emotional_multiplier() == 1.0


def test_emotion_stretches_the_curve():
    # S = 2, arousal 0.5 -> m = 2 -> effective 4 days; t = 4 -> e^-1
    assert eb.retrievability(elapsed_days=4.0, stability=2.0, arousal=0.5) == pytest.approx(math.exp(-1.0))


def test_stability_is_clamped():
    # S = 0.01 clamps to 0.1; t = 0.1 -> e^-1.  S = 1000 clamps to 365; t = 365 -> e^-1
    assert eb.retrievability(elapsed_days=0.1, stability=0.01) == pytest.approx(math.exp(-1.0))
    assert eb.retrievability(elapsed_days=365.0, stability=1000.0) == pytest.approx(math.exp(-1.0))


def test_core_never_decays():
    assert eb.retrievability(elapsed_days=10_000.0, stability=0.1, core=True) == 1.0
    r = eb.retrievability(elapsed_days=np.array([1.0, 1.0]), stability=1.0, core=np.array([True, False]))
    assert r[0] == 1.0 and r[1] == pytest.approx(math.exp(-1.0))


def test_elapsed_days():
    assert eb.elapsed_days(now=86400.0 * 3, last_access=0.0) == pytest.approx(3.0)
    assert eb.elapsed_days(now=0.0, last_access=100.0) == 0.0  # clock skew never gives negative age


def test_status_bands():
    r = np.array([0.95, 0.3, 0.25, 0.1, 0.05, 0.05, 0.2, 0.5, 0.01])
    archived = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0], dtype=bool)
    core = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1], dtype=bool)
    got = eb.status(retrievability=r, archived=archived, core=core)
    want = [eb.KEEP, eb.REVIEW, eb.REVIEW, eb.ARCHIVE, eb.ARCHIVE, eb.ARCHIVED, eb.ARCHIVED, eb.RESTORE, eb.KEEP]
    assert got.tolist() == want
    assert eb.status(retrievability=0.5) == eb.KEEP
    assert eb.status(retrievability=1.0, archived=True, core=True) == eb.RESTORE


def test_archive_then_restore_cycle():
    # A memory fades past the archive threshold, is archived, then re-accessed (clock reset): restored.
    s = 1.0
    r_late = eb.retrievability(elapsed_days=3.0, stability=s)  # e^-3 = 0.0498
    assert eb.status(retrievability=r_late) == eb.ARCHIVE
    assert eb.status(retrievability=r_late, archived=True) == eb.ARCHIVED
    r_fresh = eb.retrievability(elapsed_days=0.0, stability=s)
    assert eb.status(retrievability=r_fresh, archived=True) == eb.RESTORE


def test_review_stability_golden():
    assert eb.review_stability(stability=2.0) == pytest.approx(2.6)
    assert eb.review_stability(stability=2.0, success=False) == pytest.approx(1.0)
    assert eb.review_stability(stability=300.0) == pytest.approx(365.0)  # capped
    got = eb.review_stability(stability=np.array([1.0, 1.0]), success=np.array([True, False]))
    np.testing.assert_allclose(got, [1.3, 0.5])


def test_days_until_golden():
    # R = 0.3 reached after -ln(0.3) * S = 1.2039728 * 2 days
    assert eb.days_until(threshold=0.3, stability=2.0) == pytest.approx(2.4079456086518722)
    assert eb.days_until(threshold=1.0, stability=2.0) == 0.0
    assert eb.days_until(threshold=0.0, stability=2.0) == math.inf
    with pytest.raises(ValidationError):
        eb.days_until(threshold=1.5, stability=1.0)


def test_scalar_in_scalar_out_array_in_array_out():
    assert isinstance(eb.retrievability(elapsed_days=1.0, stability=1.0), float)
    assert isinstance(eb.status(retrievability=0.5), int)
    out = eb.retrievability(elapsed_days=np.zeros(3), stability=1.0)
    assert isinstance(out, np.ndarray) and out.shape == (3,)


def test_vectorised_aging_500_memories_60_days_is_fast():
    rng = np.random.default_rng(7)
    stability = rng.uniform(0.5, 30.0, 500)
    arousal = rng.uniform(0.0, 1.0, 500)
    valence = rng.uniform(-1.0, 1.0, 500)
    start = time.perf_counter()
    curves = [eb.retrievability(elapsed_days=float(d), stability=stability, arousal=arousal, valence=valence)
              for d in range(1, 61)]
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5
    curves = np.stack(curves)
    assert curves.shape == (60, 500)
    assert np.all(np.diff(curves, axis=0) <= 0)  # every memory fades day by day


# ---- properties -----------------------------------------------------------------------

@FAST
@given(t1=days, t2=days, s=stab, a=unit, v=st.floats(-1.0, 1.0))
def test_retrievability_monotone_in_time_and_bounded(t1, t2, s, a, v):
    lo, hi = sorted((t1, t2))
    r_lo = eb.retrievability(elapsed_days=lo, stability=s, arousal=a, valence=v)
    r_hi = eb.retrievability(elapsed_days=hi, stability=s, arousal=a, valence=v)
    assert 0.0 <= r_hi <= r_lo <= 1.0


@FAST
@given(t=days, s=stab, a1=unit, a2=unit)
def test_more_arousal_never_forgets_faster(t, s, a1, a2):
    lo, hi = sorted((a1, a2))
    assert eb.retrievability(elapsed_days=t, stability=s, arousal=hi) >= eb.retrievability(
        elapsed_days=t, stability=s, arousal=lo
    )


@FAST
@given(a=st.floats(-5.0, 5.0), v=st.floats(-5.0, 5.0), g=st.floats(-5.0, 5.0))
def test_emotional_multiplier_within_cap(a, v, g):
    m = eb.emotional_multiplier(arousal=a, valence=v, significance=g)
    assert 1.0 <= m <= 3.0


@FAST
@given(s=st.floats(0.001, 1e5), ok=st.booleans())
def test_review_stability_stays_in_bounds(s, ok):
    new = eb.review_stability(stability=s, success=ok)
    assert 0.1 <= new <= 365.0
    if 0.1 <= s <= 365.0:
        assert (new >= s) if ok else (new <= s)


@FAST
@given(r=unit, arch=st.booleans(), core=st.booleans())
def test_status_is_consistent(r, arch, core):
    code = eb.status(retrievability=r, archived=arch, core=core)
    if core:
        assert code in (eb.KEEP, eb.RESTORE)
    elif arch:
        assert code == (eb.RESTORE if r > 0.3 else eb.ARCHIVED)
    else:
        assert code == (eb.ARCHIVE if r <= 0.1 else eb.REVIEW if r <= 0.3 else eb.KEEP)


# ---- params ---------------------------------------------------------------------------

def test_params_defaults_match_the_paper_table_and_code():
    p = EbbinghausParams()
    assert (p.default_stability, p.emotional_cap, p.growth_factor) == (1.0, 3.0, 1.3)
    assert (p.review_threshold, p.archive_threshold, p.min_stability, p.max_stability) == (0.3, 0.1, 0.1, 365.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"archive_threshold": 1.5},
        {"emotional_cap": 0.5},
        {"growth_factor": 0.9},
        {"archive_threshold": 0.4, "review_threshold": 0.3},
        {"min_stability": 10.0, "max_stability": 5.0, "default_stability": 7.0},
        {"default_stability": 1000.0},
        {"growth_factor": float("nan")},
        {"lapse_factor": "0.5"},
    ],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        EbbinghausParams(**kwargs)


def test_custom_params_take_effect():
    p = EbbinghausParams(emotional_cap=2.0, growth_factor=2.0)
    assert eb.emotional_multiplier(arousal=1.0, params=p) == 2.0
    assert eb.review_stability(stability=3.0, params=p) == 6.0


def test_value_aware_status_archives_low_value_at_review_and_never_the_rest():
    r = np.array([0.05, 0.05, 0.25, 0.25, 0.5, 0.05, 0.05])
    low = np.array([True, False, True, False, True, True, False])
    archived = np.array([False, False, False, False, False, True, True])
    codes = eb.status(retrievability=r, archived=archived, low_value=low).tolist()
    assert codes == [eb.ARCHIVE, eb.REVIEW, eb.ARCHIVE, eb.REVIEW, eb.KEEP, eb.ARCHIVED, eb.RESTORE]
    # without value flags: the paper's rule
    assert eb.status(retrievability=r, archived=archived).tolist() == [
        eb.ARCHIVE, eb.ARCHIVE, eb.REVIEW, eb.REVIEW, eb.KEEP, eb.ARCHIVED, eb.ARCHIVED]
