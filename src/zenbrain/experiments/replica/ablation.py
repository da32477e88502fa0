"""The 15-mechanism ablation of the paper's simulation protocol (REFERENCE.md 3.1-3.4).

Part of the replica of *the paper's simulation protocol, not zenbrain*.

For each condition (moderate / challenging / stress) and each seed, the harness
re-seeds Mulberry32, regenerates the same dataset, stores the facts, ages them day by
day and runs every query once. Because the dataset draws come first and do not depend
on the configuration, the replica generates each (condition, seed) dataset and its
cosine matrix once and starts every configuration's stream at the position where the
dataset ends - the same draws the harness makes.

Metrics per seed: retention = mean strength; "P@5" = hits / min(5, |rel|) (this is
recall@5); NDCG@5 with binary gains; Q = retention * "P@5". Across seeds: means,
sample SDs, absolute deltas, ΔQ = (mean Q_abl - mean Q_full) / mean Q_full, and the
protocol's own Wilcoxon and Cohen's d (``stats``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zenbrain.registry import PAPER_FIFTEEN

from .data import AblationDataset, ablation_dataset, cosine_matrix
from .prng import Stream
from .simulation import (
    ABLATION_RULES,
    PAPER_LABELS,
    PMA_SIX,
    PROTOCOL_IDS,
    ablation_score_matrix,
    age_days,
    enabled_set,
    store_ablation,
    top_k,
)
from .stats import js_mean, js_std, js_sum, protocol_cohens_d, protocol_wilcoxon

__all__ = ["CONDITIONS", "SEEDS", "Condition", "configurations", "run_condition", "run_config"]

SEEDS: tuple[int, ...] = (42, 123, 456, 789, 1024, 2048, 3072, 4096, 5120, 6144)
K = 5


@dataclass(frozen=True)
class Condition:
    name: str
    n_facts: int
    n_queries: int
    aging_days: int
    base_decay: float


CONDITIONS: dict[str, Condition] = {
    "moderate": Condition("moderate", 300, 100, 45, 0.15),
    "challenging": Condition("challenging", 400, 120, 50, 0.20),
    "stress": Condition("stress", 500, 150, 60, 0.25),
}

_LOG2 = [math.log2(i + 2) for i in range(K)]


def configurations() -> list[tuple[str, tuple[str, ...]]]:
    """(config name, disabled registry names): Full, the 15 single removals, No-PMA, Bare."""
    rows: list[tuple[str, tuple[str, ...]]] = [("full", ())]
    rows += [(f"-{name}", (name,)) for name in PAPER_FIFTEEN]
    rows.append(("no_pma", PMA_SIX))
    rows.append(("bare", tuple(PAPER_FIFTEEN)))
    return rows


@dataclass(frozen=True)
class _Prepared:
    data: AblationDataset
    cos: np.ndarray
    relevant_mask: np.ndarray  # (Q, F) bool
    n_rel: np.ndarray  # distinct relevant per query
    idcg: np.ndarray


def _prepare(seed: int, cond: Condition) -> _Prepared:
    data = ablation_dataset(seed, cond.n_facts, cond.n_queries)
    cos = cosine_matrix(data.query_emb, data.fact_emb)
    mask = np.zeros(cos.shape, dtype=bool)
    for qi, rel in enumerate(data.relevant):
        mask[qi, list(rel)] = True
    n_rel = mask.sum(axis=1)
    idcg = np.zeros(len(n_rel))
    for qi, m in enumerate(n_rel):
        acc = 0.0
        for i in range(min(K, int(m))):
            acc += 1 / _LOG2[i]
        idcg[qi] = acc
    return _Prepared(data, cos, mask, n_rel, idcg)


def _run_seed(prep: _Prepared, seed: int, cond: Condition, on: frozenset[str]) -> tuple[float, float, float]:
    stream = Stream(seed, prep.data.draws_used)
    state = store_ablation(stream, cond.n_facts, on)
    age_days(state, stream, cond.aging_days, cond.base_decay, on, ABLATION_RULES)
    retention = js_mean(state.strength)
    scores = ablation_score_matrix(prep.cos, state, on)
    top = top_k(scores, K)
    hit = np.take_along_axis(prep.relevant_mask, top, axis=1)  # (Q, K) bool
    hits = hit.sum(axis=1)
    precision = hits / np.minimum(K, prep.n_rel)
    dcg = np.zeros(hit.shape[0])
    for i in range(K):
        dcg = dcg + hit[:, i] / _LOG2[i]
    ndcg = np.where(prep.idcg == 0, 0.0, dcg / np.where(prep.idcg == 0, 1.0, prep.idcg))
    n_q = hit.shape[0]
    return retention, js_sum(precision) / n_q, js_sum(ndcg) / n_q


def run_config(
    cond: Condition, disabled: Iterable[str], seeds: Sequence[int] = SEEDS, prepared: dict | None = None
) -> dict[str, list[float]]:
    """Per-seed retention, "P@5", NDCG@5 and Q for one configuration."""
    on = enabled_set(disabled)
    out: dict[str, list[float]] = {"retention": [], "p5": [], "ndcg5": [], "quality": []}
    for seed in seeds:
        prep = prepared[seed] if prepared is not None else _prepare(seed, cond)
        ret, p5, ndcg = _run_seed(prep, seed, cond, on)
        out["retention"].append(ret)
        out["p5"].append(p5)
        out["ndcg5"].append(ndcg)
        out["quality"].append(ret * p5)
    return out


def _summary(values: dict[str, list[float]], base: dict[str, list[float]] | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        key: {"mean": js_mean(vals), "std": js_std(vals), "per_seed": list(vals)} for key, vals in values.items()
    }
    if base is None:
        row["delta"] = {"retention": 0.0, "p5": 0.0, "ndcg5": 0.0, "quality_rel": 0.0}
        row["wilcoxon"] = None
        row["cohens_d"] = None
        return row
    base_q = js_mean(base["quality"])
    row["delta"] = {
        "retention": js_mean(values["retention"]) - js_mean(base["retention"]),
        "p5": js_mean(values["p5"]) - js_mean(base["p5"]),
        "ndcg5": js_mean(values["ndcg5"]) - js_mean(base["ndcg5"]),
        "quality_rel": (js_mean(values["quality"]) - base_q) / base_q if base_q > 0 else 0.0,
    }
    row["wilcoxon"] = protocol_wilcoxon(base["quality"], values["quality"])
    row["cohens_d"] = protocol_cohens_d(base["quality"], values["quality"])
    return row


def run_condition(name: str, seeds: Sequence[int] = SEEDS) -> dict:
    """All 18 configurations of one condition; plain, JSON-able dict."""
    cond = CONDITIONS[name]
    seeds = tuple(seeds)
    prepared = {seed: _prepare(seed, cond) for seed in seeds}
    results: dict[str, dict[str, list[float]]] = {}
    for cfg, disabled in configurations():
        results[cfg] = run_config(cond, disabled, seeds, prepared)
    base = results["full"]
    rows = {}
    for cfg, disabled in configurations():
        row = _summary(results[cfg], None if cfg == "full" else base)
        row["disabled"] = list(disabled)
        row["disabled_protocol_ids"] = [PROTOCOL_IDS[d] for d in disabled]
        if len(disabled) == 1:
            row["label"] = "- " + PAPER_LABELS[disabled[0]]
        else:
            row["label"] = {"full": "Full System (15 alg.)", "no_pma": "No PMA (Foundational-only)", "bare": "No Algorithms (bare)"}[cfg]
        rows[cfg] = row
    return {
        "condition": {
            "name": cond.name,
            "n_facts": cond.n_facts,
            "n_queries": cond.n_queries,
            "aging_days": cond.aging_days,
            "base_decay": cond.base_decay,
        },
        "seeds": list(seeds),
        "rows": rows,
    }
