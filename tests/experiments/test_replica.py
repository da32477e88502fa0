"""The replica of the paper's simulation protocol (not zenbrain) pinned against the
published figures: full 10-seed tables, to the paper's printed precision, to the digits
REFERENCE.md gives, and to 1e-9 against the authors' full-precision result files."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from zenbrain.experiments import published as pub
from zenbrain.experiments.replica import LABEL, SEEDS, run_replica
from zenbrain.experiments.replica.report import (
    KNOWN_DISCREPANCIES,
    comparison_rows,
    format_report,
    printed_match,
)

TOL = 1e-9


@lru_cache(maxsize=1)
def _full() -> dict:
    return run_replica("all", SEEDS)


@pytest.fixture(scope="module")
def full() -> dict:
    return _full()


def _decimals(x: float) -> int:
    text = repr(float(x))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def _row(results: dict, cond: str, key: str) -> dict:
    rows = results["ablation"][cond]["rows"]
    return rows[key] if key in ("full", "no_pma", "bare") else rows[f"-{key}"]


def test_label_and_shape(full):
    assert full["label"] == LABEL == "the paper's simulation protocol, not zenbrain"
    assert full["seeds"] == list(SEEDS)
    assert set(full["ablation"]) == {"moderate", "challenging", "stress"}
    for cond in full["ablation"].values():
        assert len(cond["rows"]) == 18  # full, 15 removals, no_pma, bare
    json.dumps(full)  # plain JSON-able


def test_every_printed_figure_reproduces_except_the_documented_ones(full):
    rows = comparison_rows(full)
    assert len(rows) > 300
    failing = {(r["table"], r["row"], r["metric"]) for r in rows if not r["match"]}
    assert failing == set(KNOWN_DISCREPANCIES)
    for r in rows:
        if not r["match"]:
            assert r["note"]


@pytest.mark.parametrize("cond", ["moderate", "challenging", "stress"])
def test_ablation_tables_printed_precision(full, cond):
    table = {"moderate": pub.PAPER_ABLATION_MODERATE, "challenging": pub.PAPER_ABLATION_CHALLENGING,
             "stress": pub.PAPER_ABLATION_STRESS}[cond]  # fmt: skip
    for key, figures in table.items():
        rep = _row(full, cond, key)
        for metric, printed in figures.items():
            value = rep["delta"]["quality_rel"] * 100 if metric == "delta_q_pct" else rep[metric]["mean"]
            assert printed_match(value, printed, 1 if metric == "delta_q_pct" else 3), (cond, key, metric, value, printed)


def test_gradient_table(full):
    for key, per_cond in pub.PAPER_GRADIENT_DELTA_Q_PCT.items():
        for cond, printed in per_cond.items():
            value = _row(full, cond, key)["delta"]["quality_rel"] * 100
            assert printed_match(value, printed, 1), (key, cond, value, printed)


def test_significance_stars(full):
    for cond, starred in pub.PAPER_STARRED.items():
        for key in starred:
            assert _row(full, cond, key)["wilcoxon"]["p"] <= pub.PAPER_WILCOXON_P_BOUND
    # The protocol's p is the same floor for every ten-seed one-directional change.
    assert _row(full, "stress", "priority_map")["wilcoxon"]["p"] == _row(full, "stress", "bare")["wilcoxon"]["p"]


@pytest.mark.parametrize("cond", ["moderate", "challenging", "stress"])
def test_ablation_against_authors_result_files_1e9(full, cond):
    ref = pub.AUTHORS_RESULT_FILES[cond]
    for key, (ret, p5, ndcg, dq) in ref["rows"].items():
        rep = _row(full, cond, key)
        assert rep["retention"]["mean"] == pytest.approx(ret, abs=TOL)
        assert rep["p5"]["mean"] == pytest.approx(p5, abs=TOL)
        assert rep["ndcg5"]["mean"] == pytest.approx(ndcg, abs=TOL)
        assert rep["delta"]["quality_rel"] == pytest.approx(dq, abs=TOL)
    f = ref["rows"]["full"]
    for key in ref["unchanged"]:
        rep = _row(full, cond, key)
        assert (rep["retention"]["mean"], rep["p5"]["mean"], rep["ndcg5"]["mean"]) == pytest.approx(f[:3], abs=TOL)
        assert rep["delta"]["quality_rel"] == 0.0
    for key, d in ref.get("cohens_d", {}).items():
        assert _row(full, cond, key)["cohens_d"] == pytest.approx(d, abs=1e-6)
    if "quality_full" in ref:
        assert full["ablation"][cond]["rows"]["full"]["quality"]["mean"] == pytest.approx(ref["quality_full"], abs=TOL)


def test_reference_md_verified_values(full):
    v = pub.REFERENCE_VERIFIED
    ab = full["ablation"]

    def check(value: float, key: str) -> None:
        assert printed_match(value, v[key], _decimals(v[key])), (key, value, v[key])

    m, c, s = (ab[k]["rows"] for k in ("moderate", "challenging", "stress"))
    check(m["full"]["retention"]["mean"], "moderate_full_retention")
    check(m["full"]["p5"]["mean"], "moderate_full_p5")
    check(m["full"]["ndcg5"]["mean"], "moderate_full_ndcg5")
    check(m["-simulation_selection_sleep"]["delta"]["quality_rel"] * 100, "moderate_sleep_delta_q_pct")
    check(m["-simulation_selection_sleep"]["retention"]["mean"], "moderate_sleep_retention")
    check(m["-neuromodulator"]["delta"]["quality_rel"] * 100, "moderate_neuromodulator_delta_q_pct")
    check(m["-priority_map"]["delta"]["quality_rel"] * 100, "moderate_priority_map_delta_q_pct")
    check(m["no_pma"]["delta"]["quality_rel"] * 100, "moderate_no_pma_delta_q_pct")
    check(m["bare"]["retention"]["mean"], "moderate_bare_retention")
    check(m["bare"]["p5"]["mean"], "moderate_bare_p5")
    check(m["bare"]["delta"]["quality_rel"] * 100, "moderate_bare_delta_q_pct")
    check(c["full"]["retention"]["mean"], "challenging_full_retention")
    check(c["full"]["p5"]["mean"], "challenging_full_p5")
    check(s["full"]["retention"]["mean"], "stress_full_retention")
    check(s["full"]["p5"]["mean"], "stress_full_p5")
    check(s["full"]["quality"]["mean"], "stress_full_quality")
    check(s["bare"]["p5"]["mean"], "stress_bare_p5")
    check(s["bare"]["delta"]["quality_rel"] * 100, "stress_bare_delta_q_pct")
    for key in ("triple_copy", "vmpfc_fsrs", "two_factor_hebbian", "dual_process_cot", "ib_budget"):
        check(s[f"-{key}"]["p5"]["mean"], "stress_collapsed_p5")  # the identical collapse
    for key, dq in pub.REFERENCE_VERIFIED_STRESS_DELTA_Q_PCT.items():
        assert printed_match(s[f"-{key}"]["delta"]["quality_rel"] * 100, dq, 1)
    for key, dq in pub.REFERENCE_VERIFIED_CHALLENGING_DELTA_Q_PCT.items():
        rep = c[key] if key == "bare" else c[f"-{key}"]
        assert printed_match(rep["delta"]["quality_rel"] * 100, dq, _decimals(dq))

    cas = full["cascade"]
    check(cas["full_retention"]["mean"], "cascade_full_retention")
    check(cas["foundational_only_retention"]["mean"], "cascade_foundational_only_retention")
    check(cas["bare_retention"]["mean"], "cascade_bare_retention")
    check(cas["no_sleep_retention"]["mean"], "cascade_no_sleep_retention")
    check(cas["emotional_gap_day60"]["mean"], "cascade_emotional_gap_day60")
    check(cas["emotional_timeline"]["neutral"][-1], "cascade_neutral_day60")
    check(cas["emotional_timeline"]["emotional"][-1], "cascade_emotional_day60")
    check(cas["fiedler"]["delta"]["mean"], "cascade_fiedler_delta")
    check(cas["fiedler"]["relative_rise"] * 100, "cascade_fiedler_rise_pct")

    comp = full["competitive"]["systems"]
    check(comp["static_rag"]["p5"]["mean"], "competitive_static_p5")
    check(comp["simple_memory"]["p5"]["mean"], "competitive_simple_p5")
    check(comp["full_zenbrain"]["p5"]["mean"], "competitive_full_p5")

    pma = full["pma_suite"]
    check(pma["neuromodulator_drift"]["mean"], "pma_drift")
    check(pma["da_5ht_opposition"]["mean"], "pma_da_5ht_opposition")
    check(pma["reconsolidation_pe_mode_accuracy"]["mean"], "pma_recon_accuracy")
    assert pma["reconsolidation_pe_mode_accuracy"]["hand_written_correct"] == v["pma_recon_hand_written_correct"]
    check(pma["triple_copy"]["rows"]["1h"]["medium"], "pma_triple_copy_1h_medium")
    check(pma["triple_copy"]["rows"]["1h"]["fast"], "pma_triple_copy_1h_fast")
    check(pma["priority_map"]["ndcg_at_10"]["mean"], "pma_priority_ndcg")
    check(pma["priority_map"]["chrono_ndcg_at_10"]["mean"], "pma_priority_chrono")
    check(pma["stability_protector"]["false_positive_rate"]["mean"], "pma_stability_fp")
    check(pma["metacognitive_monitor"]["precision"]["mean"], "pma_metacog_precision")
    check(pma["metacognitive_monitor"]["recall"]["mean"], "pma_metacog_recall")
    check(pma["ewc"]["penalty_ratio"], "pma_ewc_ratio")
    check(pma["ewc"]["mature_edge_penalty"], "pma_ewc_mature_penalty")
    check(pma["vmpfc_interval"]["ratio"], "pma_vmpfc_ratio")
    check(pma["vmpfc_interval"]["high_pe_interval"], "pma_vmpfc_high_pe_interval")
    check(pma["vmpfc_interval"]["low_pe_interval"], "pma_vmpfc_low_pe_interval")
    ib = pma["ib_retention_by_context"]
    assert (ib["finance"], ib["people"], ib["operations"], ib["strategy"]) == (
        v["pma_ib_finance"], v["pma_ib_people"], v["pma_ib_operations"], v["pma_ib_strategy"])  # fmt: skip


def test_cascade_against_authors_result_file_1e9(full):
    ref = pub.AUTHORS_RESULT_FILES["cascade"]
    cas = full["cascade"]
    assert cas["n_facts"] == 200 != pub.PAPER_CASCADE["caption_n_facts"]  # the caption says 300
    pairs = {
        "full_retention": cas["full_retention"]["mean"],
        "full_retention_std": cas["full_retention"]["std"],
        "foundational_only_retention": cas["foundational_only_retention"]["mean"],
        "bare_retention": cas["bare_retention"]["mean"],
        "full_to_bare_ratio": cas["full_to_bare_ratio"],
        "no_sleep_retention": cas["no_sleep_retention"]["mean"],
        "sleep_ratio": cas["sleep_ratio"],
        "sleep_abs_difference": cas["sleep_abs_difference"]["mean"],
        "emotional_gap_day60": cas["emotional_gap_day60"]["mean"],
        "neuromod_synergy_day30": cas["neuromod_synergy_day30"]["mean"],
        "fiedler_delta": cas["fiedler"]["delta"]["mean"],
        "fiedler_before": cas["fiedler"]["before"]["mean"],
        "fiedler_after": cas["fiedler"]["after"]["mean"],
    }
    for key, value in pairs.items():
        assert value == pytest.approx(ref[key], abs=TOL), key
    assert cas["retention_timeline"]["full"] == pytest.approx(list(ref["timeline_full"]), abs=TOL)
    assert cas["retention_timeline"]["foundational_only"] == pytest.approx(list(ref["timeline_foundational_only"]), abs=TOL)
    assert cas["emotional_timeline"]["emotional"] == pytest.approx(list(ref["emotional_timeline"]), abs=TOL)
    assert cas["emotional_timeline"]["neutral"] == pytest.approx(list(ref["neutral_timeline"]), abs=TOL)


def test_competitive_against_authors_result_file_1e9(full):
    for system, metrics in pub.AUTHORS_RESULT_FILES["competitive"].items():
        rep = full["competitive"]["systems"][system]
        for metric, (mean, std) in metrics.items():
            assert rep[metric]["mean"] == pytest.approx(mean, abs=TOL), (system, metric)
            assert rep[metric]["std"] == pytest.approx(std, abs=TOL), (system, metric)
    lh = full["competitive"]["long_horizon"]
    assert lh["systems"]["simple_memory"]["30"]["p5_mean"] == 0.0
    assert lh["full_zenbrain_day60_over_day1"] == 1.0


def test_pma_suite_against_authors_result_file_1e9(full):
    ref = pub.AUTHORS_RESULT_FILES["pma_suite"]
    pma = full["pma_suite"]
    pairs = {
        "neuromodulator_mean_tonic_drift": pma["neuromodulator_drift"]["mean"],
        "da_5ht_opposition": pma["da_5ht_opposition"]["mean"],
        "reconsolidation_pe_mode_accuracy": pma["reconsolidation_pe_mode_accuracy"]["mean"],
        "priority_map_ndcg_at_10": pma["priority_map"]["ndcg_at_10"]["mean"],
        "priority_map_chrono_ndcg_at_10": pma["priority_map"]["chrono_ndcg_at_10"]["mean"],
        "stability_false_positive_rate": pma["stability_protector"]["false_positive_rate"]["mean"],
        "stability_low_pe_block_rate": pma["stability_protector"]["low_pe_block_rate"]["mean"],
        "stability_grey_zone_pass_rate": pma["stability_protector"]["grey_zone_pass_rate"]["mean"],
        "metacognitive_precision": pma["metacognitive_monitor"]["precision"]["mean"],
        "metacognitive_recall": pma["metacognitive_monitor"]["recall"]["mean"],
        "ewc_penalty_ratio": pma["ewc"]["penalty_ratio"],
        "ewc_mature_edge_penalty": pma["ewc"]["mature_edge_penalty"],
        "vmpfc_ratio": pma["vmpfc_interval"]["ratio"],
        "vmpfc_pe_similar": pma["vmpfc_prediction_error"]["pe_similar"],
        "vmpfc_pe_different": pma["vmpfc_prediction_error"]["pe_different"],
        "tag_delta_emotional_vs_neutral": pma["tag"]["emotional_minus_neutral"],
        "tag_four_minus_three_term": pma["tag"]["four_minus_three"],
        "amygdala_neutral_mean": pma["amygdala"]["neutral_mean"],
        "amygdala_priority_gap_day60": pma["amygdala"]["priority_gap_day60"],
    }
    for key, value in pairs.items():
        assert value == pytest.approx(ref[key], abs=TOL), key
    for label, (tc, ebb) in ref["triple_copy"].items():
        row = pma["triple_copy"]["rows"][label]
        assert row["triple_copy"] == pytest.approx(tc, abs=TOL)
        assert row["ebbinghaus"] == pytest.approx(ebb, abs=TOL)
    ib = pma["ib_retention_by_context"]
    assert (ib["finance"], ib["people"], ib["operations"], ib["strategy"]) == ref["ib_retained"]


def test_report_mentions_label_and_mismatches(full):
    text = format_report(full)
    assert LABEL in text
    assert text.count("not reproduced:") == len(KNOWN_DISCREPANCIES)
