"""Replica vs published: comparison rows and a plain-text report.

Part of the replica of *the paper's simulation protocol, not zenbrain*. The published
figures come from :mod:`zenbrain.experiments.published` (the only file holding them).

Matching rule: a replica value matches a printed figure when rounding it to the printed
number of decimals gives that figure - either directly, or via the harness's own
4-digit summary (``toFixed(4)``) first, since several printed figures are rounded
twice (a value just below a rounding boundary at three decimals, such as x.xxx49, is
first rounded up to x.xxx5 and then to the next third decimal).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from zenbrain.experiments import published as pub

from . import LABEL
from .simulation import PAPER_LABELS

__all__ = ["KNOWN_DISCREPANCIES", "comparison_rows", "format_report", "printed_match"]

# Published figures the replica does not reproduce, and why (see docs/replica.md).
# Each note is built from the published module and the replica's own results, so this
# file holds no paper figure itself.
def _note_star(res: dict) -> str:
    p = res["ablation"]["stress"]["rows"]["-priority_map"]["wilcoxon"]["p"]
    return (f"all ten seeds move the same way, so the protocol's own test gives p = {p:.5f} (its floor); "
            "the paper leaves this row unstarred")  # fmt: skip


def _note_sleep(res: dict) -> str:
    lo, hi = pub.PAPER_CASCADE["sleep_abs_difference_ci95"]
    mean = res["cascade"]["sleep_abs_difference"]["mean"]
    return (f"the protocol's mean full-minus-no-sleep difference is {mean:.4f} (the authors' result file agrees); "
            f"the printed figure equals the midpoint {(lo + hi) / 2:.3f} of the printed bootstrap CI [{lo}, {hi}]")  # fmt: skip


def _note_simple(res: dict) -> str:
    c = res["competitive"]
    drop = c["simple_memory_p5_drop_vs_static"] * 100
    lost = c["simple_memory_forgotten_fraction_day14"] * 100
    return (f"under the protocol {lost:.1f}% of Simple Memory's facts fall to strength <= 0.1 by day 14; "
            f"the text's figure is closer to Simple Memory's relative P@5 loss against Static RAG ({drop:.1f}%)")  # fmt: skip


def _note_drift(res: dict) -> str:
    printed = pub.PAPER_PMA_SUITE["neuromodulator_mean_tonic_drift"]
    drift = res["pma_suite"]["neuromodulator_drift"]["mean"]
    return (f"the metric is a mean deviation of {drift:.4f} from the 0.5 baseline ({drift / 0.5:.0%} of the largest "
            f"possible deviation); the printed percentage is (0.5 - {printed}) / 0.5, reading a deviation as a level")  # fmt: skip


def _note_tc(res: dict) -> str:
    tc, ebb, _ = pub.PAPER_TRIPLE_COPY_TABLE["1h"]
    row = res["pma_suite"]["triple_copy"]["rows"]["1h"]
    exact = (row["triple_copy"] - row["ebbinghaus"]) / row["ebbinghaus"] * 100
    rounded = (tc - ebb) / ebb * 100
    return (f"from the exact means the advantage is {exact:.1f}%; the printed figure is {rounded:.1f}% computed "
            f"from the rounded {tc} and {ebb}")  # fmt: skip


KNOWN_DISCREPANCIES = {
    ("ablation/stress", "PriorityMap", "significance_star"): _note_star,
    ("cascade", "sleep", "abs_difference"): _note_sleep,
    ("competitive", "simple_memory", "fact_store_lost_pct"): _note_simple,
    ("pma_suite", "neuromodulator", "drift_pct_from_baseline"): _note_drift,
    ("pma_suite", "triple_copy 1h", "delta_pct"): _note_tc,
}


def _round(value: float, decimals: int, mode: str) -> Decimal:
    q = Decimal(1).scaleb(-decimals)
    return Decimal(repr(float(value))).quantize(q, rounding=mode)


def printed_match(value: float, printed: float, decimals: int) -> bool:
    """True if ``value`` rounds to ``printed`` at ``decimals`` places (directly or via one more place)."""
    target = Decimal(repr(float(printed))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
    candidates = {
        _round(value, decimals, ROUND_HALF_UP),
        _round(value, decimals, ROUND_HALF_EVEN),
        _round(float(_round(value, decimals + 1, ROUND_HALF_UP)), decimals, ROUND_HALF_UP),
    }
    return any(c == target or (c == 0 and target == 0) for c in candidates)


def _row(table: str, row: str, metric: str, published, replica, decimals: int, match: bool | None = None) -> dict:
    if match is None:
        match = printed_match(replica, published, decimals)
    return {
        "table": table,
        "row": row,
        "metric": metric,
        "published": published,
        "replica": replica,
        "decimals": decimals,
        "match": bool(match),
        "note": "",
    }


def _label(key: str) -> str:
    return {"full": "Full System", "no_pma": "No PMA", "bare": "Bare"}.get(key, PAPER_LABELS.get(key, key))


def _ablation_rows(results: dict) -> list[dict]:
    out: list[dict] = []
    tables = {
        "moderate": pub.PAPER_ABLATION_MODERATE,
        "challenging": pub.PAPER_ABLATION_CHALLENGING,
        "stress": pub.PAPER_ABLATION_STRESS,
    }
    for cond, table in tables.items():
        if cond not in results.get("ablation", {}):
            continue
        rows = results["ablation"][cond]["rows"]
        for key, figures in table.items():
            rep = rows["full" if key == "full" else (key if key in ("no_pma", "bare") else f"-{key}")]
            for metric, printed in figures.items():
                if metric == "delta_q_pct":
                    out.append(_row(f"ablation/{cond}", _label(key), "delta_q_pct", printed, rep["delta"]["quality_rel"] * 100, 1))
                else:
                    out.append(_row(f"ablation/{cond}", _label(key), metric, printed, rep[metric]["mean"], 3))
        for key, per_cond in pub.PAPER_GRADIENT_DELTA_Q_PCT.items():
            rep = rows[f"-{key}"]
            out.append(_row(f"gradient/{cond}", _label(key), "delta_q_pct", per_cond[cond], rep["delta"]["quality_rel"] * 100, 1))
        if len(results["ablation"][cond]["seeds"]) == 10:
            starred = set(pub.PAPER_STARRED[cond])
            for key, rep in rows.items():
                if key == "full" or rep["wilcoxon"] is None:
                    continue
                name = key.lstrip("-")
                if cond == "challenging" and name == "no_pma":
                    continue  # the paper prints no No-PMA row for this condition
                if cond == "stress" and name == "no_pma":
                    continue
                p_val = rep["wilcoxon"]["p"]
                out.append(
                    _row(f"ablation/{cond}", _label(name), "significance_star", name in starred, p_val, 4,
                         match=(p_val <= pub.PAPER_WILCOXON_P_BOUND) == (name in starred))  # fmt: skip
                )
    return out


def _cascade_rows(c: dict) -> list[dict]:
    p = pub.PAPER_CASCADE
    return [
        _row("cascade", "full", "retention", p["full_retention"], c["full_retention"]["mean"], 3),
        _row("cascade", "bare", "retention", p["bare_retention"], c["bare_retention"]["mean"], 3),
        _row("cascade", "full/bare", "ratio", p["full_to_bare_ratio"], c["full_to_bare_ratio"], 1),
        _row("cascade", "foundational-only", "retention", p["foundational_only_retention"], c["foundational_only_retention"]["mean"], 3),
        _row("cascade", "emotional gap day 60", "pct", p["emotional_gap_day60_pct"], c["emotional_gap_day60"]["mean"] * 100, 1),
        _row("cascade", "emotional gap day 1", "pct", p["emotional_gap_day1_pct"], c["emotional_timeline"]["gap"][0] * 100, 1),
        _row("cascade", "sleep", "ratio", p["sleep_ratio"], c["sleep_ratio"], 2),
        _row("cascade", "sleep", "abs_difference", p["sleep_abs_difference"], c["sleep_abs_difference"]["mean"], 3),
        _row("cascade", "fiedler", "delta", p["fiedler_delta"], c["fiedler"]["delta"]["mean"], 3),
        _row("cascade", "fiedler", "rise_pct", p["fiedler_rise_pct"], c["fiedler"]["relative_rise"] * 100, 0),
        _row("cascade", "full vs bare", "p", p["p_value"], c["full_vs_bare_wilcoxon"]["p"], 4,
             match=c["full_vs_bare_wilcoxon"]["p"] <= p["p_value"]),  # fmt: skip
    ]


def _competitive_rows(c: dict) -> list[dict]:
    out = []
    for system, metrics in pub.PAPER_COMPETITIVE.items():
        rep = c["systems"][system]
        for metric, (mean, std) in metrics.items():
            out.append(_row("competitive", rep["label"], f"{metric}_mean", mean, rep[metric]["mean"], 3))
            out.append(_row("competitive", rep["label"], f"{metric}_std", std, rep[metric]["std"], 3))
    t = pub.PAPER_COMPETITIVE_TEXT
    out.append(_row("competitive", "full vs static", "p", t["full_vs_static_p"], c["full_vs_static_p5"]["wilcoxon"]["p"], 2))
    out.append(_row("competitive", "simple_memory", "fact_store_lost_pct", t["simple_memory_fact_store_lost_pct"],
                    c["simple_memory_forgotten_fraction_day14"] * 100, 0))  # fmt: skip
    lh = c["long_horizon"]["systems"]
    out.append(_row("competitive", "simple_memory", "p5_day30", t["simple_memory_p5_day30"], lh["simple_memory"]["30"]["p5_mean"], 3))
    out.append(_row("competitive", "full_zenbrain", "day60_over_day1_pct", t["full_zenbrain_day60_over_day1_pct"],
                    c["long_horizon"]["full_zenbrain_day60_over_day1"] * 100, 0))  # fmt: skip
    return out


def _pma_rows(s: dict) -> list[dict]:
    p = pub.PAPER_PMA_SUITE
    drift = s["neuromodulator_drift"]["mean"]
    out = [
        _row("pma_suite", "neuromodulator", "mean_tonic_drift", p["neuromodulator_mean_tonic_drift"], drift, 3),
        _row("pma_suite", "neuromodulator", "drift_pct_from_baseline", p["neuromodulator_drift_pct_from_baseline"], drift / 0.5 * 100, 1),
        _row("pma_suite", "neuromodulator", "da_5ht_opposition", p["da_5ht_opposition"], s["da_5ht_opposition"]["mean"], 3),
        _row("pma_suite", "reconsolidation", "pe_mode_accuracy", p["reconsolidation_pe_mode_accuracy_at_least"],
             s["reconsolidation_pe_mode_accuracy"]["mean"], 2,
             match=s["reconsolidation_pe_mode_accuracy"]["mean"] >= p["reconsolidation_pe_mode_accuracy_at_least"]),  # fmt: skip
        _row("pma_suite", "triple_copy", "30d", p["triple_copy_30d"], s["triple_copy"]["rows"]["30d"]["triple_copy"], 3),
        _row("pma_suite", "priority_map", "ndcg_at_10", p["priority_map_ndcg_at_10"], s["priority_map"]["ndcg_at_10"]["mean"], 3),
        _row("pma_suite", "priority_map", "chrono_ndcg_at_10", p["priority_map_chrono_ndcg_at_10"],
             s["priority_map"]["chrono_ndcg_at_10"]["mean"], 3),  # fmt: skip
        _row("pma_suite", "priority_map", "advantage_pct", p["priority_map_advantage_pct"], s["priority_map"]["advantage_pct"], 1),
        _row("pma_suite", "stability_protector", "false_positive_pct", p["stability_protector_false_positive_pct"],
             s["stability_protector"]["false_positive_rate"]["mean"] * 100, 1),  # fmt: skip
        _row("pma_suite", "metacognitive_monitor", "precision", p["metacognitive_precision"], s["metacognitive_monitor"]["precision"]["mean"], 3),
        _row("pma_suite", "metacognitive_monitor", "recall", p["metacognitive_recall"], s["metacognitive_monitor"]["recall"]["mean"], 3),
    ]
    for label, (tc, ebb, delta) in pub.PAPER_TRIPLE_COPY_TABLE.items():
        rep = s["triple_copy"]["rows"][label]
        out.append(_row("pma_suite", f"triple_copy {label}", "triple_copy", tc, rep["triple_copy"], 3))
        if ebb == 0.0:
            out.append(_row("pma_suite", f"triple_copy {label}", "ebbinghaus_below_0.001", 0.001, rep["ebbinghaus"], 3,
                            match=rep["ebbinghaus"] < 0.001))  # fmt: skip
        else:
            out.append(_row("pma_suite", f"triple_copy {label}", "ebbinghaus", ebb, rep["ebbinghaus"], 3))
        if delta is not None:
            rep_delta = (rep["triple_copy"] - rep["ebbinghaus"]) / rep["ebbinghaus"] * 100
            out.append(_row("pma_suite", f"triple_copy {label}", "delta_pct", delta, rep_delta, 0 if abs(delta) >= 1000 else 1))
    return out


def comparison_rows(results: dict) -> list[dict]:
    """Every published figure that ``results`` (from ``run_replica``) can be compared with."""
    seeds = results.get("seeds", [])
    if list(seeds) != [42, 123, 456, 789, 1024, 2048, 3072, 4096, 5120, 6144]:
        return []
    out = _ablation_rows(results)
    if "cascade" in results:
        out += _cascade_rows(results["cascade"])
    if "competitive" in results:
        out += _competitive_rows(results["competitive"])
    if "pma_suite" in results:
        out += _pma_rows(results["pma_suite"])
    for r in out:
        explain = KNOWN_DISCREPANCIES.get((r["table"], r["row"], r["metric"]))
        if explain is not None and not r["match"]:
            r["note"] = explain(results)
    return out


def _fmt(x) -> str:
    if isinstance(x, bool):
        return "starred" if x else "unstarred"
    if isinstance(x, float):
        if x != 0 and abs(x) < 1e-3:
            return f"{x:.3g}"
        return f"{x:.4f}".rstrip("0").rstrip(".")
    return str(x)


def format_report(results: dict) -> str:
    """A plain-text report: replica values side by side with the published figures."""
    lines = [f"Replica of {LABEL} (seeds: {', '.join(map(str, results['seeds']))})", ""]
    for cond, res in results.get("ablation", {}).items():
        pubt = {"moderate": pub.PAPER_ABLATION_MODERATE, "challenging": pub.PAPER_ABLATION_CHALLENGING,
                "stress": pub.PAPER_ABLATION_STRESS}[cond]  # fmt: skip
        c = res["condition"]
        lines.append(f"Ablation, {cond} ({c['n_facts']} facts, {c['n_queries']} queries, {c['aging_days']} d, decay {c['base_decay']})")
        lines.append(f"  {'configuration':<28}{'retention':>18}{'P@5 (recall)':>18}{'NDCG@5':>18}{'dQ %':>18}{'p':>9}")
        for key, row in res["rows"].items():
            name = key.lstrip("-")
            p = pubt.get(name, {})

            def cell(metric: str, value: float, digits: int, p: dict = p) -> str:
                shown = f"{value:.{digits}f}"
                if metric in p:
                    shown += f" ({p[metric]:.{digits}f})"
                return shown

            w = row["wilcoxon"]
            p_cell = "" if w is None else f"{w['p']:.4f}"
            lines.append(
                f"  {row['label']:<28}{cell('retention', row['retention']['mean'], 3):>18}"
                f"{cell('p5', row['p5']['mean'], 3):>18}{cell('ndcg5', row['ndcg5']['mean'], 3):>18}"
                f"{cell('delta_q_pct', row['delta']['quality_rel'] * 100, 1):>18}"
                f"{p_cell:>9}"
            )
        lines.append("  (published figure in parentheses where the paper prints one)")
        lines.append("")
    comps = comparison_rows(results)
    other = [r for r in comps if not r["table"].startswith(("ablation/", "gradient/"))]
    if other:
        lines.append(f"  {'table':<13}{'row':<26}{'metric':<26}{'published':>12}{'replica':>16}  match")
        for r in other:
            lines.append(
                f"  {r['table']:<13}{r['row']:<26}{r['metric']:<26}{_fmt(r['published']):>12}{_fmt(r['replica']):>16}"
                f"  {'yes' if r['match'] else 'NO'}"
            )
        lines.append("")
    if comps:
        bad = [r for r in comps if not r["match"]]
        lines.append(f"{len(comps) - len(bad)} of {len(comps)} published figures reproduced.")
        for r in bad:
            lines.append(f"  not reproduced: {r['table']} / {r['row']} / {r['metric']}: published {_fmt(r['published'])}, "
                         f"replica {_fmt(r['replica'])}. {r['note']}")  # fmt: skip
    lines.append(f"Run time: {results.get('seconds', 0.0):.2f} s")
    return "\n".join(lines)
