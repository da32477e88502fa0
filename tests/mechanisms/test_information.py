"""How much a memory says: summed idf of its words, in words said once or relative to the median."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zenbrain.mechanisms.information import (
    InformationReference,
    information,
    information_words,
    rehearses,
    relative_information,
    word_unit,
)
from zenbrain.text import token_set


def test_information_is_the_summed_idf_of_distinct_words():
    sets = [{"thanks", "so"}, {"thanks", "lisbon"}, {"thanks", "so", "much"}]
    info = information(sets)
    idf = {w: math.log(4 / (d + 0.5)) for w, d in {"thanks": 3, "so": 2, "lisbon": 1, "much": 1}.items()}
    assert info.tolist() == pytest.approx([idf["thanks"] + idf["so"], idf["thanks"] + idf["lisbon"],
                                           idf["thanks"] + idf["so"] + idf["much"]])
    assert information([]).size == 0


def test_small_talk_says_less_than_half_of_a_typical_memory():
    texts = ["The library on Elm Street opens at nine", "So nice, thanks!", "Granite is an igneous rock",
             "Melanie painted a lake at sunrise in Oregon", "That is so nice!",
             "Caroline moved to Sweden in 2022 to study counseling", "Thanks, so nice!",
             "The adoption agency in Portland approved the application", "The train to Leeds leaves from platform four"]
    rel = relative_information([token_set(t) for t in texts])
    assert np.median(rel) == pytest.approx(1.0)
    assert [bool(x < 0.5) for x in rel] == [False, True, False, False, True, False, True, False, False]
    assert relative_information([set(), set()]).tolist() == [1.0, 1.0]  # nothing to tell them apart by


FACTS = ["The library on Elm Street opens at nine", "Granite is an igneous rock",
         "Melanie painted a lake at sunrise in Oregon", "Caroline moved to Sweden in 2022 to study counseling",
         "The adoption agency in Portland approved the application", "The train to Leeds leaves from platform four"]
CHATTER = ["So nice, thanks!", "That is so nice!", "Thanks, so nice!"]
MORE_CHATTER = ["Wow, that is so cool!", "Thanks so much, that is so sweet!", "Aww, that is so nice of you!",
                "So cool, thanks!", "That is awesome, thanks!", "Wow, so sweet!"]


def test_words_said_once_tell_small_talk_from_facts_in_any_store():
    sets = [token_set(t) for t in FACTS + CHATTER]
    words = information_words(sets)
    assert words.tolist() == pytest.approx((information(sets) / word_unit(len(sets))).tolist())
    assert [bool(x < 3.0) for x in words] == [False] * len(FACTS) + [True] * len(CHATTER)
    # Chatter three times the facts: the facts' measure hardly moves and they stay above the
    # line, while "half of the median memory" has become half of a piece of chatter.
    noisy = sets + [token_set(t) for t in MORE_CHATTER * 3]
    w2 = information_words(noisy)[: len(sets)]
    assert [bool(x < 3.0) for x in w2] == [False] * len(FACTS) + [True] * len(CHATTER)
    assert np.median(w2[: len(FACTS)]) == pytest.approx(np.median(words[: len(FACTS)]), rel=0.25)
    rel = relative_information(noisy)[: len(sets)]
    assert not any(bool(x < 0.5) for x in rel[len(FACTS):])  # the median's rule drifts: no chatter is low


def test_a_reference_prices_other_texts_and_what_two_texts_share():
    sets = [token_set(t) for t in FACTS + CHATTER]
    ref = InformationReference.of(sets)
    assert ref.words(sets[2]) == pytest.approx(float(information_words(sets)[2]))
    back = InformationReference.from_dict(ref.to_dict())
    assert back == ref and back.words(token_set("the lake in Oregon")) == ref.words(token_set("the lake in Oregon"))
    # "thanks!" finding other thanks shares words chatter uses all the time; a question
    # about the painting shares the painting's rare words.
    ref = InformationReference.of(sets + [token_set(t) for t in MORE_CHATTER * 3])
    assert ref.shared_words(token_set("Thanks, that's nice!"), sets[len(FACTS)]) < 1.0
    assert ref.shared_words(token_set("Where did Melanie paint the lake?"), sets[2]) >= 1.0
    assert not rehearses(ref, token_set("Thanks!"), sets[len(FACTS)], min_shared=1.0)
    assert rehearses(ref, token_set("Where did Melanie paint the lake?"), sets[2], min_shared=1.0)
    assert InformationReference(0).words({"a"}) == 0.0
