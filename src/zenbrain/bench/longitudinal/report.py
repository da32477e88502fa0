"""Tables (terminal and markdown) and files for the longitudinal benchmarks."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ..report import _finite, _table, save_json

__all__ = [
    "mechanisms_markdown",
    "noise_table",
    "noise_trace",
    "timeline_details",
    "timeline_table",
    "update_views_table",
    "updates_table",
    "write_files",
]

DAY = 86400.0


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    return f"{x:.{digits}f}"


def _mean(block: dict[str, Any] | None, metric: str) -> float | None:
    if not block:
        return None
    s = block.get(metric)
    return None if not s else s.get("mean")


def _ci(block: dict[str, Any] | None, metric: str) -> str:
    if not block or not block.get(metric):
        return "–"
    s = block[metric]
    out = _f(s.get("mean"))
    if s.get("low") is not None and s.get("high") is not None:
        out += f" [{_f(s['low'])}, {_f(s['high'])}]"
    return out


def timeline_table(results: dict[str, Any], *, markdown: bool = False, ci: bool = False) -> str:
    """Static and longitudinal LoCoMo side by side (end questions; fresh/end pairs; updates)."""
    ks = results["ks"]
    k0, k1 = min(ks), max(ks)
    header = ["system", "mode", f"R@{k0}", f"R@{k1}", f"hit@{k0}", f"ndcg@{k1}", f"mrr@{k1}",
              f"fresh R@{k0}", f"end R@{k0} (same q)", "update cur@1", "update stale>cur",
              "active / stored", "lifecycle s"]
    rows: list[list[str]] = []
    static = results.get("static")
    if static:
        for name, s in static["systems"].items():
            o = s["summary"]["overall"]
            rows.append([name, "static", _ci(o, f"evidence_recall@{k0}") if ci else _f(_mean(o, f"evidence_recall@{k0}")),
                         _f(_mean(o, f"evidence_recall@{k1}")), _f(_mean(o, f"hit@{k0}")),
                         _f(_mean(o, f"ndcg@{k1}")), _f(_mean(o, f"mrr@{k1}")), "–", "–", "–", "–", "–", "–"])
    for name, s in results["systems"].items():
        summ = s.get("summary", {})
        end = (summ.get("end") or {}).get("overall")
        fresh = (summ.get("fresh") or {}).get("overall")
        same = (summ.get("end_on_fresh_subset") or {}).get("overall")
        upd = (summ.get("update") or {}).get("overall") or {}
        life = [x for x in (s.get("lifecycle") or {}).values() if x.get("memories") is not None]
        stored = sum(x["memories"] for x in life)
        active = sum(x["active"] for x in life)
        lsec = sum(x.get("lifecycle_seconds") or 0.0 for x in life)
        rows.append([
            name, "timeline", _ci(end, f"evidence_recall@{k0}") if ci else _f(_mean(end, f"evidence_recall@{k0}")),
            _f(_mean(end, f"evidence_recall@{k1}")), _f(_mean(end, f"hit@{k0}")), _f(_mean(end, f"ndcg@{k1}")),
            _f(_mean(end, f"mrr@{k1}")), _f(_mean(fresh, f"evidence_recall@{k0}")),
            _f(_mean(same, f"evidence_recall@{k0}")),
            _f((upd.get("current_at_1") or {}).get("mean")), _f((upd.get("stale_above") or {}).get("mean")),
            f"{active:,} / {stored:,}" if life else "–", _f(lsec, 1) if life else "–",
        ])
    return _table(header, rows, markdown=markdown)


def timeline_details(results: dict[str, Any]) -> str:
    """Markdown: the diagnostic views and archived shares of each zenbrain system."""
    k0 = min(results["ks"])
    parts: list[str] = []
    for name, s in results["systems"].items():
        views = s.get("views")
        shares = s.get("archived_share")
        if not views and not shares:
            continue
        parts.append(f"### {name}")
        end = ((s.get("summary") or {}).get("end") or {}).get("overall")
        if views:
            rows = [["as stored (end)", _f(_mean(end, f"evidence_recall@{k0}"))]]
            label = {"with_archived": "+ archived memories back in the candidates",
                     "no_retrievability": "+ retrievability factor neutralised (floor 1)",
                     "no_layer_weights": "+ query-type layer weights off"}
            for v, data in views.items():
                rows.append([label.get(v, v), _f((data["summary"].get(f"evidence_recall@{k0}") or {}).get("mean"))])
            parts.append(_table(["final store, read-only", f"R@{k0}"], rows, markdown=True))
        if shares:
            rows = [[cls, _f(v["share"]), f"{v['archived']:,} / {v['n']:,}"] for cls, v in shares.items()]
            parts.append(_table(["turns", "archived share", "archived / stored"], rows, markdown=True))
        life = s.get("lifecycle") or {}
        rows = []
        for sid, x in life.items():
            if x.get("memories") is None:
                continue
            sec = x.get("seconds") or {}
            cpu = x.get("cpu_seconds") or {}
            rows.append([sid, str(x["nights"]), f"{x['active']:,} / {x['memories']:,}", f"{x['edges']:,}",
                         f"{x['file_bytes'] / 1e6:.1f} MB", _f(sec.get("store"), 1), _f(sec.get("context_recall"), 1),
                         _f(sec.get("decay"), 1), _f(sec.get("sleep"), 1), _f(x.get("night_seconds_median"), 3),
                         _f(cpu.get("store"), 1), _f(cpu.get("decay"), 1), _f(cpu.get("sleep"), 1)])
        if rows:
            parts.append(_table(["conversation", "nights", "active / stored", "edges", "file", "store s",
                                 "context recall s", "decay s", "sleep s", "night median s", "store CPU s",
                                 "decay CPU s", "sleep CPU s"], rows, markdown=True))
    return "\n\n".join(parts)


def updates_table(results: dict[str, Any], *, markdown: bool = False) -> str:
    header = ["system", "source", "n", "current@1", "stale above current", "current@5", "MRR current",
              "changed: cur@1", "changed: stale>cur", "unchanged: cur@1"]
    rows = []
    for source, block in results["sources"].items():
        for name, s in block["systems"].items():
            o = s["summary"]["overall"]
            g = s["summary"]["groups"]
            rows.append([name, source, str(o["n"]), _ci(o, "current_at_1"), _f(_mean(o, "stale_above")),
                         _f(_mean(o, "current_at_k")), _f(_mean(o, "current_rr")),
                         _f(_mean(g.get("changed"), "current_at_1")), _f(_mean(g.get("changed"), "stale_above")),
                         _f(_mean(g.get("unchanged"), "current_at_1"))])
    return _table(header, rows, markdown=markdown)


def update_views_table(results: dict[str, Any]) -> str:
    """Markdown: current@1 and stale-above-current of each zenbrain final store, one cause taken away at a time."""
    label = {"with_archived": "+ archived back", "no_retrievability": "+ retrievability neutralised",
             "no_layer_weights": "+ layer weights off"}
    rows = []
    for source, block in results["sources"].items():
        for name, s in block["systems"].items():
            views = s.get("views")
            if not views:
                continue
            o = s["summary"]["overall"]
            cells = [f"{_f(_mean(o, 'current_at_1'))} / {_f(_mean(o, 'stale_above'))}"]
            for v in label:
                vo = (views.get(v) or {}).get("summary", {}).get("overall")
                cells.append(f"{_f(_mean(vo, 'current_at_1'))} / {_f(_mean(vo, 'stale_above'))}" if vo else "–")
            rows.append([name, source, *cells])
    if not rows:
        return ""
    return _table(["system", "source", "as stored", *label.values()], rows, markdown=True) + \
        "\n\n(current@1 / stale above current; each column adds its change to the one before, read-only)"


def noise_table(results: dict[str, Any], *, markdown: bool = False) -> str:
    header = ["system", "R@5", "P@5", "R@10", "active / stored", "archived: noise", "low-value", "evidence",
              "other", "lifecycle s"]
    rows = []
    for name, s in results["systems"].items():
        o = s["summary"]["overall"]
        sh = s.get("shares") or {}
        life = [x for x in (s.get("lifecycle") or {}).values() if x.get("memories") is not None]
        rows.append([name, _ci(o, "evidence_recall@5"), _f(_mean(o, "precision@5")), _f(_mean(o, "evidence_recall@10")),
                     f"{sum(x['active'] for x in life):,} / {sum(x['memories'] for x in life):,}" if life else "–",
                     *[_f((sh.get(c) or {}).get("share")) for c in ("noise", "low_value", "evidence", "other")],
                     _f(sum(x.get("lifecycle_seconds") or 0.0 for x in life), 1) if life else "–"])
    return _table(header, rows, markdown=markdown)


def noise_trace(results: dict[str, Any]) -> str:
    """Markdown: active store size week by week, per system and conversation."""
    parts = []
    for name, s in results["systems"].items():
        for sid, x in (s.get("lifecycle") or {}).items():
            trace = x.get("trace") or []
            if not trace:
                continue
            weekly = trace[::7]
            t0 = trace[0]["t"]
            cells = " ".join(f"{(n['t'] - t0) / DAY / 7:.0f}w:{n['active']}" for n in weekly)
            parts.append(f"- {name} {sid} (week:active memories): {cells}")
    return "\n".join(parts)


def _p(x: Any) -> str:
    if x is None:
        return "–"
    return f"{x:.1e}" if x < 0.001 else f"{x:.3f}"


def mechanisms_markdown(summary: dict[str, Any], *, title: str = "Mechanisms through time") -> str:
    lines = [f"# {title}", "", "Δ, CI and p: the row minus `full` on the same questions (Wilcoxon signed-rank, "
             "Bonferroni over the zenbrain rows; baselines unadjusted). q changed: questions whose primary metric "
             "differs from `full` (0 = the row changed no outcome)."]
    plan = summary["plan"]
    lines.append(f"Conversations: {', '.join(plan['conversations'])}; update seeds: {plan['update_seeds']}; "
                 f"embedder {plan['embedder_name']}; protocol {plan['protocol']}; seed {plan['seed']}.")
    if summary.get("errors"):
        lines += ["", "**Failed runs** (left out of the tables):"]
        lines += [f"- {k}: {v}" for k, v in summary["errors"].items()]
    for w, block in summary["workloads"].items():
        primary = block["primary"]
        lines += ["", f"## {w} ({primary}, units: {', '.join(block['units'])})", ""]
        sec = [m for m in next(iter(block["rows"].values())) if m.startswith(("evidence_recall@10", "stale_above",
                                                                                "precision@5", "fresh_", "update_"))]
        header = ["row", primary, "Δ vs full", "95% CI", "p (Bonf.)", "q changed", *sec, "active / stored",
                  "lifecycle CPU s", "what it did (totals)"]
        rows = []
        for name, e in block["rows"].items():
            vs = e.get("vs_full") or {}
            ci = vs.get("ci95") or [None, None]
            tot = e.get("totals") or {}
            did = ", ".join(f"{k} {int(v):,}" for k, v in tot.items() if v)
            if e.get("monitor_hit_rate") is not None:
                did += f", monitor hit rate {e['monitor_hit_rate']:.2f}"
            if e.get("revisions"):
                did += ", revisions " + ", ".join(f"{k} {v}" for k, v in e["revisions"].items())
            if e.get("shares"):
                sh = e["shares"]
                did = "archived: " + ", ".join(f"{c} {_f((sh.get(c) or {}).get('share'), 2)}"
                                               for c in ("noise", "low_value", "evidence", "other") if c in sh) + \
                    ("; " + did if did else "")
            rows.append([name, _f(e.get(primary)), _f(vs.get("difference"), 3) if vs else "–",
                         f"[{_f(ci[0])}, {_f(ci[1])}]" if vs else "–",
                         (_p(vs.get("p_bonferroni")) if e["kind"] == "zenbrain" else _p(vs.get("p"))) if vs else "–",
                         f"{vs.get('n_nonzero')}/{vs.get('n')}" if vs else "–",
                         *[_f(e.get(m)) for m in sec],
                         f"{e['active']:,} / {e['memories']:,}" if "memories" in e else "–",
                         _f(e.get("lifecycle_cpu_seconds"), 1), did or "–"])
        lines.append(_table(header, rows, markdown=True))
    return "\n".join(lines)


def write_files(obj: dict[str, Any], markdown: str, out_dir: str | os.PathLike[str], stem: str) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": save_json(_finite(obj), out / f"{stem}.json")}
    md = out / f"{stem}.md"
    md.write_text(markdown.rstrip("\n") + "\n", encoding="utf-8")
    paths["markdown"] = md
    return paths
