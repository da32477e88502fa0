"""Reports of the real-system experiments: JSON, a markdown report with three columns
(published, replica, real zenbrain) per table, and PNG plots.

The published figures are read from :mod:`zenbrain.experiments.published` (the one file
that holds them); where it has none for a table the column says so. The replica
figures come from :func:`zenbrain.experiments.replica.run_replica`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from zenbrain.registry import PAPER_FIFTEEN

from .. import published as P

__all__ = ["comparison_tables", "format_markdown", "write_outputs", "write_plots"]

NA_PUB = "n/p"  # not in published.py
NA_REP = "n/r"  # not part of the replica
LABELS = {
    "two_factor_hebbian": "Two-Factor Hebbian", "simulation_selection_sleep": "Sim-Selection Sleep",
    "vmpfc_fsrs": "vmPFC-FSRS", "imad_debate": "iMAD Debate", "spectral_kg_health": "Spectral KG",
    "compositional_context": "Compositional Context", "ib_budget": "IB Budget", "dual_process_cot": "Dual-Process CoT",
    "metacognitive_hyperagent": "HyperAgent", "neuromodulator": "NeuromodulatorEngine",
    "reconsolidation": "Reconsolidation", "triple_copy": "TripleCopy", "priority_map": "PriorityMap",
    "stability_protector": "StabilityProtector", "metacognitive_monitor": "MetacogMonitor",
}
_PUB_ABLATION = {"moderate": "PAPER_ABLATION_MODERATE", "challenging": "PAPER_ABLATION_CHALLENGING",
                 "stress": "PAPER_ABLATION_STRESS"}


def _f(x: Any, nd: int = 3, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "-"
    if isinstance(x, str):
        return x
    v = float(x) * (100.0 if pct else 1.0)
    return f"{v:+.{nd}f}" if pct else f"{v:.{nd}f}"


def _p(x: Any) -> str:
    if x is None:
        return "-"
    x = float(x)
    return f"{x:.2g}" if x < 0.001 else f"{x:.3f}"


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _pub(name: str) -> Any:
    return getattr(P, name, None)


# ----------------------------------------------------------------------------- tables
def ablation_table(real: dict, replica: dict | None, cond: str) -> str:
    rr = real["ablation"][cond]["rows"]
    rep = (replica or {}).get("ablation", {}).get(cond, {}).get("rows", {})
    pub = _pub(_PUB_ABLATION[cond]) or {}
    head = ["Configuration", "Retention pub", "rep", "real", "Recall@5 (\"P@5\") pub", "rep", "real",
            "ΔQ % pub", "rep", "real", "real p (Bonf.)", "real d_z"]
    rows = []
    for cfg, row in rr.items():
        key = cfg.removeprefix("-")
        label = ("− " + LABELS.get(key, key)) if cfg.startswith("-") else {"full": "Full system", "no_pma": "No PMA",
                                                                              "bare": "Bare (15 off)"}[cfg]
        pr = pub.get(key, {})
        rp = rep.get(cfg, {})
        vs = row.get("vs_full") or {}
        q = vs.get("quality") or {}
        rows.append([
            label,
            _f(pr.get("retention")) if pr else NA_PUB,
            _f(rp.get("retention", {}).get("mean")) if rp else NA_REP,
            _f(row["retention"]["mean"]),
            _f(pr.get("p5")) if pr.get("p5") is not None else NA_PUB,
            _f(rp.get("p5", {}).get("mean")) if rp else NA_REP,
            _f(row["recall5"]["mean"]),
            (_f(pr.get("delta_q_pct"), 1) if pr else NA_PUB),
            (_f((rp.get("delta") or {}).get("quality_rel"), 1, pct=True) if rp else NA_REP),
            "0 (base)" if cfg == "full" else _f(vs.get("delta_q_rel"), 1, pct=True),
            "-" if cfg == "full" else _p(q.get("p_bonferroni") if vs.get("bonferroni_family") else q.get("p")),
            "-" if cfg == "full" else _f(q.get("cohens_dz"), 2),
        ])
    return _table(head, rows)


def cascade_table(real: dict, replica: dict | None) -> str:
    c = real["cascade"]
    rc = (replica or {}).get("cascade", {})
    pub = _pub("PAPER_CASCADE") or {}

    def rget(*path: str) -> Any:
        v: Any = rc
        for k in path:
            if not isinstance(v, dict) or k not in v:
                return None
            v = v[k]
        return v

    rows = [
        ["Full retention, day 60", _f(pub.get("full_retention")), _f(rget("full_retention", "mean")),
         _f(c["full_retention"]["mean"])],
        ["Bare retention, day 60", _f(pub.get("bare_retention")), _f(rget("bare_retention", "mean")),
         _f(c["bare_retention"]["mean"])],
        ["Foundational-only retention, day 60", _f(pub.get("foundational_only_retention")),
         _f(rget("foundational_only_retention", "mean")), _f(c["foundational_only_retention"]["mean"])],
        ["Full / bare", _f(pub.get("full_to_bare_ratio"), 2), _f(rget("full_to_bare_ratio"), 2), _f(c["full_to_bare_ratio"], 2)],
        ["Full / no-sleep", _f(pub.get("sleep_ratio"), 2), _f(rget("sleep_ratio"), 2), _f(c["sleep_ratio"], 2)],
        ["Full − no-sleep (abs.)", _f(pub.get("sleep_abs_difference")), _f(rget("sleep_abs_difference", "mean")),
         _f(c["full_vs_no_sleep"]["difference"])],
        ["Emotional − neutral retention, day 60", _f((pub.get("emotional_gap_day60_pct") or float("nan")) / 100.0),
         _f(rget("emotional_gap_day60", "mean")), _f(c["emotional_gap_day60"]["mean"])],
        ["Fiedler Δ after sleep", _f(pub.get("fiedler_delta")), _f(rget("fiedler", "delta", "mean")),
         _f(c["fiedler"]["after_vs_before"]["difference"], 4)],
        ["p full vs bare (real: exact Wilcoxon)", _p(pub.get("p_value")), _p(rget("full_vs_bare_wilcoxon", "p")),
         _p(c["full_vs_bare"]["p"])],
    ]
    return _table(["Metric", "published", "replica", "real"], rows)


def archetypes_table(real: dict, replica: dict | None) -> str:
    a = real["archetypes"]["systems"]
    rc = ((replica or {}).get("competitive") or {}).get("systems", {})
    pub = _pub("PAPER_COMPETITIVE") or {}
    names = {"static_rag": ("static_rag", "Static RAG"), "simple_memory": ("simple_memory", "Simple memory"),
             "full": ("full_zenbrain", "Full zenbrain")}
    rows = []
    for key, (pkey, label) in names.items():
        d14 = a[key]["14"]
        pr = pub.get(pkey, {})
        rp = rc.get(pkey, {})
        for m, pm, rm in (("precision5", "p5", "p5"), ("recall5", "r5", "r5"), ("mrr5", "mrr", "mrr")):
            rows.append([f"{label} {({'precision5': 'P@5', 'recall5': 'R@5', 'mrr5': 'MRR'})[m]}",
                         _f(pr.get(pm, (None,))[0]) if pr else NA_PUB,
                         _f((rp.get(rm) or {}).get("mean")) if rp else NA_REP,
                         f"{_f(d14[m]['mean'])} ± {_f(d14[m]['std'])}"])
    return _table(["System, day 14", "published", "replica", "real"], rows)


def horizon_table(real: dict, replica: dict | None) -> str:
    a = real["archetypes"]["systems"]
    lh = ((replica or {}).get("competitive") or {}).get("long_horizon", {}).get("systems", {})
    comp = _pub("PAPER_COMPETITIVE") or {}
    text = _pub("PAPER_COMPETITIVE_TEXT") or {}

    def published(rkey: str, day: int) -> str:
        if day == 14 and rkey in comp:
            return _f(comp[rkey]["p5"][0])
        if rkey == "static_rag" and rkey in comp:  # the text: Static RAG "remains constant"
            return f"{_f(comp[rkey]['p5'][0])} (text: constant)"
        if day >= 30 and rkey == "simple_memory" and "simple_memory_p5_day30" in text:
            return f"{_f(text['simple_memory_p5_day30'])} (text: from day 30)"
        if day == 60 and rkey == "full_zenbrain" and "full_zenbrain_day60_over_day1_pct" in text:
            return f"{text['full_zenbrain_day60_over_day1_pct']:.0f} % of day 1 (text)"
        return NA_PUB

    rows = []
    for key, rkey, label in (("static_rag", "static_rag", "Static RAG"), ("simple_memory", "simple_memory", "Simple memory"),
                             ("full", "full_zenbrain", "Full zenbrain")):
        for d in real["archetypes"]["days"]:
            rp = (lh.get(rkey) or {}).get(str(d), {})
            rows.append([f"{label}, day {d}", published(rkey, int(d)), _f(rp.get("p5_mean")) if rp else NA_REP,
                         _f(a[key][str(d)]["precision5"]["mean"]), _f(a[key][str(d)]["retention"])])
    return _table(["P@5 (precision)", "published", "replica", "real", "real retention"], rows)


def pma_table(real: dict, replica: dict | None) -> str:
    p = real["pma"]
    rp = (replica or {}).get("pma_suite", {})
    pub = _pub("PAPER_PMA_SUITE") or {}

    def rget(*path: str) -> Any:
        v: Any = rp
        for k in path:
            if not isinstance(v, dict) or k not in v:
                return None
            v = v[k]
        return v

    rows = [
        ["Neuromodulator drift (mean over events of the largest abs(level − 0.5))", _f(pub.get("neuromodulator_mean_tonic_drift")),
         _f(rget("neuromodulator_drift", "mean")), _f(p["neuromodulator"]["drift"]["mean"])],
        ["… tonic level only (real)", NA_PUB, NA_REP, _f(p["neuromodulator"]["tonic_drift"]["mean"])],
        ["… one event an hour (real)", NA_PUB, NA_REP, _f(p["neuromodulator"]["hourly"]["drift"]["mean"])],
        ["DA–5HT: paper's mean product", _f(pub.get("da_5ht_opposition")), _f(rget("da_5ht_opposition", "mean")),
         _f(p["neuromodulator"]["da_5ht_mean_product"]["mean"], 4)],
        ["DA–5HT: Pearson r (real)", NA_PUB, NA_REP,
         f"{_f(p['neuromodulator']['da_5ht_r']['mean'])} (p across seeds {_p(p['neuromodulator']['da_5ht_r_vs_zero']['p'])})"],
        ["Reconsolidation mode accuracy", _f(pub.get("reconsolidation_pe_mode_accuracy_at_least")),
         _f(rget("reconsolidation_pe_mode_accuracy", "mean")), _f(p["reconsolidation"]["accuracy"]["mean"])],
        ["TripleCopy composite, 30 d", _f(pub.get("triple_copy_30d")), _f(rget("triple_copy", "rows", "30d", "triple_copy")),
         _f(p["triple_copy"]["30d"]["composite"])],
        ["PriorityMap NDCG@10", _f(pub.get("priority_map_ndcg_at_10")), _f(rget("priority_map", "ndcg_at_10", "mean")),
         _f(p["priority_map"]["priority_map"]["mean"])],
        ["Chronological NDCG@10", _f(pub.get("priority_map_chrono_ndcg_at_10")),
         _f(rget("priority_map", "chrono_ndcg_at_10", "mean")), _f(p["priority_map"]["chronological"]["mean"])],
        ["StabilityProtector false-positive rate", _f((pub.get("stability_protector_false_positive_pct") or float("nan")) / 100),
         _f(rget("stability_protector", "false_positive_rate", "mean")), _f(p["stability"]["false_positive_rate"]["mean"])],
        ["MetacognitiveMonitor precision", _f(pub.get("metacognitive_precision")),
         _f(rget("metacognitive_monitor", "precision", "mean")), _f(p["metacognition"]["precision"])],
        ["MetacognitiveMonitor recall", _f(pub.get("metacognitive_recall")),
         _f(rget("metacognitive_monitor", "recall", "mean")), _f(p["metacognition"]["recall"])],
    ]
    return _table(["Metric", "published", "replica", "real"], rows)


def triple_copy_table(real: dict, replica: dict | None) -> str:
    tc = real["pma"]["triple_copy"]
    rrows = (((replica or {}).get("pma_suite") or {}).get("triple_copy") or {}).get("rows", {})
    pub = _pub("PAPER_TRIPLE_COPY_TABLE") or {}
    rows = []
    for name, v in tc.items():
        pr = pub.get(name)
        rp = rrows.get(name, {})
        rows.append([name, _f(pr[0]) if pr else NA_PUB, _f(rp.get("triple_copy")) if rp else NA_REP, _f(v["composite"]),
                     _f(v["composite_paper_mode"]), v["dominant"], _f(pr[1]) if pr else NA_PUB, _f(v["ebbinghaus"])])
    return _table(["Interval", "TripleCopy pub", "rep", "real (defaults)", "real (deep_initial_share=1)",
                   "real dominant copy", "Ebbinghaus pub", "Ebbinghaus real"], rows)


def retention_table(real: dict) -> str:
    """Real curves beside the published ones (the paper's figure, points as plotted)."""
    r = real["retention"]
    hours = [int(h) for h in r["hours"]]
    pub = _pub("PAPER_RETENTION_CURVES") or {}
    pub_hours = list(_pub("PAPER_RETENTION_HOURS") or ())
    aurc = _pub("PAPER_RETENTION_AURC") or {}
    rows = []
    for st, v in r["strategies"].items():
        curve = pub.get(st)
        if curve is not None and pub_hours == hours:
            rows.append([f"{st}, published"] + [_f(x) for x in curve] + [_f(sum(curve) / len(curve)), _f(aurc.get(st))])
        else:
            rows.append([f"{st}, published"] + [NA_PUB] * (len(hours) + 2))
        rows.append([f"{st}, real"] + [_f(x) for x in v["mean_retrievability"]] + [_f(v["curve_mean"]), "-"])
    return _table(["Strategy (mean retrievability)"] + [f"{h} h" for h in hours] + ["mean of the points", "AURC (paper)"],
                  rows)


def sleep_table(real: dict) -> str:
    s = real["sleep"]
    m = s["metrics"]
    pub = _pub("PAPER_SLEEP") or {}

    def pair(key: str, fmt: str) -> str:
        v = pub.get(key)
        if v is None:
            return NA_PUB
        with_sleep, without = (x[0] if isinstance(x, tuple) else x for x in v)
        p = pub.get("p_value_at_most")
        tail = f" (p ≤ {p:.2g})" if key == "avg_stability" and p is not None else ""
        return f"{with_sleep:{fmt}} vs {without:{fmt}}{tail}"

    published = {"avg_stability": pair("avg_stability", ".2f"), "storage_tokens": pair("storage_tokens", ",.0f")}
    rows = []
    for k, label in (("avg_stability", "Mean Ebbinghaus stability, active facts (days)"),
                     ("avg_strength", "Mean strength, active facts"), ("mean_retrievability", "Mean retrievability"),
                     ("retention", "Retention"), ("active_memories", "Active memories"),
                     ("storage_tokens", "Storage (whitespace tokens)")):
        v = m[k]
        rows.append([label, published.get(k, NA_PUB), NA_REP, f"{_f(v['sleep']['mean'])} vs {_f(v['no_sleep']['mean'])} "
                     f"(p {_p(v['sleep_vs_no_sleep']['p'])})"])
    red = pub.get("storage_reduction_pct")
    rows.append(["Storage reduction", f"{red:.1f} %" if red is not None else NA_PUB, NA_REP,
                 _f(s["storage_reduction"], 1, pct=True) + " %"])
    counts = {"ltp": pub.get("ltp_memories"), "ltd": pub.get("ltd_memories"),
              "edges_created": pub.get("new_associations_per_run")}
    for k, label in (("ltp", "LTP per run"), ("ltd", "LTD per run"), ("counterfactuals", "Counterfactuals per run"),
                     ("edges_created", "New edges per run"), ("schemas", "Schemas per run")):
        c = counts.get(k)
        rows.append([label, _f(c, 1) if c is not None else NA_PUB, NA_REP, _f(s[k]["mean"], 1)])
    return _table(["Metric (sleep vs no sleep)", "published", "replica", "real"], rows)


def kg_table(real: dict) -> str:
    t = real["kg"]["two_factor"]
    b = real["kg"]["bayesian"]
    h = t["hebbian"]
    pub = _pub("PAPER_HEBBIAN_BAYESIAN") or {}

    def ms(key: str, nd: int = 3) -> str:
        v = pub.get(key)
        return f"{v[0]:.{nd}f} ± {v[1]:.{nd}f}" if v is not None else NA_PUB

    p_wu = pub.get("weighted_vs_uniform_p_at_most")
    auc_p, auc_d = pub.get("auc_p"), pub.get("auc_cohens_d")
    dt, df = pub.get("delta_conf_true"), pub.get("delta_conf_false")
    rows = [
        ["Precision@5, weight × importance", ms("p5_weighted"), NA_REP, _f(h["precision5_weighted"]["mean"])],
        ["Recall@5, weight × importance", NA_PUB, NA_REP, _f(h["recall5_weighted"]["mean"])],
        ["Precision@5, uniform edges", ms("p5_uniform"), NA_REP, _f(h["precision5_uniform"]["mean"])],
        ["Precision@5, embedding cosine (no graph)", NA_PUB, NA_REP, _f(h["precision5_embedding"]["mean"])],
        ["Precision@5, two_factor_hebbian off", NA_PUB, NA_REP, _f(t["no_hebbian"]["precision5_weighted"]["mean"])],
        ["Intra / inter mean edge weight", ms("intra_inter_ratio", 2), NA_REP,
         _f((h.get("intra_inter_ratio") or {}).get("mean"), 3)],
        ["weighted vs uniform p", f"≤ {p_wu:.2g}" if p_wu is not None else NA_PUB, NA_REP, _p(t["weighted_vs_uniform"]["p"])],
        ["Bayesian AUC before", ms("auc_before"), NA_REP, _f(b["on"]["auc_before"]["mean"])],
        ["Bayesian AUC after", ms("auc_after"), NA_REP, _f(b["on"]["auc_after"]["mean"])],
        ["AUC after vs before p (d_z)", f"{_p(auc_p)} (d {auc_d:.2f})" if auc_p is not None and auc_d is not None else NA_PUB,
         NA_REP, f"{_p(b['after_vs_before']['p'])} ({_f(b['after_vs_before']['cohens_dz'], 2)})"],
        ["Δ confidence true / false facts", f"{dt:+.3f} / {df:+.3f}" if dt is not None and df is not None else NA_PUB,
         NA_REP, f"{_f(b['on']['delta_conf_true']['mean'])} / {_f(b['on']['delta_conf_false']['mean'])}"],
    ]
    return _table(["Metric", "published", "replica", "real"], rows)


def locomo_tables(real: dict) -> tuple[str, str]:
    lo = real["locomo"]
    if "skipped" in lo:
        return lo["skipped"], lo["skipped"]
    nd_pub = _pub("PAPER_NODECAY") or {}
    rows = []
    for v, s in lo["nodecay"]["systems"].items():
        pv = nd_pub.get(v)
        pcell = " / ".join(_f(pv[m]) for m in ("p5", "r5", "mrr", "ndcg5")) if pv else NA_PUB
        rows.append([v, pcell, NA_REP] + [_f(s[m]["mean"]) for m in ("precision5", "recall5", "mrr5", "ndcg5")]
                    + [str(s.get("archived", 0))])
    nd = _table(["System (14-day ageing)", "published P@5 / R@5 / MRR / NDCG@5", "replica", "P@5", "R@5", "MRR", "NDCG@5",
                 "archived"], rows)
    rt_pub = _pub("PAPER_ROUTING") or {}
    starred = set(_pub("PAPER_ROUTING_STARRED") or ())
    rows = []
    for v, s in lo["routing"]["variants"].items():
        vs = s.get("vs_full_recall5") or {}
        pv = rt_pub.get(v)
        if pv is None:
            pcell = NA_PUB
        else:
            f1, task, d = pv
            pcell = f"F1 {f1:.3f}, task {task:.3f}" + ("" if d is None else f", ΔF1 {d:+.1f} %") + ("*" if v in starred else "")
        rows.append([v, pcell, NA_REP, _f(s["recall5"]["mean"]), _f(s["precision5"]["mean"]),
                     _f(vs.get("relative_change"), 1, pct=True) if vs else "-",
                     _p(s.get("p_bonferroni")) if vs else "-",
                     ", ".join(f"{k} {n}" for k, n in sorted(s.get("layers", {}).items()))])
    rt = _table(["Variant", "published (answer F1)", "replica", "Recall@5", "P@5", "ΔR@5 %", "p (Bonf.)", "layers"], rows)
    return nd, rt


def comparison_tables(real: dict, replica: dict | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for cond in ("moderate", "challenging", "stress"):
        if cond in real.get("ablation", {}):
            out[f"ablation_{cond}"] = ablation_table(real, replica, cond)
    if "cascade" in real:
        out["cascade"] = cascade_table(real, replica)
    if "archetypes" in real:
        out["archetypes"] = archetypes_table(real, replica)
        out["horizon"] = horizon_table(real, replica)
    if "pma" in real:
        out["pma"] = pma_table(real, replica)
        out["triple_copy"] = triple_copy_table(real, replica)
    if "retention" in real:
        out["retention"] = retention_table(real)
    if "sleep" in real:
        out["sleep"] = sleep_table(real)
    if "kg" in real:
        out["kg"] = kg_table(real)
    if "locomo" in real:
        out["nodecay"], out["routing"] = locomo_tables(real)
    return out


TITLES = {
    "ablation_moderate": "Ablation, moderate (300 facts, 100 queries, 45 days, S0 = 1/0.15 d)",
    "ablation_challenging": "Ablation, challenging (400 facts, 120 queries, 50 days, S0 = 1/0.20 d)",
    "ablation_stress": "Ablation, stress (500 facts, 150 queries, 60 days, S0 = 1/0.25 d)",
    "cascade": "Integration cascade (60 days, S0 = 1/0.30 d)",
    "archetypes": "Long-horizon archetypes, day 14",
    "horizon": "Long-horizon archetypes, precision@5 over time",
    "pma": "PMA suite",
    "triple_copy": "TripleCopy vs Ebbinghaus (strength composite)",
    "retention": "Retention curves (1,000 facts)",
    "sleep": "Sleep impact (7 days x 50 facts)",
    "kg": "Two-Factor KG dynamics and Bayesian propagation",
    "nodecay": "NoDecay on LoCoMo (MiniLM)",
    "routing": "Layer-routing ablation on LoCoMo (MiniLM)",
}


def format_markdown(real: dict, replica: dict | None) -> str:
    lines = [f"# zenbrain experiments: {real.get('label', 'real system')}", "",
             f"Seeds: {real.get('seeds')}; quick: {real.get('quick')}; runs: {real.get('runs')}; "
             f"wall time {real.get('seconds', 0):.1f} s with {real.get('workers')} worker(s).", "",
             f"Columns: **published** = `zenbrain.experiments.published` ({NA_PUB} = not in it), **replica** = "
             f"the paper's simulation protocol re-run (`run_replica`; {NA_REP} = not part of it), **real** = zenbrain. "
             "p values: exact Wilcoxon signed-rank over seeds (Bonferroni over the 15 removals where marked); "
             "d_z = paired Cohen's d. Definitions: docs/experiments.md.", ""]
    for key, table in comparison_tables(real, replica).items():
        lines += [f"## {TITLES.get(key, key)}", "", table, ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- plots
def write_plots(real: dict, replica: dict | None, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []
    if "retention" in real:
        r = real["retention"]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        pub_curves = _pub("PAPER_RETENTION_CURVES") or {}
        pub_hours = list(_pub("PAPER_RETENTION_HOURS") or ())
        for i, (st, v) in enumerate(r["strategies"].items()):
            color = f"C{i}"
            ax.plot(r["hours"], v["mean_retrievability"], marker="o", color=color, label=f"{st} (real)")
            if st in pub_curves and pub_hours:
                ax.plot(pub_hours, pub_curves[st], ls="--", marker="x", color=color, alpha=0.6, label=f"{st} (published)")
        ax.set_xscale("log")
        ax.set_xlabel("time since storage (hours)")
        ax.set_ylabel("mean retrievability")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"Retention curves: real zenbrain ({r['n_facts']} facts, {len(r['seeds'])} seeds) and the paper's")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        p = out / "retention_curves.png"
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    if "ablation" in real:
        conds = [c for c in ("moderate", "challenging", "stress") if c in real["ablation"]]
        pub = _pub("PAPER_GRADIENT_DELTA_Q_PCT") or {}
        panels = [("published", lambda m, c: pub.get(m, {}).get(c))]
        if replica and "ablation" in replica:
            panels.append(("replica", lambda m, c: 100 * (replica["ablation"].get(c, {}).get("rows", {})
                                                        .get(f"-{m}", {}).get("delta", {}).get("quality_rel", float("nan")))))
        def real_dq(m: str, c: str) -> float:
            row = real["ablation"][c]["rows"].get(f"-{m}")  # absent when only some rows were run
            return float("nan") if row is None else 100 * (row["vs_full"]["delta_q_rel"] or 0.0)

        panels.append(("real zenbrain", real_dq))
        fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 5.5), sharey=True)
        axes = np.atleast_1d(axes)
        y = np.arange(len(PAPER_FIFTEEN))
        h = 0.8 / max(1, len(conds))
        for ax, (title, get) in zip(axes, panels):
            for i, c in enumerate(conds):
                vals = [get(m, c) for m in PAPER_FIFTEEN]
                vals = [np.nan if v is None else v for v in vals]
                ax.barh(y + i * h - 0.4 + h / 2, vals, height=h, label=c)
            ax.axvline(0, color="black", lw=0.6)
            ax.set_title(title)
            ax.set_xlabel("ΔQ when removed (%)")
            ax.grid(True, axis="x", alpha=0.3)
        axes[0].set_yticks(y)
        axes[0].set_yticklabels([LABELS[m] for m in PAPER_FIFTEEN])
        axes[0].invert_yaxis()
        axes[-1].legend(loc="lower left")
        fig.suptitle("Criticality: relative change of Q = retention x recall@5 per removed mechanism")
        fig.tight_layout()
        p = out / "criticality.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    if "pma" in real:
        tc = real["pma"]["triple_copy"]
        names = list(tc)
        hours = [{"1h": 1, "6h": 6, "1d": 24, "3d": 72, "7d": 168, "14d": 336, "30d": 720}[n] for n in names]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        ax.plot(hours, [tc[n]["composite"] for n in names], marker="o", label="real, defaults (deep copy grows on recall/replay)")
        ax.plot(hours, [tc[n]["composite_paper_mode"] for n in names], marker="s", label="real, deep_initial_share = 1")
        ax.plot(hours, [tc[n]["ebbinghaus"] for n in names], marker="^", label="Ebbinghaus, S = 1 d")
        pub = _pub("PAPER_TRIPLE_COPY_TABLE") or {}
        if pub:
            ax.plot(hours, [pub[n][0] for n in names], ls="--", color="gray", label="published TripleCopy")
        ax.set_xscale("log")
        ax.set_xlabel("time since encoding (hours)")
        ax.set_ylabel("strength composite")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("TripleCopy composite of one trace, S0 ~ U(0.8, 1)")
        fig.tight_layout()
        p = out / "triple_copy.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    if "cascade" in real:
        tl = real["cascade"]["timeline"]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for k in ("full", "foundational_only", "bare", "no_sleep", "full_emotional", "full_neutral"):
            ax.plot(tl["days"], tl[k], marker="o", label=k)
        ax.set_xlabel("day")
        ax.set_ylabel("retention")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("Integration cascade, real zenbrain")
        fig.tight_layout()
        p = out / "cascade.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    return x


def write_outputs(real: dict, replica: dict | None, out: str | Path, *, plots: bool = True) -> dict[str, Path]:
    """Write ``results.json`` (real and replica), ``report.md`` and the PNG plots."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    pj = out / "results.json"
    pj.write_text(json.dumps(_jsonable({"real": real, "replica": replica}), indent=1, allow_nan=False))
    paths["json"] = pj
    pm = out / "report.md"
    pm.write_text(format_markdown(real, replica))
    paths["markdown"] = pm
    if plots:
        for p in write_plots(real, replica, out):
            paths[p.stem] = p
    return paths


def fill_doc(doc: str | Path, real: dict, replica: dict | None) -> int:
    """Replace every ``<!-- BEGIN table:KEY -->`` ... ``<!-- END table:KEY -->`` block of a
    markdown file with the generated table KEY (see :func:`comparison_tables`), so the
    numbers in docs/experiments.md come from a run, never from typing. Returns the number
    of tables filled."""
    import re

    path = Path(doc)
    text = path.read_text(encoding="utf-8")
    tables = comparison_tables(real, replica)
    n = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal n
        key = m.group(1)
        if key not in tables:
            return m.group(0)
        n += 1
        return f"<!-- BEGIN table:{key} -->\n{tables[key]}\n<!-- END table:{key} -->"

    text = re.sub(r"<!-- BEGIN table:(\w+) -->.*?<!-- END table:\1 -->", sub, text, flags=re.DOTALL)
    path.write_text(text, encoding="utf-8")
    return n


def fill_doc_from_files(doc: str | Path, *results_json: str | Path) -> int:
    """:func:`fill_doc` from one or more ``results.json`` files written by
    :func:`write_outputs` (later files add or override experiments)."""
    real: dict[str, Any] = {}
    replica: dict[str, Any] | None = None
    for p in results_json:
        data = json.loads(Path(p).read_text())
        real.update({k: v for k, v in data["real"].items()})
        if data.get("replica"):
            replica = {**(replica or {}), **data["replica"]}
    return fill_doc(doc, real, replica)
