import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import fsrs_schedule as fs
from zenbrain.mechanisms.fsrs_schedule import FsrsParams, Rating

FAST = settings(derandomize=True, max_examples=40, deadline=None, database=None)
T0 = 1_700_000_000.0
DAY = 86400.0
MIN = 60.0

# FSRS-6 default weights needed for hand computation (w0..w3 initial stabilities, w4/w5 difficulty,
# w20 the forgetting-curve decay).
W = {0: 0.212, 1: 1.2931, 2: 2.3065, 3: 8.2956, 4: 6.4133, 5: 0.8334, 20: 0.1542}


def curve(t_days: float, s: float) -> float:
    """FSRS-6 power forgetting curve, written out: R = (1 + F t / S)^-d with F = 0.9^(-1/d) - 1."""
    d = W[20]
    f = 0.9 ** (-1.0 / d) - 1.0
    return (1.0 + f * t_days / s) ** (-d)


# ---- golden values -------------------------------------------------------------------

def test_first_review_easy_goes_straight_to_review():
    state, due = fs.review(None, Rating.Easy, T0)
    assert state["state"] == 2 and state["step"] is None
    assert state["stability"] == pytest.approx(W[3])
    # D0 = w4 - e^(w5 * 3) + 1 is negative -> clamped to 1
    assert W[4] - math.exp(W[5] * 3) + 1 < 1 and state["difficulty"] == 1.0
    # retention 0.9: the interval equals S, rounded to whole days -> 8
    assert due == T0 + 8 * DAY
    assert state["last_review"] == T0 and state["reps"] == 1 and state["lapses"] == 0


def test_first_review_good_takes_the_second_learning_step():
    state, due = fs.review(None, Rating.Good, T0)
    assert state["state"] == 1 and state["step"] == 1
    assert state["stability"] == pytest.approx(W[2])
    assert state["difficulty"] == pytest.approx(W[4] - math.exp(W[5] * 2) + 1)
    assert due == T0 + 10 * MIN


def test_lapse_moves_to_relearning():
    state, _ = fs.review(None, Rating.Easy, T0)
    state, due = fs.review(state, Rating.Again, T0 + 8 * DAY)
    assert state["state"] == 3 and state["lapses"] == 1 and state["reps"] == 2
    assert due == T0 + 8 * DAY + 10 * MIN
    assert state["stability"] < W[3]


def test_retrievability_follows_the_fsrs6_curve():
    state, _ = fs.review(None, Rating.Easy, T0)
    assert fs.retrievability(state, T0) == 1.0
    assert fs.retrievability(state, T0 + 8 * DAY) == pytest.approx(curve(8, W[3]))
    assert fs.retrievability(state, T0 + 30 * DAY) == pytest.approx(curve(30, W[3]))
    # fsrs counts whole days
    assert fs.retrievability(state, T0 + 0.9 * DAY) == 1.0
    assert fs.retrievability(None, T0) == 0.0


def test_desired_retention_shortens_or_lengthens_intervals():
    # interval = S / F * (r^(-1/d) - 1), rounded
    d = W[20]
    f = 0.9 ** (-1.0 / d) - 1.0
    want = round(W[3] / f * (0.8 ** (-1.0 / d) - 1.0))
    _, due = fs.review(None, Rating.Easy, T0, params=FsrsParams(desired_retention=0.8))
    assert due == T0 + want * DAY and want > 8


def test_maximum_interval_and_no_learning_steps():
    _, due = fs.review(None, Rating.Easy, T0, params=FsrsParams(maximum_interval_days=5))
    assert due == T0 + 5 * DAY
    p = FsrsParams(learning_step_1_minutes=0.0, learning_step_2_minutes=0.0)
    state, due = fs.review(None, Rating.Good, T0, params=p)
    assert state["state"] == 2 and due == T0 + round(W[2]) * DAY


