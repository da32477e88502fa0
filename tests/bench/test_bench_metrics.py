from __future__ import annotations

import math

import numpy as np
import pytest

from zenbrain.bench.metrics import (
    aggregate,
    bootstrap_ci,
    capped_recall_at_k,
    dedupe,
    evidence_recall_at_k,
    hit_at_k,
    hits_at_k,
    lme_ndcg_at_k,
    locomo_metric_names,
    locomo_question_metrics,
    longmemeval_metric_names,
    longmemeval_question_metrics,
    ndcg_at_k,
    paper_f1_at_k,
    paper_recall_at_k,
    percentile,
    precision_at_k,
    recall_all_at_k,
    recall_any_at_k,
    reciprocal_rank,
    turns_to_sessions,
)

RANKED = ["a", "b", "c", "d", "e"]
GOLD = {"b", "e", "z"}  # "z" is never retrieved


def test_counts_recall_hit_precision():
    assert hits_at_k(RANKED, GOLD, 5) == 2
    assert evidence_recall_at_k(RANKED, GOLD, 5) == pytest.approx(2 / 3)
    assert paper_recall_at_k(RANKED, GOLD, 5) == pytest.approx(2 / 3)
    assert evidence_recall_at_k(RANKED, GOLD, 2) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(RANKED, GOLD, 1) == 0.0
    assert hit_at_k(RANKED, GOLD, 1) == 0.0
    assert hit_at_k(RANKED, GOLD, 2) == 1.0
    assert precision_at_k(RANKED, GOLD, 5) == pytest.approx(0.4)
    assert precision_at_k(RANKED, GOLD, 10) == pytest.approx(0.2)  # k is the denominator
    assert precision_at_k(RANKED, GOLD, 2) == pytest.approx(0.5)
    assert capped_recall_at_k(RANKED, GOLD, 5) == pytest.approx(2 / 3)  # min(5, 3) = 3
    assert capped_recall_at_k(RANKED, GOLD, 2) == pytest.approx(1 / 2)  # min(2, 3) = 2
    # P = 0.4, R = 2/3 -> F1 = 2 * 0.4 * (2/3) / (0.4 + 2/3) = 0.5
    assert paper_f1_at_k(RANKED, GOLD, 5) == pytest.approx(0.5)
    assert paper_f1_at_k(RANKED, GOLD, 1) == 0.0


def test_reciprocal_rank():
    assert reciprocal_rank(RANKED, GOLD) == pytest.approx(0.5)
    assert reciprocal_rank(RANKED, {"e"}) == pytest.approx(0.2)
    assert reciprocal_rank(RANKED, {"e"}, 4) == 0.0
    assert reciprocal_rank([], {"e"}) == 0.0


