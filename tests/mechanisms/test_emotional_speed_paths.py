"""The emotional tagger's fast paths give what the general code gives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zenbrain.mechanisms import emotional


def test_decay_multiplier_float_path_matches_array_path():
    rng = np.random.default_rng(3)
    vals = [*rng.uniform(-1.5, 1.5, size=(200, 3)).tolist(), [0.0, 0.0, 0.0], [-0.0, 0.0, 0.0], [-1.0, 0.2, 2.0],
            [math.inf, 0.0, 0.0], [0.1, -math.inf, 0.3]]
    params = emotional.EmotionalParams(decay_cap=4.5)
    for v, a, s in vals:
        fast = emotional.decay_multiplier(valence=v, arousal=a, significance=s, params=params)
        ref = emotional.decay_multiplier(valence=np.array([v]), arousal=np.array([a]), significance=np.array([s]),
                                         params=params)[0]
        assert type(fast) is float and fast == ref


@pytest.mark.parametrize("nan_at", [0, 1, 2])
def test_decay_multiplier_nan_takes_the_array_path(nan_at):
    args = [0.2, 0.3, 0.4]
    args[nan_at] = math.nan
    out = emotional.decay_multiplier(valence=args[0], arousal=args[1], significance=args[2])
    assert math.isnan(out)


def test_phrase_index_keeps_every_phrase_in_order():
    flat = [entry for entries in emotional._PHRASES_BY_FIRST.values() for entry in entries]
    assert sorted(flat) == sorted(emotional._PHRASES.items())
    order = list(emotional._PHRASES)
    for first, entries in emotional._PHRASES_BY_FIRST.items():
        assert all(p[0] == first for p, _ in entries)
        idx = [order.index(p) for p, _ in entries]
        assert idx == sorted(idx)


TEXTS = [
    "Don't forget: my daughter is allergic to peanuts.",
    "do not forget the deadline!!",
    "Never forget the wedding, it was AMAZING :)",
    "I am not happy but the promotion is great",
    "keep in mind that the password changed",
    "kind of annoying, slightly sad",
    "fx00012 terrified panic",
    "",
]


def test_remembered_tag_equals_a_fresh_one():
    params = emotional.EmotionalParams(kappa=2.0)
    for text in TEXTS:
        for p in (emotional.DEFAULTS, params):
            fresh = emotional._tag_of.__wrapped__(text, p)
            assert emotional.tag(text, params=p) == fresh
            assert emotional.tag(text, params=p) == fresh  # the second call reads the memo


def test_str_subclass_is_tagged_as_its_text():
    class Text(str):
        pass

    assert emotional.tag(Text("I love it")) == emotional.tag("I love it")
