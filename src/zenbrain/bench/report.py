"""Reports for runner results: JSON, markdown tables, PNG plots and terminal tables."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "load_results",
    "locomo_table",
    "longmemeval_table",
    "markdown_report",
    "plot_metric_at_k",
    "plot_metric_by_group",
    "results_table",
    "save_json",
    "write_report",
]

_LOCOMO_GROUP_ORDER = ["single-hop", "multi-hop", "temporal", "open-domain", "adversarial"]


# --------------------------------------------------------------------------- helpers


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def _cell(stats: dict[str, Any] | None, *, ci: bool, digits: int = 3) -> str:
    if not stats:
        return "–"
    s = _fmt(stats.get("mean"), digits)
    if ci and stats.get("low") is not None and stats.get("high") is not None:
        s += f" [{_fmt(stats['low'], digits)}, {_fmt(stats['high'], digits)}]"
    return s


def _groups(results: dict[str, Any]) -> list[str]:
    found: set[str] = set()
    for sysres in results["systems"].values():
        found.update(sysres.get("summary", {}).get("groups", {}).keys())
    if results.get("benchmark") == "locomo":
        ordered = [g for g in _LOCOMO_GROUP_ORDER if g in found]
        return ordered + sorted(found - set(ordered))
    return sorted(found)


def _n_scored(sysres: dict[str, Any], metric: str, group: str | None = None) -> int:
    summary = sysres.get("summary", {})
    block = summary.get("overall", {}) if group is None else summary.get("groups", {}).get(group, {})
    return int(block.get(metric, {}).get("n", 0))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]
    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _title(results: dict[str, Any]) -> str:
    if results["benchmark"] == "locomo":
        return f"LoCoMo turn-level retrieval ({results['mode']})"
    return "LongMemEval retrieval (per-question haystacks)"


# --------------------------------------------------------------------------- terminal


def _overall_rows(results: dict[str, Any], metrics: Sequence[str], *, ci: bool) -> list[list[str]]:
    rows: list[list[str]] = []
    headline = set(results.get("headline_metrics", []))
    for name, sysres in results["systems"].items():
        overall = sysres.get("summary", {}).get("overall", {})
        cells = [name]
        cells += [_cell(overall.get(m), ci=ci and m in headline) for m in metrics]
        cells.append(str(_n_scored(sysres, metrics[0])))
        rows.append(cells)
    return rows


def locomo_table(results: dict[str, Any], metrics: Sequence[str] | None = None, *, ci: bool = False) -> str:
    """Plain-text retrieval table (one row per system) for the terminal."""
    if results.get("benchmark") != "locomo":
        raise ValueError("locomo_table needs LoCoMo results")
    ks = results["ks"]
    if metrics is None:
        metrics = [f"evidence_recall@{k}" for k in ks] + [f"hit@{k}" for k in ks]
        metrics += [f"ndcg@{k}" for k in ks] + [f"mrr@{max(ks)}", f"precision@{min(ks)}"]
    header = ["system", *metrics, "n"]
    rows = _overall_rows(results, metrics, ci=ci)
    for row, sysres in zip(rows, results["systems"].values()):
        lat = sysres["timing"]["search_latency_ms"]
        row += [_fmt(sysres["timing"]["ingest_seconds"], 2), _fmt(lat["p50"], 2), _fmt(lat["p95"], 2)]
    header += ["ingest_s", "search_p50_ms", "search_p95_ms"]
    return f"{_title(results)}\n" + _table(header, rows, markdown=False)


def longmemeval_table(results: dict[str, Any], metrics: Sequence[str] | None = None, *, ci: bool = False) -> str:
    """Plain-text LongMemEval retrieval table for the terminal."""
    if results.get("benchmark") != "longmemeval":
        raise ValueError("longmemeval_table needs LongMemEval results")
    ks = results["ks"]
    if metrics is None:
        metrics = []
        for level in ("session", "turn"):
            for k in ks:
                metrics += [f"{level}_recall_any@{k}", f"{level}_recall_all@{k}", f"{level}_ndcg@{k}"]
    header = ["system", *metrics, "n"]
    rows = _overall_rows(results, metrics, ci=ci)
    for row, sysres in zip(rows, results["systems"].values()):
        lat = sysres["timing"]["search_latency_ms"]
        row += [_fmt(sysres["timing"]["ingest_seconds"], 2), _fmt(lat["p50"], 2), _fmt(lat["p95"], 2)]
    header += ["ingest_s", "search_p50_ms", "search_p95_ms"]
    return f"{_title(results)}\n" + _table(header, rows, markdown=False)


def results_table(results: dict[str, Any], *, ci: bool = False) -> str:
    """``locomo_table`` or ``longmemeval_table``, whichever fits."""
    if results.get("benchmark") == "locomo":
        return locomo_table(results, ci=ci)
    return longmemeval_table(results, ci=ci)


# --------------------------------------------------------------------------- markdown


def markdown_report(results: dict[str, Any], *, title: str | None = None, plot_files: Sequence[str] = ()) -> str:
    """A markdown report: overall table (CIs on headline metrics), per-group tables, timing."""
    ks = results["ks"]
    headline = list(results.get("headline_metrics", []))
    names = list(results.get("metric_names", []))
    bs = results.get("bootstrap", {})
    group_label = "category" if results["benchmark"] == "locomo" else "question type"
    out: list[str] = [f"# {title or _title(results)}", ""]

    ds = results.get("dataset", {})
    out.append("Dataset: " + ", ".join(f"{k} = {v}" for k, v in ds.items() if not isinstance(v, list)) + ".")
    if results["benchmark"] == "locomo" and ds.get("sample_ids"):
        out.append(f"Samples: {', '.join(ds['sample_ids'])}.")
    out.append(
        f"Cut-offs k = {', '.join(map(str, ks))}; each system returned at most {results['search_k']} ids per question."
    )
    out.append(
        f"Intervals: {round(100 * bs.get('confidence', 0.95))}% bootstrap ({bs.get('method', 'percentile')}, "
        f"{bs.get('n_resamples', 2000)} resamples, seed {bs.get('seed', 0)}) over questions, "
        "shown in brackets for the headline metrics."
    )
    out.append("Metric definitions: docs/benchmarks.md.")
    out.append("")

    out += ["## Overall", ""]
    overall_metrics = headline + [m for m in names if m not in headline]
    header = ["system", *overall_metrics, "n"]
    out.append(_table(header, _overall_rows(results, overall_metrics, ci=True), markdown=True))
    out.append("")

    groups = _groups(results)
    if groups:
        out += [f"## By {group_label}", ""]
        for m in headline:
            out += [f"### {m}", ""]
            header = ["system", *[f"{g} (n={_group_n(results, m, g)})" for g in groups]]
            rows = []
            for name, sysres in results["systems"].items():
                gs = sysres.get("summary", {}).get("groups", {})
                rows.append([name, *[_cell(gs.get(g, {}).get(m), ci=True) for g in groups]])
            out.append(_table(header, rows, markdown=True))
            out.append("")

    out += ["## Timing", ""]
    rows = []
    for name, sysres in results["systems"].items():
        t = sysres["timing"]
        lat = t["search_latency_ms"]
        rows.append([name, _fmt(t["ingest_seconds"], 3), str(t["search_count"]), _fmt(lat["p50"], 3), _fmt(lat["p95"], 3)])
    out.append(_table(["system", "ingest_seconds", "searches", "search_p50_ms", "search_p95_ms"], rows, markdown=True))
    out.append("")

    if plot_files:
        out += ["## Plots", ""]
        out += [f"![{Path(p).stem}]({Path(p).name})" for p in plot_files]
        out.append("")
    return "\n".join(out)


def _group_n(results: dict[str, Any], metric: str, group: str) -> int:
    return max((_n_scored(s, metric, group) for s in results["systems"].values()), default=0)


# --------------------------------------------------------------------------- plots


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_metric_by_group(results: dict[str, Any], metric: str, path: str | os.PathLike[str]) -> Path:
    """Grouped bar chart of ``metric`` per group (category / question type), one bar per system."""
    import numpy as np

    plt = _pyplot()
    groups = _groups(results)
    labels = ["overall", *groups]
    systems = list(results["systems"])
    width = 0.8 / max(1, len(systems))
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels) + 2), 4.0))
    for i, name in enumerate(systems):
        summary = results["systems"][name].get("summary", {})
        blocks = [summary.get("overall", {})] + [summary.get("groups", {}).get(g, {}) for g in groups]
        means = [b.get(metric, {}).get("mean", float("nan")) for b in blocks]
        lows = [b.get(metric, {}).get("low") for b in blocks]
        highs = [b.get(metric, {}).get("high") for b in blocks]
        yerr = None
        if all(lo is not None and hi is not None for lo, hi in zip(lows, highs)):
            yerr = np.array([[m - lo for m, lo in zip(means, lows)], [hi - m for m, hi in zip(means, highs)]])
            yerr = np.clip(yerr, 0, None)
        ax.bar(x + (i - (len(systems) - 1) / 2) * width, means, width, label=name, yerr=yerr, capsize=2)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.set_title(f"{_title(results)}: {metric}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return p


def plot_metric_at_k(results: dict[str, Any], family: str, path: str | os.PathLike[str]) -> Path:
    """Overall ``family@k`` against k for every system (e.g. ``family="evidence_recall"``)."""
    plt = _pyplot()
    ks = results["ks"]
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    for name, sysres in results["systems"].items():
        overall = sysres.get("summary", {}).get("overall", {})
        ax.plot(ks, [overall.get(f"{family}@{k}", {}).get("mean", float("nan")) for k in ks], marker="o", label=name)
    ax.set_xticks(ks)
    ax.set_xlabel("k")
    ax.set_ylabel(f"{family}@k")
    ax.set_ylim(0, 1)
    ax.set_title(_title(results))
    ax.legend(fontsize="small")
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return p


# --------------------------------------------------------------------------- files


def save_json(results: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1, allow_nan=False, default=_json_default)
        fh.write("\n")
    return p


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_report(
    results: dict[str, Any],
    out_dir: str | os.PathLike[str],
    *,
    stem: str | None = None,
    title: str | None = None,
    plots: bool = True,
) -> dict[str, Path]:
    """Write ``<stem>.json``, ``<stem>.md`` and PNG plots into ``out_dir``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = stem or (results["benchmark"] if results["benchmark"] != "locomo" else f"locomo_{results['mode']}")
    paths: dict[str, Path] = {"json": save_json(_finite(results), out / f"{stem}.json")}
    plot_paths: list[Path] = []
    if plots:
        family = "evidence_recall" if results["benchmark"] == "locomo" else "session_recall_any"
        for k in results["ks"]:
            metric = f"{family}@{k}"
            plot_paths.append(plot_metric_by_group(results, metric, out / f"{stem}_{metric.replace('@', '_at_')}_by_group.png"))
        if len(results["ks"]) > 1:
            plot_paths.append(plot_metric_at_k(results, family, out / f"{stem}_{family}_at_k.png"))
        if results["benchmark"] == "longmemeval":
            metric = f"turn_recall_any@{max(results['ks'])}"
            plot_paths.append(plot_metric_by_group(results, metric, out / f"{stem}_{metric.replace('@', '_at_')}_by_group.png"))
        for i, p in enumerate(plot_paths):
            paths[f"plot{i}"] = p
    md = markdown_report(results, title=title, plot_files=[str(p) for p in plot_paths])
    md_path = out / f"{stem}.md"
    md_path.write_text(md + "\n", encoding="utf-8")
    paths["markdown"] = md_path
    return paths


def _finite(obj: Any) -> Any:
    """Copy with NaN / inf floats replaced by None (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
