"""Index texts of conversation turns: predecessors joined within a session, speakers apart."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ValidationError
from zenbrain.retrieval.turn_context import (
    Turn,
    contextual_texts,
    index_text,
    mean_vectors,
    named_speakers,
    split_speaker,
)

TURNS = [
    Turn("What got you into painting?", "Caroline", "1"),
    Turn("My friend got me into it.", "Melanie", "1"),
    Turn("That's sweet!", "Caroline", "1"),
    Turn("Hey Mel! I went to a support group yesterday.", "Caroline", "2"),
]


def test_a_reply_is_indexed_with_the_turn_it_answers():
    texts = contextual_texts(TURNS, window=1)
    assert texts[1] == "What got you into painting?\nMy friend got me into it."
    assert texts[0] == "What got you into painting?"  # nothing before the first turn


def test_context_never_crosses_a_session_boundary():
    texts = contextual_texts(TURNS, window=2)
    assert texts[3] == "Hey Mel! I went to a support group yesterday."
    assert texts[2] == "What got you into painting?\nMy friend got me into it.\nThat's sweet!"


def test_window_zero_is_the_turns_own_text_and_negative_is_refused():
    assert contextual_texts(TURNS, window=0) == [t.text for t in TURNS]
    with pytest.raises(ValidationError):
        contextual_texts(TURNS, window=-1)


def test_index_text_skips_empty_predecessors():
    assert index_text(" own ", ["", "  ", "before"]) == "before\nown"


@pytest.mark.parametrize(
    ("line", "speaker", "body"),
    [
        ("Caroline: Hey Mel! Good to see you!", "Caroline", "Hey Mel! Good to see you!"),
        ("Mary Ann Lee: Thanks!", "Mary Ann Lee", "Thanks!"),
        ("Note: bring the tent", None, "Note: bring the tent"),
        ("https://example.org is the link", None, "https://example.org is the link"),
        ("meet at 10:30 then", None, "meet at 10:30 then"),
        ("no speaker here", None, "no speaker here"),
    ],
)
def test_split_speaker(line, speaker, body):
    assert split_speaker(line) == (speaker, body)


def test_named_speakers_by_full_or_first_name_any_case():
    speakers = ["Caroline", "Melanie", "Jon Snow"]
    assert named_speakers("What did Caroline research?", speakers) == {"Caroline"}
    assert named_speakers("what is caroline's identity?", speakers) == {"Caroline"}
    assert named_speakers("When did Jon open his studio?", speakers) == {"Jon Snow"}
    assert named_speakers("What do Melanie and Caroline share?", speakers) == {"Caroline", "Melanie"}
    assert named_speakers("Who is Carolinex?", speakers) == frozenset()


def _named_by_scanning(query, speakers):
    """Every form of every speaker tested against the query (what the index must agree with)."""
    found = set()
    for name in speakers:
        for form in {name, *name.split()[:1]} - {""}:
            if form.casefold() in query.casefold() and re.search(rf"(?<!\w){re.escape(form)}(?!\w)", query, re.IGNORECASE):
                found.add(name)
    return frozenset(found)


_NAME_PART = st.sampled_from(["Jon", "jon", "Ann", "Mary-Ann", "O'Brien", "@bob", "Zoë", "K", "\u212a", "Ana",
                              "ana", "Şule", "ı", "İpek", "x1", " "])


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.lists(st.lists(_NAME_PART, min_size=1, max_size=3).map(" ".join), max_size=8),
       st.lists(st.one_of(_NAME_PART, st.sampled_from(["what", "did", "say", "?", "'s", ",", "-", "kelvin"])),
                max_size=10).map(" ".join))
def test_named_speakers_agree_with_testing_every_form(speakers, query):
    assert named_speakers(query, speakers) == _named_by_scanning(query, speakers)


def test_named_speakers_among_thousands_of_speakers():
    speakers = [f"Person{i} Surname{i}" for i in range(5000)] + ["Caroline"]
    assert named_speakers("what did person4321 and CAROLINE say?", speakers) == {"Person4321 Surname4321", "Caroline"}
    assert named_speakers("what did Surname7 say?", speakers) == frozenset()  # a surname alone is not a form


def test_mean_vectors_are_unit_rows_between_own_and_context():
    own = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    ctx = np.array([[0.0, 1.0], [0.0, -1.0]], dtype=np.float32)
    m = mean_vectors(own, ctx)
    np.testing.assert_allclose(m[0], [2**-0.5, 2**-0.5], atol=1e-6)
    np.testing.assert_array_equal(m[1], [0.0, 0.0])  # opposite vectors: no direction, no NaN
    with pytest.raises(ValidationError):
        mean_vectors(own, ctx[:1])
