"""ReconsolidationEngine: PE by hand, gates, real content edits, rollback, monotone modes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.reconsolidation import (
    ReconsolidationParams,
    ReconsolidationPlan,
    detect_contradiction,
    effective_pe,
    integrate,
    jaccard_distance,
    mode_for,
    open_window,
    plan_update,
    prediction_error,
    rollback,
    selective_edit,
    token_set,
)

NOW = 1_700_000_000.0
OPEN = NOW + 300.0  # a window that is still open
FAST = settings(derandomize=True, max_examples=80, deadline=None)
ORDER = {"confirmed": 0, "selective_edit": 1, "integration": 2, "new_episode": 3}


def test_jaccard_by_hand():
    # {the, cat, sat} vs {the, cat, ran}: 2 shared of 4
    assert jaccard_distance("The cat sat.", "the cat ran") == pytest.approx(0.5)
    assert jaccard_distance("", "") == 0.0
    assert jaccard_distance("a b", "c d") == 1.0
    assert token_set("Hello, World! hello") == {"hello", "world"}


def test_effective_pe_by_hand():
    assert effective_pe(0.5, ne=0.8, serotonin=0.3) == pytest.approx(0.5 * (1 + 0.24 - 0.06))
    assert effective_pe(0.9, ne=1.0, serotonin=0.0) == 1.0  # clamped
    with pytest.raises(ValidationError):
        effective_pe(float("nan"))


def test_mode_thresholds_and_resistance():
    assert mode_for(0.09) == "confirmed"
    assert mode_for(0.10) == "selective_edit"
    assert mode_for(0.29) == "selective_edit"
    assert mode_for(0.30) == "integration"
    assert mode_for(0.69) == "integration"
    assert mode_for(0.70) == "new_episode"
    # a skill needs 0.1 + 0.15 to change at all; a core memory needs 0.9 for a new episode
    assert mode_for(0.2, memory_kind="skill") == "confirmed"
    assert mode_for(0.8, memory_kind="core") == "integration"
    assert mode_for(0.9, memory_kind="identity") == "new_episode"


def test_contradiction_bonus_and_correction():
    # {i, like, coffee} vs {i, do, not, like, coffee}: 3 / 5 shared, negation flipped
    pe, flag = prediction_error("I like coffee", "I do not like coffee")
    assert flag is True
    assert pe == pytest.approx(0.4 + 0.2)
    pe, flag = prediction_error("I like coffee", "I do not like coffee", contradiction=False)
    assert (pe, flag) == (pytest.approx(0.4), False)
    assert prediction_error("x", "y", correction=True)[0] == 1.0
    assert detect_contradiction("It isn't raining", "It is raining") is True
    assert detect_contradiction("Alice is not here", "The report is due Friday") is False


def test_selective_edit_replaces_the_changed_span():
    old = "Our weekly sync is on Monday at 10 in room Orion"
    new = "Our weekly sync is on Tuesday at 10 in room Orion"
    # 10 shared tokens of 12 in the union: PE 1/6, x1.05 at neutral levels
    plan = plan_update(old, new, labile_until=OPEN, now=NOW)
    assert plan.pe_raw == pytest.approx(2 / 12)
    assert plan.pe_eff == pytest.approx(2 / 12 * 1.05)
    assert plan.mode == "selective_edit"
    assert plan.new_content == new
    assert [(e.op, e.old_text, e.new_text) for e in plan.edits] == [("replace", "Monday", "Tuesday")]
    assert plan.create_new_episode is False
    assert rollback(plan) == old


def test_selective_edit_keeps_old_surface_and_edge_context():
    out, edits = selective_edit("Meeting with Bob, Monday 3pm, room 4.", "meeting with bob, Monday 4pm")
    assert out == "Meeting with Bob, Monday 4pm room 4."
    assert len(edits) == 1
    out, _ = selective_edit("I do not like coffee", "I like coffee")
    assert out == "I like coffee"  # interior deletion applied


def test_integration_extends_or_appends():
    plan = plan_update("Alice lives in Berlin.", "Alice lives in Berlin with her dog Rex.",
                       labile_until=OPEN, now=NOW)
    assert plan.pe_raw == pytest.approx(0.5)  # 4 of 8
    assert plan.mode == "integration"
    assert plan.new_content == "Alice lives in Berlin with her dog Rex."
    out, _ = integrate("Alice lives in Berlin", "Alice lives in Berlin. She works at Acme.")
    assert out == "Alice lives in Berlin. She works at Acme."
    out, edits = integrate("Line one.\nLine two.", "Line two. Line three!")
    assert out == "Line one.\nLine two. Line three!"
    assert [e.op for e in edits] == ["insert"]


def test_contradiction_in_integration_band_lets_the_new_claim_win():
    plan = plan_update("I do not like coffee", "I like coffee", labile_until=OPEN, now=NOW)
    assert plan.contradiction and plan.mode == "integration"
    assert plan.new_content == "I like coffee"
    plan = plan_update("I like coffee", "I do not like coffee", labile_until=OPEN, now=NOW)
    assert plan.new_content == "I do not like coffee"


def test_new_episode_and_correction():
    plan = plan_update("Alice lives in Berlin", "The quarterly report is due Friday", labile_until=OPEN, now=NOW)
    assert plan.mode == "new_episode" and plan.new_content is None and plan.create_new_episode
    assert plan.supersede_old is False
    plan = plan_update("My name is Alec", "My name is Alex", labile_until=OPEN, now=NOW, correction=True)
    assert plan.pe_raw == 1.0 and plan.pe_eff == 1.0
    assert plan.mode == "new_episode" and plan.supersede_old is True


def test_gates_blocked_and_protected_keep_old_and_store_new():
    old, new = "Alice lives in Berlin.", "Alice lives in Berlin with her dog Rex."
    closed = plan_update(old, new, labile_until=NOW - 1.0, now=NOW)
    assert closed.mode == "blocked" and closed.new_content is None and closed.create_new_episode
    never = plan_update(old, new, labile_until=None, now=NOW)
    assert never.mode == "blocked"
    prot = plan_update(old, new, labile_until=OPEN, now=NOW, stability_allowed=False)
    assert prot.mode == "protected" and prot.create_new_episode
    # the same through a threshold: PE_eff 0.525 below 0.6, above 0.5
    assert plan_update(old, new, labile_until=OPEN, now=NOW, stability_threshold=0.6).mode == "protected"
    assert plan_update(old, new, labile_until=OPEN, now=NOW, stability_threshold=0.5).mode == "integration"
    # a confirmation needs no window and changes nothing
    conf = plan_update(old, "alice lives in berlin", labile_until=None, now=NOW)
    assert conf.mode == "confirmed" and conf.new_content is None and not conf.create_new_episode


def test_window_and_neuromodulation():
    assert open_window(now=NOW) == NOW + 600.0
    old, new = "a b c d e f g h i j", "a b c d e f g h i k"  # PE 2/11
    calm = plan_update(old, new, labile_until=OPEN, now=NOW, ne=0.0, serotonin=1.0)
    assert calm.pe_eff == pytest.approx(2 / 11 * 0.8)
    assert calm.mode == "selective_edit"


def test_plan_round_trips_through_json():
    plan = plan_update("Our sync is Monday", "Our sync is Tuesday", labile_until=OPEN, now=NOW)
    back = ReconsolidationPlan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert back == plan


def test_params_are_validated():
    with pytest.raises(ConfigError):
        ReconsolidationParams(confirm_below=0.5, edit_below=0.3)
    with pytest.raises(ConfigError):
        ReconsolidationParams(integrate_below=0.9, resistance_core=0.2)
    with pytest.raises(ConfigError):
        ReconsolidationParams(lability_window_s=-1)


words = st.lists(st.sampled_from("alpha beta gamma delta epsilon zeta eta theta not".split()), min_size=1, max_size=12)


@FAST
@given(st.floats(0, 1), st.floats(0, 1), st.sampled_from([None, "fact", "skill", "core", "schema", "preference"]))
def test_modes_monotone_in_pe(a, b, kind):
    lo, hi = sorted((a, b))
    assert ORDER[mode_for(lo, memory_kind=kind)] <= ORDER[mode_for(hi, memory_kind=kind)]


@FAST
@given(words, words)
def test_edits_keep_information(a, b):
    old, new = " ".join(a), " ".join(b)
    out, _ = selective_edit(old, new)
    assert token_set(new) <= token_set(out)  # every new token is in the edited text
    out, _ = integrate(old, new)
    assert token_set(old) | token_set(new) <= token_set(out)  # a union loses nothing


@FAST
@given(words, words, st.floats(0, 1), st.floats(0, 1))
def test_plan_invariants(a, b, ne, ser):
    old, new = " ".join(a), " ".join(b)
    plan = plan_update(old, new, labile_until=OPEN, now=NOW, ne=ne, serotonin=ser)
    assert 0.0 <= plan.pe_raw <= 1.0 and 0.0 <= plan.pe_eff <= 1.0
    assert plan.snapshot_content == old
    if plan.mode in ("confirmed", "new_episode"):
        assert plan.new_content is None
    assert plan.create_new_episode == (plan.mode == "new_episode")
    assert plan_update(old, old, labile_until=OPEN, now=NOW).mode == "confirmed"
