"""MetacognitiveMonitor: biases, efficiency, calibration and novelty windows from a logged history."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.metacognition import (
    MetacognitionParams,
    MonitorState,
    calibration,
    log_evidence,
    log_feedback,
    log_prediction_error,
    log_retrieval,
    novelty_boost,
    prune,
    signals,
)

T0 = 1_700_000_000.0
DAY = 86400.0
FAST = settings(derandomize=True, max_examples=60, deadline=None)


def _evidence(state, conf_acc, conf_n, contra_acc, contra_n, t=T0):
    for i in range(conf_n):
        state = log_evidence(state, at=t + i, confirming=True, accepted=i < conf_acc)
    for i in range(contra_n):
        state = log_evidence(state, at=t + i, confirming=False, accepted=i < contra_acc)
    return state


def test_confirmation_bias_by_counts():
    s = _evidence(MonitorState(), 16, 20, 6, 20)
    sig = signals(s, now=T0 + 100)
    assert sig.confirm_accept_rate == 0.8 and sig.contradict_accept_rate == 0.3
    assert sig.confirmation_bias == pytest.approx(0.5)
    assert "confirmation_bias" in sig.alert_kinds()
    fair = signals(_evidence(MonitorState(), 11, 20, 11, 20), now=T0 + 100)
    assert fair.confirmation_bias == 0.0 and not fair.alerts
    few = signals(_evidence(MonitorState(), 4, 5, 1, 5), now=T0 + 100)
    assert few.confirmation_bias == pytest.approx(0.6) and not few.alerts  # below min_samples


def test_confirmation_bias_detection_against_planted_scenarios():
    # ground truth is the scenario's planted behaviour, not the detector's rule
    rng = np.random.default_rng(5)
    tp = fp = fn = 0
    for k in range(40):
        biased = k % 2 == 0
        p_conf, p_contra = (0.8, 0.3) if biased else (0.55, 0.55)
        s = MonitorState()
        for i in range(100):
            s = log_evidence(s, at=T0 + i, confirming=True, accepted=bool(rng.random() < p_conf))
            s = log_evidence(s, at=T0 + i, confirming=False, accepted=bool(rng.random() < p_contra))
        flagged = "confirmation_bias" in signals(s, now=T0 + 200).alert_kinds()
        tp += biased and flagged
        fp += (not biased) and flagged
        fn += biased and not flagged
    assert tp / (tp + fp) >= 0.9 and tp / (tp + fn) >= 0.9


def test_recency_bias_and_efficiency():
    s = MonitorState()
    for i in range(10):
        kind = "keyword" if i < 6 else "semantic"
        s = log_retrieval(s, at=T0 + i, returned=5, used=1 if i < 3 else 0, query_kind=kind,
                          recent_share=0.8, recent_base=0.3)
    sig = signals(s, now=T0 + 60)
    assert sig.recency_bias == pytest.approx(0.5)
    assert sig.hit_rate == pytest.approx(0.3) and sig.usage_rate == pytest.approx(3 / 50)
    assert sig.efficiency_by_kind["keyword"].hit_rate == pytest.approx(0.5)
    assert sig.efficiency_by_kind["semantic"].hit_rate == 0.0
    assert sig.efficiency_by_kind["semantic"].n == 4
    assert {"recency_bias", "retrieval_efficiency"} <= sig.alert_kinds()


def test_feedback_rates_the_latest_recall_that_returned_the_memory():
    """A recall logged with used=None is not counted until feedback on one of its results
    arrives within the feedback window; the feedback goes to the latest recall before it
    that returned the memory; a recall that returned nothing is a miss at once."""
    s = MonitorState()
    s = log_retrieval(s, at=T0, returned=2, used=None, ids=["a", "b"])
    s = log_retrieval(s, at=T0 + 10, returned=2, used=None, ids=["a", "c"], query_kind="keyword")
    s = log_retrieval(s, at=T0 + 20, returned=0, used=0)
    sig = signals(s, now=T0 + 30)
    assert sig.n_retrievals == 3 and sig.n_rated == 1 and sig.hit_rate == 0.0  # only the empty recall is known
    s = log_feedback(s, at=T0 + 40, memory_id="a", used=True)  # credited to the recall at T0 + 10
    s = log_feedback(s, at=T0 + 41, memory_id="b", used=False)  # rates the first recall: a miss
    sig = signals(s, now=T0 + 50)
    assert sig.n_rated == 3 and sig.hit_rate == pytest.approx(1 / 3)
    assert sig.efficiency_by_kind["keyword"].hit_rate == 1.0
    assert sig.usage_rate == pytest.approx(1 / 4)
    late = log_feedback(s, at=T0 + 2 * DAY, memory_id="c", used=True)  # beyond the window: rates nothing
    assert signals(late, now=T0 + 2 * DAY).hit_rate == pytest.approx(1 / 3)


def test_feedback_confidence_and_correctness_are_calibrated():
    s = MonitorState()
    for i in range(12):
        s = log_feedback(s, at=T0 + i, memory_id=f"m{i}", used=False, correct=False, confidence=0.95)
    s = log_feedback(s, at=T0 + 20, memory_id="x", used=True)  # no confidence: not a calibration pair
    sig = signals(s, now=T0 + 30)
    assert sig.n_calibrated == 12 and sig.ece == pytest.approx(0.95) and sig.overconfidence == pytest.approx(0.95)
    assert "calibration" in sig.alert_kinds()


def test_calibration_by_hand():
    c = [0.9, 0.9, 0.9, 0.9, 0.2, 0.2]
    y = [1, 1, 0, 0, 0, 1]
    brier, ece = calibration(c, y)
    assert brier == pytest.approx((0.01 + 0.01 + 0.81 + 0.81 + 0.04 + 0.64) / 6)
    assert ece == pytest.approx(4 / 6 * 0.4 + 2 / 6 * 0.3)
    s = MonitorState()
    for i in range(12):
        s = log_retrieval(s, at=T0 + i, returned=3, used=1, confidence=0.9, correct=i % 2 == 0)
    sig = signals(s, now=T0 + 20)
    assert sig.ece == pytest.approx(0.4) and sig.overconfidence == pytest.approx(0.4)
    assert "calibration" in sig.alert_kinds()
    assert "overconfident" in next(a for a in sig.alerts if a.kind == "calibration").message


def test_novelty_window_linear_decay():
    s = log_prediction_error(MonitorState(), at=T0, pe=0.8)
    assert log_prediction_error(MonitorState(), at=T0, pe=0.7).surprises == ()  # strictly above 0.7
    assert novelty_boost(s, now=T0) == pytest.approx(0.2)
    assert novelty_boost(s, now=T0 + 150) == pytest.approx(0.15)
    assert novelty_boost(s, now=T0 + 300) == pytest.approx(0.1)
    assert novelty_boost(s, now=T0 + 600) == 0.0
    assert novelty_boost(s, now=T0 + 601) == 0.0
    assert novelty_boost(s, now=T0 - 1) == 0.0
    assert signals(s, now=T0 + 300).novelty_boost == pytest.approx(0.1)


def test_window_prune_and_round_trip():
    s = MonitorState()
    s = log_retrieval(s, at=T0 - 40 * DAY, returned=2, used=0)
    s = log_retrieval(s, at=T0, returned=2, used=2, confidence=0.7, correct=True, recent_share=0.5, recent_base=0.5,
                      ids=["a", "b"])
    s = log_feedback(s, at=T0, memory_id="a", used=True, correct=True, confidence=0.5)
    s = log_evidence(s, at=T0 - 31 * DAY, confirming=True, accepted=True)
    s = log_prediction_error(s, at=T0, pe=0.95)
    assert signals(s, now=T0).n_retrievals == 1
    assert signals(s, now=T0).n_evidence == 0
    p = prune(s, now=T0 + 1)
    assert len(p.retrievals) == 1 and p.evidence == () and len(p.surprises) == 1
    assert MonitorState.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    small = MetacognitionParams(max_events=10)
    for i in range(15):
        s = log_retrieval(s, at=T0 + i, returned=1, used=1, params=small)
    assert len(s.retrievals) == 10


def test_validation():
    with pytest.raises(ValidationError):
        log_retrieval(MonitorState(), at=T0, returned=1, used=2)
    with pytest.raises(ValidationError):
        log_retrieval(MonitorState(), at=T0, returned=1, used=1, confidence=1.5)
    with pytest.raises(ValidationError):
        log_prediction_error(MonitorState(), at=T0, pe=float("nan"))
    with pytest.raises(ConfigError):
        MetacognitionParams(bias_threshold=2.0)
    with pytest.raises(ConfigError):
        MetacognitionParams(calibration_bins=2.5)


outcome = st.tuples(st.integers(0, 10), st.integers(0, 10), st.floats(0, 1), st.booleans())


@FAST
@given(st.lists(outcome, min_size=1, max_size=40), st.lists(st.floats(0, 1), max_size=10), st.floats(0, 700))
def test_signal_ranges(outcomes, pes, probe):
    s = MonitorState()
    for i, (ret, used, conf, ok) in enumerate(outcomes):
        s = log_retrieval(s, at=T0 + i, returned=max(ret, used), used=used, confidence=conf, correct=ok)
    for i, pe in enumerate(pes):
        s = log_prediction_error(s, at=T0 + i, pe=pe)
    sig = signals(s, now=T0 + len(outcomes) + probe)
    assert 0.0 <= sig.hit_rate <= 1.0
    assert sig.usage_rate is None or 0.0 <= sig.usage_rate <= 1.0
    assert 0.0 <= sig.brier <= 1.0 and 0.0 <= sig.ece <= 1.0
    cs = np.array([o[2] for o in outcomes])
    ys = np.array([o[3] for o in outcomes], dtype=float)
    assert sig.ece <= np.mean(np.abs(cs - ys)) + 1e-12  # binning can only hide error
    assert 0.0 <= sig.novelty_boost <= 0.2