def test_ndcg_by_hand():
    # hits at ranks 2 and 5: DCG = 1/log2(3) + 1/log2(6); ideal = 3 ones: 1 + 1/log2(3) + 1/log2(4)
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert ndcg_at_k(RANKED, GOLD, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(RANKED, GOLD, 5) == pytest.approx(0.477623, abs=1e-6)
    # k = 2: one hit at rank 2; ideal = min(2, 3) = 2 ones
    assert ndcg_at_k(RANKED, GOLD, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["b"], {"b"}, 10) == 1.0
    assert ndcg_at_k(["x", "b"], {"b"}, 10) == pytest.approx(1 / math.log2(3))


def test_lme_ndcg_uses_official_discount():
    ranked = ["x", "g1", "y", "g2"]
    gold = {"g1", "g2"}
    # ranks 2 and 4 -> weights 1/log2(2) = 1 and 1/log2(4) = 0.5; ideal = 1 + 1 = 2
    assert lme_ndcg_at_k(ranked, gold, 4) == pytest.approx(0.75)
    # the standard discount gives a different value
    std = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(ranked, gold, 4) == pytest.approx(std)
    assert lme_ndcg_at_k(ranked, gold, 1) == 0.0
    assert lme_ndcg_at_k(["g1", "g2"], gold, 5) == 1.0
    # ranks 1 and 3: (1 + 1/log2 3) / 2
    assert lme_ndcg_at_k(["g1", "x", "g2"], gold, 3) == pytest.approx((1 + 1 / math.log2(3)) / 2)


def test_recall_any_all():
    assert recall_any_at_k(RANKED, GOLD, 5) == 1.0
    assert recall_all_at_k(RANKED, GOLD, 5) == 0.0
    assert recall_all_at_k(RANKED, {"b", "e"}, 5) == 1.0
    assert recall_all_at_k(RANKED, {"b", "e"}, 4) == 0.0
    assert recall_any_at_k(RANKED, {"e"}, 4) == 0.0


def test_duplicates_count_once():
    ranked = ["b", "b", "b", "c", "e"]
    assert dedupe(ranked) == ["b", "c", "e"]
    assert hits_at_k(ranked, GOLD, 2) == 1  # top 2 after dedupe: b, c
    assert hits_at_k(ranked, GOLD, 3) == 2
    assert precision_at_k(["b", "b"], {"b"}, 2) == 0.5


def test_invalid_inputs():
    with pytest.raises(ValueError):
        evidence_recall_at_k(RANKED, set(), 5)
    with pytest.raises(ValueError):
        ndcg_at_k(RANKED, [], 5)
    with pytest.raises(ValueError):
        hit_at_k(RANKED, GOLD, 0)
    assert evidence_recall_at_k([], GOLD, 5) == 0.0


def test_turns_to_sessions():
    mapping = {"q::s1::t0": "s1", "q::s2::t3": "s2", "q::s1::t5": "s1"}
    ranked = ["q::s1::t0", "unknown", "q::s2::t3", "q::s1::t5"]
    assert turns_to_sessions(ranked, mapping) == ["s1", "s2"]
    assert turns_to_sessions(ranked, lambda t: t.split("::")[1] if "::" in t else None) == ["s1", "s2"]


def test_locomo_question_metrics_names_and_values():
    m = locomo_question_metrics(RANKED, GOLD, (2, 5))
    assert set(m) == set(locomo_metric_names((2, 5)))
    assert m["evidence_recall@5"] == pytest.approx(2 / 3)
    assert m["hit@2"] == 1.0
    assert m["precision@2"] == 0.5
    assert m["mrr@5"] == 0.5
    assert m["capped_recall@2"] == 0.5


def test_longmemeval_question_metrics():
    ranked = ["q::s3::t1", "q::s1::t0", "q::s3::t0", "q::s2::t2"]
    mapping = {t: t.split("::")[1] for t in ranked}
    m = longmemeval_question_metrics(
        ranked, gold_sessions={"s1", "s2"}, gold_turns={"q::s1::t0"}, turn_to_session=mapping, ks=(2, 5)
    )
    assert set(m) == set(longmemeval_metric_names((2, 5)))
    # sessions ranked: s3, s1, s2
    assert m["session_recall_any@2"] == 1.0
    assert m["session_recall_all@2"] == 0.0
    assert m["session_recall_all@5"] == 1.0
    assert m["session_ndcg@2"] == pytest.approx(1 / 2)  # rank 2 weight 1; ideal 1 + 1
    assert m["session_ndcg@5"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert m["turn_recall_any@2"] == 1.0 and m["turn_recall_all@2"] == 1.0
    assert m["turn_ndcg@5"] == 1.0  # rank 2 is undiscounted in the official NDCG
    only_sessions = longmemeval_question_metrics(
        ranked, gold_sessions={"s9"}, gold_turns=(), turn_to_session=mapping, ks=(5,)
    )
    assert set(only_sessions) == {"session_recall_any@5", "session_recall_all@5", "session_ndcg@5"}
    assert only_sessions["session_recall_any@5"] == 0.0


def test_bootstrap_ci():
    values = [0.0, 1.0] * 50
    ci = bootstrap_ci(values, seed=1)
    assert ci.mean == 0.5 and ci.n == 100
    assert 0.38 < ci.low < 0.45 and 0.55 < ci.high < 0.62
    assert bootstrap_ci(values, seed=1) == ci  # seeded
    bca = bootstrap_ci(values, seed=1, method="BCa", n_resamples=999)
    assert bca.low < 0.5 < bca.high and bca.method == "BCa"
    const = bootstrap_ci([0.3] * 7)
    assert (const.mean, const.low, const.high) == (0.3, 0.3, 0.3)
    one = bootstrap_ci([0.7])
    assert one.mean == 0.7 and one.low is None and one.high is None
    empty = bootstrap_ci([])
    assert empty.n == 0 and math.isnan(empty.mean)
    assert bootstrap_ci(np.array([1.0, np.nan, 0.0]), seed=0).n == 2


def test_percentile():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([], 50) is None


def test_aggregate_overall_and_groups():
    records = [
        {"group": "a", "metrics": {"r": 1.0, "h": 1.0}},
        {"group": "a", "metrics": {"r": 0.0, "h": 0.0}},
        {"group": "b", "metrics": {"r": 0.5, "h": 1.0}},
        {"group": "b", "metrics": {}},
    ]
    agg = aggregate(records, ["r", "h", "missing"], group_by="group", ci_metrics=["r"], seed=3)
    assert agg["overall"]["r"]["mean"] == 0.5 and agg["overall"]["r"]["n"] == 3
    assert "low" in agg["overall"]["r"] and "low" not in agg["overall"]["h"]
    assert agg["overall"]["h"]["mean"] == pytest.approx(2 / 3)
    assert "missing" not in agg["overall"]
    assert agg["groups"]["a"]["r"]["mean"] == 0.5 and agg["groups"]["b"]["r"]["n"] == 1
    assert agg["groups"]["b"]["r"]["low"] is None
    assert aggregate(records, ["r"])["groups"] == {}
