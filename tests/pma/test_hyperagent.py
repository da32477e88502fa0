"""Metacognitive HyperAgent: planted problems move the right knob one bounded, logged step."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError
from zenbrain.pma.hyperagent import (
    TUNABLES,
    HyperAgentParams,
    HyperAgentState,
    Tunable,
    initial_state,
    step,
)
from zenbrain.pma.metacognition import (
    KindEfficiency,
    MetacognitiveSignals,
    MonitorState,
    log_evidence,
    log_retrieval,
    signals,
)

T0 = 1_700_000_000.0
DAY = 86400.0
FAST = settings(derandomize=True, max_examples=60, deadline=None)


def _sig(**kw):
    base = dict(at=T0, confirmation_bias=None, confirm_accept_rate=None, contradict_accept_rate=None,
                recency_bias=None, hit_rate=None, usage_rate=None, efficiency_by_kind={}, brier=None, ece=None,
                overconfidence=None, n_retrievals=0, n_evidence=0, n_calibrated=0, novelty_boost=0.0)
    base.update(kw)
    return MetacognitiveSignals(**base)


def _keyword_misses():
    s = MonitorState()
    for i in range(20):
        s = log_retrieval(s, at=T0 + i, returned=5, used=0 if i % 4 else 1, query_kind="keyword")
        s = log_retrieval(s, at=T0 + i, returned=5, used=2, query_kind="semantic")
    return signals(s, now=T0 + 100)


def test_keyword_misses_raise_lexical_weight_with_cooldown_and_bounds():
    sig = _keyword_misses()
    st0 = initial_state()
    st1, ch = step(st0, signals=sig, now=T0)
    assert len(ch) == 1
    c = ch[0]
    assert (c.name, c.old, c.at) == ("lexical_weight", 0.3, T0)
    assert c.new == pytest.approx(0.35)
    assert "keyword" in c.reason and "25%" in c.reason
    assert st1.values["lexical_weight"] == pytest.approx(0.35)
    st2, ch = step(st1, signals=sig, now=T0 + DAY / 2)
    assert ch == ()  # cooldown
    st3, ch = step(st2, signals=sig, now=T0 + DAY)
    assert st3.values["lexical_weight"] == pytest.approx(0.40)
    s = st3
    for k in range(2, 20):
        s, _ = step(s, signals=sig, now=T0 + k * DAY)
    assert s.values["lexical_weight"] == 0.8  # upper bound, never beyond
    assert len(s.log) == 10  # 0.3 -> 0.8 in ten steps, nothing logged once at the bound


def test_semantic_misses_lower_lexical_weight():
    sig = _sig(efficiency_by_kind={"keyword": KindEfficiency(20, 0.9, 0.5), "semantic": KindEfficiency(20, 0.2, 0.1)},
               n_retrievals=40)
    _, ch = step(initial_state(), signals=sig, now=T0)
    assert [(c.name, round(c.new, 6)) for c in ch] == [("lexical_weight", 0.25)]


def test_calibration_moves_review_intervals_by_direction():
    over = _sig(ece=0.3, overconfidence=0.3, n_calibrated=20, n_retrievals=20)
    _, ch = step(initial_state(), signals=over, now=T0)
    assert ch[0].name == "review_interval_factor" and ch[0].new == pytest.approx(0.9)
    under = _sig(ece=0.3, overconfidence=-0.3, n_calibrated=20, n_retrievals=20)
    _, ch = step(initial_state(), signals=under, now=T0)
    assert ch[0].new == pytest.approx(1 / 0.9)
    few = _sig(ece=0.3, overconfidence=0.3, n_calibrated=5, n_retrievals=5)
    assert step(initial_state(), signals=few, now=T0)[1] == ()


def test_recency_and_confirmation_bias():
    sig = _sig(recency_bias=0.4, n_retrievals=30, confirmation_bias=0.5, n_evidence=40)
    _st1, ch = step(initial_state(), signals=sig, now=T0)
    got = {c.name: c.new for c in ch}
    assert got["retrievability_floor"] == pytest.approx(0.95)
    assert got["contradiction_weight"] == pytest.approx(1.1)
    sig = _sig(recency_bias=-0.4, n_retrievals=30, confirmation_bias=-0.5, n_evidence=40)
    _, ch = step(initial_state(values={"retrievability_floor": 0.7}), signals=sig, now=T0)
    got = {c.name: c.new for c in ch}
    assert got["retrievability_floor"] == pytest.approx(0.65)
    assert got["contradiction_weight"] == pytest.approx(0.9)


def test_confirmation_bias_from_monitor_log():
    s = MonitorState()
    for i in range(20):
        s = log_evidence(s, at=T0 + i, confirming=True, accepted=i < 18)
        s = log_evidence(s, at=T0 + i, confirming=False, accepted=i < 6)
    _, ch = step(initial_state(), signals=signals(s, now=T0 + 50), now=T0 + 50)
    assert [c.name for c in ch] == ["contradiction_weight"]


def test_healthy_signals_change_nothing():
    sig = _sig(efficiency_by_kind={"keyword": KindEfficiency(50, 0.9, 0.4)}, ece=0.05, overconfidence=0.01,
               n_calibrated=50, recency_bias=0.05, confirmation_bias=0.02, n_retrievals=50, n_evidence=50)
    st1, ch = step(initial_state(), signals=sig, now=T0)
    assert ch == () and st1.values == initial_state().values


def test_state_validation_and_round_trip():
    with pytest.raises(ConfigError):
        initial_state(values={"lexical_weight": 0.95})
    with pytest.raises(ConfigError):
        initial_state(values={"top_k": 5})
    with pytest.raises(ConfigError):
        Tunable("x", 5.0, 0.0, 1.0, 0.1, False)
    with pytest.raises(ConfigError):
        Tunable("x", 0.5, 0.0, 1.0, 0.9, True)
    with pytest.raises(ConfigError):
        HyperAgentParams(min_samples=2.5)
    st0 = initial_state(values={"lexical_weight": 0.5})
    st1, _ = step(st0, signals=_keyword_misses(), now=T0)
    assert HyperAgentState.from_dict(json.loads(json.dumps(st1.to_dict()))) == st1


opt_unit = st.one_of(st.none(), st.floats(-1, 1))


@FAST
@given(st.lists(st.tuples(opt_unit, opt_unit, opt_unit, st.floats(0, 1), st.floats(0, 1)), max_size=30))
def test_values_stay_within_bounds_and_move_one_step(seq):
    s = initial_state()
    for i, (rb, cb, over, kw_hit, ece) in enumerate(seq):
        sig = _sig(recency_bias=rb, confirmation_bias=cb, overconfidence=over, ece=ece, n_calibrated=20,
                   n_retrievals=30, n_evidence=40,
                   efficiency_by_kind={"keyword": KindEfficiency(20, kw_hit, None),
                                       "semantic": KindEfficiency(20, 1 - kw_hit, None)})
        s, changes = step(s, signals=sig, now=T0 + i * DAY)
        for c in changes:
            t = TUNABLES[c.name]
            assert t.lo <= c.new <= t.hi and c.new != c.old
            if t.multiplicative:
                assert c.new / c.old == pytest.approx(t.step) or c.new / c.old == pytest.approx(1 / t.step) \
                    or c.new in (t.lo, t.hi)
            else:
                assert abs(c.new - c.old) <= t.step + 1e-12
    for name, v in s.values.items():
        assert TUNABLES[name].lo <= v <= TUNABLES[name].hi
