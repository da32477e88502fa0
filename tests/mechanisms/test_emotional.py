import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import ebbinghaus, emotional
from zenbrain.mechanisms.emotional import EmotionalParams

FAST = settings(derandomize=True, max_examples=80, deadline=None, database=None)


def norm(t: float, kappa: float = 1.0) -> float:
    return t / math.sqrt(t * t + kappa)


# ---- golden values -------------------------------------------------------------------

def test_single_word_golden():
    # "love": valence 0.85, arousal 0.7 ; no significance ; intensity peak 0.7 is not > 0.7
    tag = emotional.tag("I love it")
    assert tag.valence == pytest.approx(norm(0.85))
    assert tag.arousal == pytest.approx(0.7)
    assert tag.significance == 0.0
    assert tag.consolidation_weight == pytest.approx(0.4 * 0.7)
    assert tag.encoding_multiplier == pytest.approx(1 + 0.5 * 0.28)
    assert tag.decay_multiplier == pytest.approx(1 + 2 * 0.7)
    assert tag.intensity == pytest.approx(norm(0.85) * 0.7)
    assert tag.hits == 1


def test_neutral_text_is_not_emotional():
    tag = emotional.tag("The report lists three columns of figures.")
    assert (tag.valence, tag.arousal, tag.significance) == (0.0, 0.0, 0.0)
    assert tag.encoding_multiplier == 1.0 and tag.decay_multiplier == 1.0 and tag.hits == 0


def test_negation_flips_and_halves():
    # "not happy": -0.5 * 0.75 ; arousal 0.55 * 0.7
    tag = emotional.tag("I am not happy")
    assert tag.valence == pytest.approx(norm(-0.375))
    assert tag.arousal == pytest.approx(0.385)
    # negation stops at a clause boundary
    assert emotional.tag("no, wonderful").valence == pytest.approx(norm(0.8))


def test_negation_cancels_significance_but_phrases_count():
    assert emotional.tag("This is not important").significance == 0.0
    # "don't forget" (0.75), "daughter" (0.5), "allergic" (0.9): max 0.9 * (1 + 0.1 * 2) -> capped 1
    tag = emotional.tag("Don't forget: my daughter is allergic to peanuts.")
    assert tag.significance == 1.0 and tag.hits == 3


def test_intensifier_and_dampener():
    # "very good": 0.5 * 1.3 ; arousal min(1, 0.3 * 1.3 + 0.1)
    tag = emotional.tag("very good")
    assert tag.valence == pytest.approx(norm(0.65))
    assert tag.arousal == pytest.approx(0.49)
    # "slightly annoying": -0.5 * 0.6 ; arousal 0.55 * 0.6
    tag = emotional.tag("slightly annoying")
    assert tag.valence == pytest.approx(norm(-0.3))
    assert tag.arousal == pytest.approx(0.33)
    assert emotional.tag("kind of annoying").valence == pytest.approx(norm(-0.3))


def test_but_clause_dominates():
    # "great" (0.6) before "but" counts 0.5x, "sad" (-0.65) after counts 1.5x
    tag = emotional.tag("The trip was great but I am sad")
    assert tag.valence == pytest.approx(norm(0.6 * 0.5 - 0.65 * 1.5))


def test_punctuation_and_caps_cues():
    # "!!!": valence x (1 + 0.15 * 3); arousal + 0.3.  "TERRIFIED" in caps: x1.5 valence, arousal x1.3 capped 1
    tag = emotional.tag("I was TERRIFIED!!!")
    assert tag.valence == pytest.approx(norm(-0.85 * 1.5 * 1.45))
    assert tag.arousal == 1.0
    # significance floor: intensity 1.0 > 0.7 -> >= 0.6
    assert tag.significance == pytest.approx(0.6)
    # questions add up to 0.2 arousal, shouting 0.3
    assert emotional.tag("what? why? how? when? where?").arousal == pytest.approx(0.2)
    assert emotional.tag("WHERE ARE THE KEYS").arousal == pytest.approx(0.3)
    # acronyms in ordinary text are not shouting
    assert emotional.tag("The API returned JSON from AWS").arousal == 0.0


