"""Prospective memory: keyword, embedding and time triggers; once-only and recurring firing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.prospective import (
    Intention,
    ProspectiveParams,
    check,
    make_intention,
    pending,
)

T0 = 1_700_000_000.0
H = 3600.0
FAST = settings(derandomize=True, max_examples=60, deadline=None)


def test_keyword_phrase_fires_once():
    it = make_intention(id="i1", action="Ask Bob about his lab", now=T0, cue_keywords=["Bob's lab", "bob"])
    its, f = check([it], now=T0 + 1, text="Nothing relevant here.")
    assert f == ()
    its, f = check(its, now=T0 + 2, text="I saw BOB, yesterday!")
    assert [(x.intention_id, x.trigger, x.detail) for x in f] == [("i1", "keyword", "bob")]
    assert its[0].done and its[0].fired_count == 1 and its[0].last_fired_at == T0 + 2
    its, f = check(its, now=T0 + 3, text="bob again")
    assert f == ()
    two = make_intention(id="i2", action="x", now=T0, cue_keywords=["call mom"])
    assert check([two], now=T0, text="mom will call")[1] == ()  # a phrase must be contiguous
    assert len(check([two], now=T0, text="Remember to call Mom.")[1]) == 1


def test_embedding_cue_threshold():
    it = make_intention(id="e", action="x", now=T0, cue_embedding=[1.0, 0.0])
    assert check([it], now=T0, embedding=[1.0, 1.0])[1] == ()  # cosine 0.707 < 0.8
    _, f = check([it], now=T0, embedding=[3.0, 1.0])  # cosine 3 / sqrt(10) = 0.9487
    assert f[0].trigger == "embedding" and f[0].score == pytest.approx(3 / 10**0.5)
    assert check([it], now=T0, embedding=[0.0, 0.0])[1] == ()


def test_time_trigger_once_and_recurring():
    it = make_intention(id="t", action="renew passport", now=T0, due_at=T0 + H)
    its, f = check([it], now=T0 + H - 1)
    assert f == ()
    its, f = check(its, now=T0 + H)
    assert f[0].trigger == "time" and its[0].done
    assert check(its, now=T0 + 2 * H)[1] == ()
    rec = make_intention(id="r", action="water plants", now=T0, due_at=T0 + H, repeat_every_s=24 * H)
    its, f = check([rec], now=T0 + 3 * 24 * H + 2 * H)  # three occurrences missed: fire once
    assert len(f) == 1 and its[0].due_at == T0 + H + 4 * 24 * H
    assert check(its, now=T0 + 3 * 24 * H + 3 * H)[1] == ()
    its, f = check(its, now=T0 + H + 4 * 24 * H)
    assert len(f) == 1 and its[0].fired_count == 2 and not its[0].done


def test_recurring_event_cue_has_refractory_period():
    it = make_intention(id="r", action="x", now=T0, cue_keywords=["coffee"], repeat_every_s=H)
    its, f = check([it], now=T0, text="coffee")
    assert len(f) == 1
    its, f = check(its, now=T0 + H / 2, text="coffee")
    assert f == ()
    its, f = check(its, now=T0 + H, text="coffee")
    assert len(f) == 1 and its[0].fired_count == 2


def test_expiry_and_pending():
    it = make_intention(id="x", action="x", now=T0, cue_keywords=["z"], expires_at=T0 + H)
    its, f = check([it], now=T0 + 2 * H, text="z")
    assert f == () and its[0].done and pending(its) == ()


def test_validation_and_round_trip():
    with pytest.raises(ValidationError):
        make_intention(id="a", action="x", now=T0)
    with pytest.raises(ValidationError):
        make_intention(id="a", action="", now=T0, due_at=T0)
    with pytest.raises(ValidationError):
        make_intention(id="a", action="x", now=T0, cue_keywords=["!!"])
    with pytest.raises(ValidationError):
        make_intention(id="a", action="x", now=T0, due_at=T0, repeat_every_s=0)
    with pytest.raises(ValidationError):
        make_intention(id="a", action="x", now=T0, cue_embedding=[0.0, 0.0])
    with pytest.raises(ConfigError):
        ProspectiveParams(similarity_threshold=2.0)
    it = make_intention(id="a", action="x", now=T0, cue_keywords=["k"], cue_embedding=[0.1, 0.2], due_at=T0 + 5)
    assert Intention.from_dict(json.loads(json.dumps(it.to_dict()))) == it


@FAST
@given(
    st.lists(st.tuples(st.floats(0, 10 * H), st.sampled_from(["", "alpha", "beta gamma", "alpha beta"])),
             max_size=25),
    st.floats(0, 5 * H),
    st.one_of(st.none(), st.floats(60, 3 * H)),
)
def test_fires_at_most_once_unless_recurring(steps, due, period):
    its = (
        make_intention(id="k", action="k", now=T0, cue_keywords=["beta"], repeat_every_s=period),
        make_intention(id="t", action="t", now=T0, due_at=T0 + due, repeat_every_s=period),
    )
    now = T0
    counts = {"k": 0, "t": 0}
    for gap, text in steps:
        now += gap
        its, fired = check(its, now=now, text=text)
        ids = [f.intention_id for f in fired]
        assert len(ids) == len(set(ids))  # at most once per check
        for f in fired:
            counts[f.intention_id] += 1
            if f.intention_id == "t":
                assert now >= T0 + due
    if period is None:
        assert counts["k"] <= 1 and counts["t"] <= 1
    assert all(i.fired_count == counts[i.id] for i in its)
