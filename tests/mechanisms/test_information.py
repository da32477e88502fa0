"""How much a memory says: summed idf of its words, relative to the store's median."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zenbrain.mechanisms.information import information, relative_information
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