def test_state_is_json_and_round_trips():
    state, _ = fs.review(None, Rating.Good, T0)
    state, _ = fs.review(state, Rating.Good, T0 + 10 * MIN)
    again = json.loads(json.dumps(state))
    assert again == state
    card = fs.state_to_card(again)
    back = fs.card_to_state(card, reps=state["reps"], lapses=state["lapses"], last_rating=state["last_rating"])
    assert back == state


def test_review_does_not_mutate_its_input_and_is_deterministic():
    state, _ = fs.review(None, Rating.Good, T0)
    frozen = copy.deepcopy(state)
    a = fs.review(state, Rating.Hard, T0 + 2 * DAY)
    b = fs.review(state, Rating.Hard, T0 + 2 * DAY)
    assert state == frozen and a == b


def test_with_due_and_is_due():
    state, due = fs.review(None, Rating.Easy, T0)
    moved = fs.with_due(state, due - 2 * DAY)
    assert moved["due"] == due - 2 * DAY and state["due"] == due
    assert not fs.is_due(state, T0 + DAY) and fs.is_due(state, due)
    assert fs.is_due(None, T0)


def test_bad_inputs_are_refused():
    with pytest.raises(ValidationError):
        fs.review(None, 5, T0)
    with pytest.raises(ValidationError):
        fs.review(None, Rating.Good, float("nan"))
    with pytest.raises(ValidationError):
        fs.review({"state": 9, "due": T0}, Rating.Good, T0)
    with pytest.raises(ValidationError):
        fs.retrievability({"nonsense": 1}, T0)


# ---- grading -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "rank,score,want",
    [
        (None, 0.99, Rating.Again),
        (1, 0.95, Rating.Easy),
        (1, 0.8, Rating.Easy),
        (1, 0.79, Rating.Good),
        (3, 0.6, Rating.Good),
        (3, 0.49, Rating.Hard),
        (4, 0.99, Rating.Hard),
        (1, 0.1, Rating.Hard),
    ],
)
def test_grade_from_recall_rule(rank, score, want):
    assert fs.grade_from_recall(rank, score) == want


def test_grade_from_recall_refuses_bad_ranks():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValidationError):
            fs.grade_from_recall(bad, 0.5)
    with pytest.raises(ValidationError):
        fs.grade_from_recall(1, float("nan"))


@pytest.mark.parametrize(
    "feedback,want",
    [
        ("again", Rating.Again), ("WRONG", Rating.Again), ("no", Rating.Again), ("down", Rating.Again),
        ("hard", Rating.Hard), ("partial", Rating.Hard),
        ("good", Rating.Good), ("Correct", Rating.Good), ("yes", Rating.Good),
        ("easy", Rating.Easy), ("perfect", Rating.Easy),
        (1, Rating.Again), (2, Rating.Hard), (3, Rating.Good), (4, Rating.Easy), ("4", Rating.Easy),
        (Rating.Hard, Rating.Hard),
    ],
)
def test_grade_from_feedback(feedback, want):
    assert fs.grade_from_feedback(feedback) == want


@pytest.mark.parametrize("bad", ["meh?", "", 0, 5, "7", 2.0, None, True])
def test_grade_from_feedback_refuses_unknown(bad):
    with pytest.raises(ValidationError):
        fs.grade_from_feedback(bad)


@FAST
@given(r1=st.integers(1, 50), r2=st.integers(1, 50), s1=st.floats(0, 1), s2=st.floats(0, 1))
def test_better_recall_never_grades_lower(r1, r2, s1, s2):
    # a hit at a rank no deeper and a score no lower never gets a lower grade
    (ra, sa), (rb, sb) = (min(r1, r2), max(s1, s2)), (max(r1, r2), min(s1, s2))
    assert fs.grade_from_recall(ra, sa) >= fs.grade_from_recall(rb, sb) >= fs.grade_from_recall(None, sb)


# ---- properties of scheduling --------------------------------------------------------