def test_inflections_are_found():
    assert emotional.tag("we loved it").valence == pytest.approx(norm(0.85))
    assert emotional.tag("she is worrying").valence == pytest.approx(norm(-0.5))
    assert emotional.tag("he was panicked").arousal == pytest.approx(0.95)


def test_emoticons():
    assert emotional.tag("see you :)").valence == pytest.approx(norm(0.5))
    assert emotional.tag("see you :(").valence == pytest.approx(norm(-0.5))


def test_decay_multiplier_agrees_with_ebbinghaus():
    for text in ["I love it", "Don't forget the deadline!", "meh", "The car crashed and I was terrified"]:
        tag = emotional.tag(text)
        m = ebbinghaus.emotional_multiplier(arousal=tag.arousal, valence=tag.valence, significance=tag.significance)
        assert tag.decay_multiplier == pytest.approx(m)


def test_tag_many_arrays():
    out = emotional.tag_many(["I love it", "plain text", "terrible news!"])
    assert set(out) >= {"valence", "arousal", "significance", "decay_multiplier", "encoding_multiplier"}
    assert out["valence"].shape == (3,)
    assert out["valence"][0] == pytest.approx(norm(0.85)) and out["valence"][1] == 0.0 and out["valence"][2] < 0


def test_vectorised_decay_multiplier():
    m = emotional.decay_multiplier(valence=np.array([0.0, -0.5, 0.2]), arousal=np.array([0.0, 0.1, 0.9]))
    np.testing.assert_allclose(m, [1.0, 2.0, 2.8])


def test_lexicons_are_well_formed():
    assert len(emotional.AFFECT) >= 300 and len(emotional.SIGNIFICANCE) >= 100
    for word, (v, a) in emotional.AFFECT.items():
        assert word == word.lower() and -1.0 <= v <= 1.0 and 0.0 <= a <= 1.0
    for word, w in emotional.SIGNIFICANCE.items():
        assert word == word.lower() and 0.0 <= w <= 1.0


def test_refuses_non_text():
    with pytest.raises(ValidationError):
        emotional.tag(None)  # type: ignore[arg-type]


# ---- properties ----------------------------------------------------------------------

words = st.sampled_from(
    sorted(emotional.AFFECT)[:80] + sorted(emotional.SIGNIFICANCE)[:40]
    + ["not", "very", "but", "the", "a", "slightly", "kind", "of", "!", "?", ",", ":)", "LOVE", "HATE"]
)


@FAST
@given(st.lists(words, max_size=25).map(" ".join) | st.text(max_size=200))
def test_outputs_always_in_range_and_deterministic(text):
    tag = emotional.tag(text)
    assert -1.0 <= tag.valence <= 1.0
    assert 0.0 <= tag.arousal <= 1.0
    assert 0.0 <= tag.significance <= 1.0
    assert 0.0 <= tag.consolidation_weight <= 1.0
    assert 1.0 <= tag.encoding_multiplier <= 1.5
    assert 1.0 <= tag.decay_multiplier <= 3.0
    assert 0.0 <= tag.intensity <= 1.0
    assert emotional.tag(text) == tag


@FAST
@given(st.lists(words, min_size=1, max_size=15).map(" ".join), st.integers(0, 6))
def test_exclamations_never_lower_arousal(text, k):
    assert emotional.tag(text + "!" * k).arousal >= emotional.tag(text).arousal - 1e-12


# ---- params --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs",
    [{"kappa": 0.0}, {"negation_factor": 1.5}, {"w_arousal": 0.6, "w_significance": 0.6}, {"decay_cap": 0.5},
     {"encoding_boost": -1.0}],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        EmotionalParams(**kwargs)


def test_custom_params_take_effect():
    p = EmotionalParams(decay_cap=2.0, encoding_boost=1.0)
    tag = emotional.tag("I love it", params=p)
    assert tag.decay_multiplier == pytest.approx(1 + 0.7)
    assert tag.encoding_multiplier == pytest.approx(1.28)
