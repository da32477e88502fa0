"""Score fusion: normalisations, recipes, neighbour expansion and speaker preference."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.retrieval.fusion import (
    DEFAULT_RECIPE,
    RECIPES,
    FusionRecipe,
    boost,
    candidate_union,
    expand_to_neighbours,
    fuse,
    get_recipe,
    neighbour_index,
    normalize,
    rank_pool,
    rrf_scores,
    spread_exchanges,
)


def test_normalisations_on_a_known_list():
    s = np.array([2.0, 4.0, 6.0])
    assert normalize(s, "max").tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert normalize(s, "minmax").tolist() == pytest.approx([0.0, 0.5, 1.0])
    sd = s.std()
    assert normalize(s, "dbsf").tolist() == pytest.approx(((s - (4 - 3 * sd)) / (6 * sd)).tolist())
    assert normalize(s, "zscore").tolist() == pytest.approx(((s - 4) / sd).tolist())
    with pytest.raises(ConfigError):
        normalize(s, "softmax")


def test_absent_entries_get_the_no_match_value():
    s = np.array([0.0, 3.0, 5.0])
    present = s > 0
    assert normalize(s, "minmax", present=present).tolist() == pytest.approx([0.0, 0.0, 1.0])
    z = normalize(s, "zscore", present=present)
    assert z[0] == pytest.approx((0 - 4.0) / 1.0)  # the z of a BM25 score of 0
    assert normalize(np.array([1.0, 1.0]), "minmax").tolist() == [1.0, 1.0]
    with pytest.raises(ValidationError):
        normalize(s, "minmax", present=np.array([True]))


def test_rrf_adds_reciprocal_ranks():
    out = rrf_scores([np.array([2, 0]), np.array([0])], 3, k=60)
    assert out.tolist() == pytest.approx([1 / 62 + 1 / 61, 0.0, 1 / 61])


def test_today_lets_the_best_keyword_match_outrank_a_much_closer_dense_match():
    # Candidate 0: dense 0.60, no keyword; 1: dense 0.30, the best BM25 match; 2: good on both.
    dense, lexical = np.array([0.60, 0.30, 0.55, 0.20]), np.array([0.0, 9.0, 6.0, 3.0])
    today = fuse(dense, lexical, get_recipe("today"))
    assert int(np.argmax(today)) == 1
    # Relative score fusion puts both signals on one range: the strong dense match and the
    # candidate good on both now beat the keyword-only one.
    rel = fuse(dense, lexical, get_recipe("minmax"))
    assert int(np.argmax(rel)) == 2 and rel[0] > 0.0


def test_fuse_refuses_unaligned_inputs_and_handles_empty():
    with pytest.raises(ValidationError):
        fuse(np.zeros(2), np.zeros(3), get_recipe("minmax"))
    assert fuse(np.zeros(0), np.zeros(0), get_recipe("minmax")).size == 0


def test_a_lexical_factor_discounts_one_match_and_leaves_the_others_scale():
    recipe = get_recipe("today")  # 0.5 cosine + 0.5 BM25 / best BM25
    d, lx = np.array([0.5, 0.5, 0.5]), np.array([4.0, 1.0, 0.0])
    plain = fuse(d, lx, recipe)
    assert plain.tolist() == pytest.approx([0.75, 0.375, 0.25])
    discounted = fuse(d, lx, recipe, np.array([0.0, 1.0, 1.0]))
    assert discounted.tolist() == pytest.approx([0.25, 0.375, 0.25])  # the second keeps 1/4, not 1
    with pytest.raises(ValidationError):
        fuse(d, lx, recipe, np.ones(2))


def test_rrf_recipe_ignores_score_magnitudes():
    a = fuse(np.array([0.9, 0.1]), np.array([0.0, 1.0]), get_recipe("rrf"))
    b = fuse(np.array([0.2, 0.1]), np.array([0.0, 100.0]), get_recipe("rrf"))
    assert a.tolist() == pytest.approx(b.tolist())


def test_candidate_union_keeps_dense_first_and_only_keyword_matches():
    r = FusionRecipe("t", dense_candidates=2, lexical_candidates=3)
    dense = np.array([0.1, 0.9, 0.8, 0.2])
    lexical = np.array([5.0, 0.0, 0.0, 1.0])
    assert candidate_union(dense, lexical, r).tolist() == [1, 2, 0, 3]


def test_neighbour_expansion_lifts_the_reply_of_a_strong_hit():
    # Turns 0-3 of one session; turn 1 matches strongly, its reply (turn 2) weakly, turn 3 a bit more.
    scores = np.array([0.1, 1.0, 0.2, 0.3])
    nb = neighbour_index(["s"] * 4, [0, 1, 2, 3], radius=1)
    assert nb.tolist() == [[-1, 1], [0, 2], [1, 3], [2, -1]]
    out = expand_to_neighbours(scores, nb, 0.5)
    assert out[2] > out[3]  # the reply now outranks the unrelated turn
    assert int(np.argmax(out)) == 1  # the strong hit stays first
    assert expand_to_neighbours(scores, nb, 0.0).tolist() == pytest.approx(scores.tolist())  # non-negative: kept
    shifted = expand_to_neighbours(scores - 0.5, nb, 0.0)
    assert shifted.min() == 0.0 and shifted.tolist() == pytest.approx((scores - 0.1).tolist())


def test_a_preference_decides_between_candidates_that_tie():
    out = boost(np.array([0.7, 0.7, 0.7]), np.array([False, True, False]), 0.25)
    assert out.tolist() == pytest.approx([0.7, 0.95, 0.7])


def test_neighbours_are_taken_within_a_session_and_among_candidates_only():
    nb = neighbour_index(["a", "b", "a"], [4, 5, 6], radius=2)
    # candidate 0 is turn 4 of a: turn 6 of a is two positions on; turn 5 of b is another session
    assert nb[0].tolist() == [-1, -1, -1, 2]


def test_speaker_preference_is_a_bonus_not_a_filter():
    scores = np.array([1.0, 0.95, 0.2])
    out = boost(scores, np.array([False, True, False]), 0.1)
    assert out[1] > out[0]  # a close call goes to the named speaker
    out_far = boost(np.array([1.0, 0.3]), np.array([False, True]), 0.1)
    assert out_far[0] > out_far[1]  # a clearly better turn of the other speaker stays ahead
    with pytest.raises(ValidationError):
        boost(scores, np.array([True]), 0.1)


def test_recipes_are_frozen_validated_and_registered_by_name():
    assert set(RECIPES) >= {"today", "rrf", "minmax", "dbsf", "zscore", DEFAULT_RECIPE}
    r = get_recipe("minmax")
    with pytest.raises(AttributeError):
        r.name = "x"  # type: ignore[misc]
    assert r.with_(neighbour_weight=0.5).neighbour_weight == 0.5 and r.neighbour_weight == 0.0
    assert r.as_dict()["normalization"] == "minmax"
    with pytest.raises(ConfigError):
        get_recipe("nope")
    with pytest.raises(ConfigError):
        FusionRecipe("bad", normalization="softmax")
    with pytest.raises(ConfigError):
        FusionRecipe("bad", dense_view="sideways")
    with pytest.raises(ConfigError):
        FusionRecipe("bad", lexical_weight=-1)
    with pytest.raises(ConfigError):
        FusionRecipe("bad", dense_candidates=0)


def test_rank_pool_of_the_conversation_recipe_lifts_a_short_reply_by_its_question():
    # One session: a question about painting, its short reply (no shared words), small talk.
    # Dense and BM25 both favour the question (index 0); the reply (1) scores low on its own.
    recipe = get_recipe("conversation")
    dense = np.array([0.62, 0.20, 0.30, 0.28])
    lexical = np.array([7.0, 0.0, 1.0, 0.0])
    sessions, positions = ["1"] * 4, [0, 1, 2, 3]
    order, _ = rank_pool(recipe, dense, lexical, sessions=sessions, positions=positions)
    assert order[:2].tolist() == [0, 1]
    plain, _ = rank_pool(recipe.with_(neighbour_weight=0.0), dense, lexical, sessions=sessions, positions=positions)
    assert plain[:2].tolist() == [0, 2]  # without expansion the reply is not second


def test_rank_pool_applies_the_speaker_and_time_preferences_only_with_masks():
    recipe = get_recipe("minmax").with_(speaker_bonus=0.1, time_bonus=0.25)
    dense, lexical = np.array([0.50, 0.48, 0.10]), np.array([0.0, 0.0, 0.0])
    base, _ = rank_pool(recipe, dense, lexical)
    assert base.tolist() == [0, 1, 2]
    by_speaker, _ = rank_pool(recipe, dense, lexical, speaker_named=np.array([False, True, False]))
    assert by_speaker.tolist() == [1, 0, 2]
    by_time, _ = rank_pool(recipe, dense, lexical, in_window=np.array([False, False, True]))
    assert by_time.tolist() == [0, 1, 2]  # a bonus, not a filter: the far weaker turn stays last
    by_time, _ = rank_pool(recipe, dense, lexical, in_window=np.array([False, True, False]))
    assert by_time.tolist() == [1, 0, 2]


def test_spread_exchanges_lowers_the_neighbours_of_placed_turns():
    # Session a: turns 0-2 all strong (one exchange); session b: turn 5, weaker; a note.
    scores = np.array([1.0, 0.95, 0.9, 0.8, 0.3])
    sessions = ["a", "a", "a", "b", None]
    positions = [4, 5, 6, 5, -1]
    order, lowered = spread_exchanges(scores, sessions, positions, 0.25)
    assert order.tolist() == [0, 2, 3, 1, 4]
    # a's turn 5 neighbours both placed turns (4, then 6): x 0.75 twice; turn 6 was placed
    # before its neighbour 5: x 1; b's turn 5 is another session: x 1.
    assert lowered.tolist() == pytest.approx([1.0, 0.95 * 0.75 ** 2, 0.9, 0.8, 0.3])
    assert np.diff(lowered[order]).max() <= 0  # the new order is by the lowered scores
    plain, same = spread_exchanges(scores, sessions, positions, 0.0)
    assert plain.tolist() == [0, 1, 2, 3, 4] and same.tolist() == scores.tolist()


def test_spread_exchanges_counts_every_placed_neighbour_and_stops_at_places():
    scores = np.array([1.0, 0.9, 0.99, 0.5])
    sessions = ["a", "a", "a", "b"]
    positions = [0, 1, 2, 0]
    order, lowered = spread_exchanges(scores, sessions, positions, 0.5, places=2)
    # 0 placed -> 1 x 0.5; 2 placed -> 1 x 0.5 again (0.225); b's turn is next.
    assert order.tolist() == [0, 2, 3, 1]
    assert lowered[1] == pytest.approx(0.225)
    wide, _ = spread_exchanges(np.array([1.0, 0.9, 0.8]), ["a", "a", "b"], [0, 2, 0], 0.5, radius=2)
    assert wide.tolist() == [0, 2, 1]