@FAST
@given(ratings=st.lists(st.integers(1, 4), min_size=1, max_size=12), gaps=st.lists(st.floats(0.0, 60.0), min_size=12, max_size=12))
def test_due_is_never_in_the_past_and_within_the_maximum(ratings, gaps):
    p = FsrsParams(maximum_interval_days=365)
    state, now = None, T0
    for rating, gap in zip(ratings, gaps):
        state, due = fs.review(state, rating, now, params=p)
        assert now < due <= now + 365 * DAY + 1e-6
        assert 0.0 <= fs.retrievability(state, due) <= 1.0
        assert 1.0 <= state["difficulty"] <= 10.0
        now = now + gap * DAY


# ---- params --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs",
    [
        {"desired_retention": 1.0},
        {"desired_retention": 0.5},
        {"maximum_interval_days": 0},
        {"maximum_interval_days": 1.5},
        {"good_max_rank": 2.5},
        {"good_min_score": 0.9, "easy_min_score": 0.8},
        {"learning_step_1_minutes": -1.0},
    ],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        FsrsParams(**kwargs)


def test_scheduler_has_fuzz_off_and_is_cached():
    assert fs.scheduler().enable_fuzzing is False
    assert fs.scheduler(FsrsParams()) is fs.scheduler(FsrsParams())


def _old_state_to_card(cs):
    """state_to_card's conversions before its fast paths for plain ints and floats."""
    from datetime import UTC, datetime

    from fsrs import Card, State

    last, stab, diff = cs.get("last_review"), cs.get("stability"), cs.get("difficulty")
    return Card(card_id=0, state=State(int(cs["state"])), step=None if cs.get("step") is None else int(cs["step"]),
                stability=None if stab is None else float(stab), difficulty=None if diff is None else float(diff),
                due=datetime.fromtimestamp(float(cs["due"]), tz=UTC),
                last_review=None if last is None else datetime.fromtimestamp(float(last), tz=UTC))


@pytest.mark.parametrize("card_state", [
    {"state": 1, "step": 0, "stability": None, "difficulty": None, "due": 1.7e9, "last_review": None},
    {"state": 2, "step": None, "stability": 3.25, "difficulty": 5.5, "due": 1.7e9 + 0.5, "last_review": 1.7e9 - 86400.0},
    {"state": 3, "step": 1, "stability": 2, "difficulty": np.float64(4.0), "due": 1_700_000_000, "last_review": 1.7e9},
    {"state": np.int64(2), "step": 1.0, "stability": np.float32(0.5), "difficulty": True, "due": np.float64(1.7e9),
     "last_review": np.float64(1.7e9)},
    {"state": True, "step": np.int64(0), "stability": -0.0, "difficulty": 1e-300, "due": 1.7e9, "last_review": 0.0},
    {"state": 2.0, "step": None, "stability": 1.0, "difficulty": 1.0, "due": 1.7e9},
])
def test_card_fast_paths_give_the_cards_of_the_general_conversions(card_state):
    got, want = fs.state_to_card(card_state), _old_state_to_card(card_state)
    for field in ("card_id", "state", "step", "stability", "difficulty", "due", "last_review"):
        a, b = getattr(got, field), getattr(want, field)
        assert (a, type(a)) == (b, type(b)), field
        if type(a) is float:
            assert math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize("bad", [{"state": 1, "step": 0, "due": float("nan")}, {"state": 1, "step": 0, "due": "soon"},
                                 {"state": 1, "step": 0, "due": True}, {"state": 1, "step": 0, "due": float("inf")},
                                 {"state": 9, "step": 0, "due": 1.0}, {"state": 1, "step": 0}])
def test_bad_card_states_are_still_refused(bad):
    with pytest.raises(ValidationError):
        fs.state_to_card(bad)


def test_feedback_words_graded_as_their_normalised_form():
    words = list(fs._FEEDBACK_WORDS) + ["1", "4", " 3 ", "Good", " EASY ", "again\n"]
    for w in words:
        assert fs.grade_from_feedback(w) is fs.grade_from_feedback(" " + w.upper() + " ")
    for bad in ("", "5", "goodish", "0"):
        with pytest.raises(ValidationError):
            fs.grade_from_feedback(bad)
