"""The competitive comparison / long-horizon archetypes of the paper's simulation protocol.

Part of the replica of *the paper's simulation protocol, not zenbrain* (REFERENCE.md
3.7). Three "design archetypes" on 100 random facts and 50 queries, aged 14 days:

* Static RAG - plain cosine.
* Simple Memory - ``s = 0.4 + 0.6 importance``, ``s *= exp(-0.15 days)`` in one step;
  facts with ``s <= 0.1`` become inaccessible; score ``cos (0.5 + 0.5 s)``.
* Full "ZenBrain" - the ablation multipliers with this harness's variants
  (initial 0.9 x 1.15 x (1 + 0.15 importance + 0.2 if emotional), emotional decay
  x0.65, no neuromodulated learning rate), score
  ``cos (0.7 + 0.3 s) 1.05 (1 + 0.15 importance) 1.02 1.01 1.02``.

Here P@5 is true precision (hits / 5); R@5 = hits / |distinct relevant|; MRR over the
top 5; NDCG@5 with ideal = min(5, number of drawn relevant ids, repeats included).
Means and SDs are over the 500 per-query values (10 seeds x 50 queries), and the
protocol's Wilcoxon runs over those 500 values too.

The long-horizon part re-runs the three systems at days 1, 7, 14, 30 and 60 on the same
dataset and reports the mean P@5 over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .ablation import SEEDS
from .data import (
    COMPETITIVE_CATEGORIES,
    COMPETITIVE_DIFFICULTIES,
    CompetitiveDataset,
    competitive_dataset,
    cosine_matrix,
)
from .prng import Stream
from .simulation import COMPETITIVE_RULES, MemoryState, advance_day, enabled_set
from .stats import js_mean, js_std, protocol_cohens_d, protocol_wilcoxon

__all__ = ["AGING_DAYS", "LONG_HORIZON_DAYS", "SYSTEMS", "run_competitive"]

K = 5
AGING_DAYS = 14
LONG_HORIZON_DAYS = (1, 7, 14, 30, 60)
SYSTEMS = ("static_rag", "simple_memory", "full_zenbrain")
SYSTEM_LABELS = {"static_rag": "Static RAG", "simple_memory": "Simple Memory", "full_zenbrain": "Full ZenBrain"}
SIMPLE_DECAY = 0.15
SIMPLE_THRESHOLD = 0.1
_LOG2 = [math.log2(i + 2) for i in range(K)]


def _ranked(scores: np.ndarray, accessible: np.ndarray | None = None) -> list[list[int]]:
    out = []
    for row in scores:
        if accessible is None:
            idx = np.argsort(-row, kind="stable")[:K]
        else:
            cand = np.flatnonzero(accessible)
            idx = cand[np.argsort(-row[cand], kind="stable")[:K]]
        out.append(idx.tolist())
    return out


def _static_scores(cos: np.ndarray) -> np.ndarray:
    return cos


def _simple_strength(ds: CompetitiveDataset, days: int) -> np.ndarray:
    s = 0.4 + 0.6 * ds.importance
    return s * math.exp(-SIMPLE_DECAY * days)


def _simple_ranked(cos: np.ndarray, ds: CompetitiveDataset, days: int) -> list[list[int]]:
    s = _simple_strength(ds, days)
    return _ranked(cos * (0.5 + 0.5 * s)[None, :], s > SIMPLE_THRESHOLD)


def _full_state(ds: CompetitiveDataset, days: int) -> MemoryState:
    on = enabled_set(())
    strength = np.full(ds.importance.shape, 0.9) * 1.15
    strength = strength * (1.0 + 0.15 * ds.importance + np.where(ds.arousal > 0.6, 0.2, 0.0))
    state = MemoryState(strength=np.minimum(1.0, strength), arousal=ds.arousal, valence=ds.valence, importance=ds.importance)
    for _ in range(days):
        advance_day(state, SIMPLE_DECAY, on, COMPETITIVE_RULES, None)
    return state


def _full_ranked(cos: np.ndarray, ds: CompetitiveDataset, days: int) -> list[list[int]]:
    state = _full_state(ds, days)
    score = cos * (0.7 + 0.3 * state.strength)[None, :]
    score = score * 1.05
    score = score * (1.0 + 0.15 * ds.importance)[None, :]
    score = score * 1.02
    score = score * 1.01
    score = score * 1.02
    return _ranked(score)


def _metrics(retrieved: list[int], relevant: tuple[int, ...]) -> tuple[float, float, float, float]:
    rel = set(relevant)
    top = retrieved[:K]
    hits = len(set(top) & rel)
    p5 = hits / K
    r5 = hits / len(rel) if rel else 0.0
    mrr = 0.0
    for i, f in enumerate(retrieved):
        if f in rel:
            mrr = 1 / (i + 1)
            break
    dcg = 0.0
    for i, f in enumerate(top):
        dcg += (1 if f in rel else 0) / _LOG2[i]
    idcg = 0.0
    for i in range(min(K, len(relevant))):
        idcg += 1 / _LOG2[i]
    ndcg = 0.0 if idcg == 0 else dcg / idcg
    return p5, r5, mrr, ndcg


def _summ(values: list[float]) -> dict:
    return {"mean": js_mean(values), "std": js_std(values)}


def run_competitive(seeds: Sequence[int] = SEEDS) -> dict:
    seeds = tuple(seeds)
    per: dict[str, dict[str, list[float]]] = {s: {"p5": [], "r5": [], "mrr": [], "ndcg5": []} for s in SYSTEMS}
    by_cat: dict[str, dict[int, list[float]]] = {s: {c: [] for c in range(len(COMPETITIVE_CATEGORIES))} for s in SYSTEMS}
    by_diff: dict[str, dict[int, list[float]]] = {s: {d: [] for d in range(len(COMPETITIVE_DIFFICULTIES))} for s in SYSTEMS}
    horizon: dict[str, dict[int, list[float]]] = {s: {d: [] for d in LONG_HORIZON_DAYS} for s in SYSTEMS}
    simple_forgotten: list[float] = []

    for seed in seeds:
        ds = competitive_dataset(Stream(seed))
        cos = cosine_matrix(ds.query_emb, ds.emb)
        ranked = {
            "static_rag": _ranked(_static_scores(cos)),
            "simple_memory": _simple_ranked(cos, ds, AGING_DAYS),
            "full_zenbrain": _full_ranked(cos, ds, AGING_DAYS),
        }
        simple_forgotten.append(float(np.mean(_simple_strength(ds, AGING_DAYS) <= SIMPLE_THRESHOLD)))
        for qi, rel in enumerate(ds.relevant):
            for system in SYSTEMS:
                p5, r5, mrr, ndcg = _metrics(ranked[system][qi], rel)
                per[system]["p5"].append(p5)
                per[system]["r5"].append(r5)
                per[system]["mrr"].append(mrr)
                per[system]["ndcg5"].append(ndcg)
                by_cat[system][ds.query_category[qi]].append(p5)
                by_diff[system][ds.query_difficulty[qi]].append(p5)
        for day in LONG_HORIZON_DAYS:
            day_ranked = {
                "static_rag": ranked["static_rag"],
                "simple_memory": _simple_ranked(cos, ds, day),
                "full_zenbrain": _full_ranked(cos, ds, day),
            }
            for system in SYSTEMS:
                total = 0.0
                for qi, rel in enumerate(ds.relevant):
                    total += _metrics(day_ranked[system][qi], rel)[0]
                horizon[system][day].append(total / len(ds.relevant))

    systems_out = {}
    for system in SYSTEMS:
        m = per[system]
        systems_out[system] = {
            "label": SYSTEM_LABELS[system],
            "p5": _summ(m["p5"]),
            "r5": _summ(m["r5"]),
            "mrr": _summ(m["mrr"]),
            "ndcg5": _summ(m["ndcg5"]),
            "p5_by_category": {COMPETITIVE_CATEGORIES[c]: js_mean(v) for c, v in by_cat[system].items()},
            "p5_by_difficulty": {COMPETITIVE_DIFFICULTIES[d]: js_mean(v) for d, v in by_diff[system].items()},
        }
    full_p5, static_p5, simple_p5 = per["full_zenbrain"]["p5"], per["static_rag"]["p5"], per["simple_memory"]["p5"]
    long_horizon = {
        system: {str(day): {"p5_mean": js_mean(v), "p5_std": js_std(v)} for day, v in horizon[system].items()}
        for system in SYSTEMS
    }
    zb1 = long_horizon["full_zenbrain"]["1"]["p5_mean"]
    zb60 = long_horizon["full_zenbrain"]["60"]["p5_mean"]
    return {
        "seeds": list(seeds),
        "aging_days": AGING_DAYS,
        "n_per_query_values": len(full_p5),
        "systems": systems_out,
        "full_vs_static_p5": {
            "wilcoxon": protocol_wilcoxon(full_p5, static_p5),
            "cohens_d": protocol_cohens_d(full_p5, static_p5),
        },
        "full_vs_simple_p5": {
            "wilcoxon": protocol_wilcoxon(full_p5, simple_p5),
            "cohens_d": protocol_cohens_d(full_p5, simple_p5),
        },
        "simple_memory_forgotten_fraction_day14": js_mean(simple_forgotten),
        "simple_memory_p5_drop_vs_static": 1 - js_mean(simple_p5) / js_mean(static_p5),
        "long_horizon": {
            "days": list(LONG_HORIZON_DAYS),
            "systems": long_horizon,
            "full_zenbrain_day60_over_day1": zb60 / zb1 if zb1 else 0.0,
        },
    }
