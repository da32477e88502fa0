"""FSRS spaced-repetition scheduling through the ``fsrs`` library (FSRS-6), without fuzz.

A memory's FSRS card lives as a JSON-able dict inside ``MemoryItem.state`` (key of
the caller's choosing, e.g. ``"fsrs"``)::

    {"state": 1|2|3, "step": int|None, "stability": float|None, "difficulty": float|None,
     "due": float, "last_review": float|None, "reps": int, "lapses": int, "last_rating": int|None}

A card never reviewed leaves out the four fields that are None until its first review
(stability, difficulty, last_review, last_rating): most memories of a large store are
never reviewed, and the nulls took 73 bytes of each one's row.

Times are float seconds since the Unix epoch; they are converted to tz-aware UTC
datetimes only at the boundary with ``fsrs``. Fuzzing is switched off, so the same
card, rating and time always give the same due date.

Grades come from two sources:

* ``grade_from_recall`` -- natural recall, when the coordinator sees (or fails to see)
  a memory in a result list: rank 1 with a high score is Easy, a top-few hit with a
  fair score is Good, any other hit is Hard, an expected memory that did not come back
  is Again.
* ``grade_from_feedback`` -- explicit feedback words or the numbers 1-4.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fsrs import Card, Rating, Scheduler, State

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

CardState = dict[str, Any]


@dataclass(frozen=True)
class FsrsParams(Params):
    desired_retention: float = bounded(0.9, 0.7, 0.99, "target probability of recall at the due date")
    maximum_interval_days: int = bounded(36500, 1, 36500, "longest interval fsrs may schedule, in days")
    learning_step_1_minutes: float = bounded(1.0, 0.0, 1440.0, "first learning step (0 = none)")
    learning_step_2_minutes: float = bounded(10.0, 0.0, 1440.0, "second learning step (0 = none)")
    relearning_step_minutes: float = bounded(10.0, 0.0, 1440.0, "relearning step after a lapse (0 = none)")
    easy_min_score: float = bounded(0.8, 0.0, 1.0, "rank-1 recall at or above this score is graded Easy")
    good_min_score: float = bounded(0.5, 0.0, 1.0, "recall within good_max_rank at or above this score is Good")
    good_max_rank: int = bounded(3, 1, 1000, "deepest rank that can still be graded Good")

    def __post_init__(self) -> None:
        super().__post_init__()  # also refuses a fractional value of an int field
        if self.good_min_score > self.easy_min_score:
            raise ConfigError("FsrsParams.good_min_score must not exceed easy_min_score")


DEFAULTS = FsrsParams()


@functools.lru_cache(maxsize=32)
def scheduler(params: FsrsParams = DEFAULTS) -> Scheduler:
    """The (cached) fsrs Scheduler for these params, fuzz off."""
    steps = tuple(
        timedelta(minutes=m) for m in (params.learning_step_1_minutes, params.learning_step_2_minutes) if m > 0
    )
    relearn = (timedelta(minutes=params.relearning_step_minutes),) if params.relearning_step_minutes > 0 else ()
    return Scheduler(
        desired_retention=params.desired_retention,
        learning_steps=steps,
        relearning_steps=relearn,
        maximum_interval=int(params.maximum_interval_days),
        enable_fuzzing=False,
    )


_last_scheduler: tuple[FsrsParams, Scheduler] | None = None


def _scheduler(params: FsrsParams) -> Scheduler:
    """``scheduler(params)``, remembering the last params by identity (hashing the frozen
    params for the cache costs more than a review's own arithmetic)."""
    global _last_scheduler
    last = _last_scheduler
    if last is not None and last[0] is params:
        return last[1]
    out = scheduler(params)
    _last_scheduler = (params, out)
    return out


_STATES = {int(s): s for s in State}


def _state(value: Any) -> State:
    """``State(int(value))`` (a dict lookup for the known states)."""
    out = _STATES.get(value) if type(value) is int else None
    if out is not None:
        return out
    v = int(value)
    out = _STATES.get(v)
    return State(v) if out is None else out


def _check_time(name: str, value: Any) -> float:
    if type(value) is float and value - value == 0.0:  # a finite float: the common case, as it is
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{name} must be a finite number of seconds since the epoch, got {value!r}")
    return float(value)


@functools.lru_cache(maxsize=4096)
def _dt(t: float) -> datetime:
    """The UTC datetime of an epoch time (immutable, so shared: the same few review times
    recur across the cards of one recall or one session)."""
    return datetime.fromtimestamp(t, tz=UTC)


def new_card(*, now: float) -> CardState:
    """A fresh card (Learning, step 0), due immediately."""
    now = _check_time("now", now)
    return {"state": int(State.Learning), "step": 0, "due": now, "reps": 0, "lapses": 0}


def state_to_card(card_state: CardState) -> Card:
    """Rebuild an ``fsrs.Card`` from the stored dict."""
    try:
        get = card_state.get
        last, stab, diff, step = get("last_review"), get("stability"), get("difficulty"), get("step")
        return Card(
            card_id=0,  # fixed: Card() would otherwise read the wall clock and sleep 1 ms
            state=_state(card_state["state"]),
            step=None if step is None else step if type(step) is int else int(step),
            stability=None if stab is None else stab if type(stab) is float else float(stab),
            difficulty=None if diff is None else diff if type(diff) is float else float(diff),
            due=_dt(_check_time("due", card_state["due"])),
            last_review=None if last is None else _dt(_check_time("last_review", last)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            raise
        raise ValidationError(f"not a valid FSRS card state: {card_state!r} ({exc})") from exc


def card_to_state(card: Card, *, reps: int = 0, lapses: int = 0, last_rating: int | None = None) -> CardState:
    """The JSON-able dict for an ``fsrs.Card`` (times as epoch seconds; the optional
    fields that are None left out)."""
    out: CardState = {"state": int(card.state), "step": card.step, "due": card.due.timestamp(),
                      "reps": int(reps), "lapses": int(lapses)}
    for name, value in (("stability", card.stability), ("difficulty", card.difficulty),
                        ("last_review", None if card.last_review is None else card.last_review.timestamp()),
                        ("last_rating", last_rating)):
        if value is not None:
            out[name] = value
    return out


def review(
    card_state: CardState | None, rating: Rating | int, now: float, *, params: FsrsParams = DEFAULTS
) -> tuple[CardState, float]:
    """Review the card at ``now`` with ``rating``; returns (new card state, due time in epoch seconds).

    ``card_state=None`` starts a new card at ``now`` (the first review of a memory).
    The input dict is not modified.
    """
    now = _check_time("now", now)
    rating = _as_rating(rating)
    if card_state is None:
        card_state = new_card(now=now)
    card = state_to_card(card_state)
    was_review = card.state is State.Review  # state_to_card gives State members
    new, _log = _scheduler(params).review_card(card, rating, review_datetime=_dt(now))
    lapses = int(card_state.get("lapses", 0)) + (1 if was_review and rating is Rating.Again else 0)
    out = card_to_state(
        new, reps=int(card_state.get("reps", 0)) + 1, lapses=lapses, last_rating=int(rating)
    )
    return out, out["due"]


def with_due(card_state: CardState, due: float) -> CardState:
    """A copy of the card with a new due time (e.g. after the vmPFC interval factor)."""
    out = dict(card_state)
    out["due"] = _check_time("due", due)
    return out


def retrievability(card_state: CardState | None, now: float, *, params: FsrsParams = DEFAULTS) -> float:
    """FSRS probability of recall at ``now``; 0.0 for a card never reviewed (fsrs' convention).

    fsrs counts elapsed time in whole days, so R stays at 1.0 during the first day.
    """
    now = _check_time("now", now)
    if card_state is None:
        return 0.0
    return float(_scheduler(params).get_card_retrievability(state_to_card(card_state), _dt(now)))


def is_due(card_state: CardState | None, now: float) -> bool:
    """True when the card's due time has come (a card never reviewed is due)."""
    now = _check_time("now", now)
    return card_state is None or float(card_state["due"]) <= now


def _as_rating(rating: Rating | int) -> Rating:
    if isinstance(rating, Rating):
        return rating
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 4:
        raise ValidationError(f"rating must be a fsrs.Rating or an int 1-4, got {rating!r}")
    return Rating(rating)


def grade_from_recall(rank: int | None, score: float, *, params: FsrsParams = DEFAULTS) -> Rating:
    """Grade a natural recall of a memory the caller expected to see.

    ``rank`` is the 1-based position in the result list (None: expected but not returned);
    ``score`` is a similarity-like value in [0, 1] (pass the dense similarity or another
    score that is not already normalised to the top hit). Rule:

    * not returned                                     -> Again
    * rank 1 and score >= easy_min_score               -> Easy
    * rank <= good_max_rank and score >= good_min_score -> Good
    * any other hit                                    -> Hard
    """
    if rank is None:
        return Rating.Again
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValidationError(f"rank must be a positive int or None, got {rank!r}")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise ValidationError(f"score must be a finite number, got {score!r}")
    if rank == 1 and score >= params.easy_min_score:
        return Rating.Easy
    if rank <= params.good_max_rank and score >= params.good_min_score:
        return Rating.Good
    return Rating.Hard


_FEEDBACK_WORDS: dict[str, Rating] = {
    **dict.fromkeys(("again", "forgot", "forgotten", "wrong", "incorrect", "no", "fail", "failed", "bad", "down"), Rating.Again),
    **dict.fromkeys(("hard", "difficult", "partial", "partly", "vague", "meh"), Rating.Hard),
    **dict.fromkeys(("good", "correct", "right", "yes", "ok", "okay", "up", "helpful", "useful"), Rating.Good),
    **dict.fromkeys(("easy", "perfect", "trivial", "obvious", "great"), Rating.Easy),
}


def grade_from_feedback(feedback: str | int | Rating) -> Rating:
    """Explicit feedback to a Rating: the ints 1-4 (Again..Easy) or a word such as
    again/wrong/no, hard/partial, good/correct/yes, easy/perfect (case-insensitive)."""
    if isinstance(feedback, Rating):
        return feedback
    if isinstance(feedback, str):
        out = _FEEDBACK_WORDS.get(feedback)  # already a lower-case word without spaces
        if out is not None:
            return out
        key = feedback.strip().lower()
        if key.isdigit():
            return _as_rating(int(key))
        if key in _FEEDBACK_WORDS:
            return _FEEDBACK_WORDS[key]
        raise ValidationError(
            f"unknown feedback {feedback!r}; use 1-4 or one of: {', '.join(sorted(_FEEDBACK_WORDS))}"
        )
    return _as_rating(feedback)


__all__ = [
    "CardState",
    "FsrsParams",
    "Rating",
    "card_to_state",
    "grade_from_feedback",
    "grade_from_recall",
    "is_due",
    "new_card",
    "retrievability",
    "review",
    "scheduler",
    "state_to_card",
    "with_due",
]
