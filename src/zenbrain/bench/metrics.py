"""Retrieval metrics over ranked id lists and gold sets, plus bootstrap intervals.

Every metric takes ``ranked`` (ids, best first) and ``gold`` (the relevant ids) and
returns a float. Repeated ids in ``ranked`` count once, at their first rank. A gold set
must be non-empty (questions without gold are left out of retrieval metrics, not scored 0);
an empty one raises ``ValueError``. ``k`` must be at least 1.

LoCoMo (turn level; gold = the QA ``evidence`` dialogue ids):

* ``evidence_recall_at_k`` -- share of gold turns in the top k: hits / |gold|.
  This is the paper's R@k (``paper_recall_at_k`` is the same function).
* ``hit_at_k`` -- 1 if any gold turn is in the top k, else 0.
* ``reciprocal_rank`` -- 1 / rank of the first gold turn (0 if none within the cut-off).
* ``ndcg_at_k`` -- binary gains, discount 1/log2(rank + 1), ideal = min(k, |gold|) ones.
* ``precision_at_k`` -- hits / k, the paper's P@k in its competitive tables.
* ``capped_recall_at_k`` -- hits / min(k, |gold|), the quantity the paper's ablation
  tables print as "P@5".
* ``paper_f1_at_k`` -- 2PR/(P+R) of ``precision_at_k`` and ``paper_recall_at_k``.

LongMemEval (following the official retrieval evaluation):

* ``recall_any_at_k`` -- 1 if at least one gold item is in the top k.
* ``recall_all_at_k`` -- 1 if every gold item is in the top k.
* ``lme_ndcg_at_k`` -- binary NDCG with the official discount: rank 1 has weight 1 and
  rank r >= 2 has 1/log2(r) (so ranks 1 and 2 are both undiscounted); ideal = min(k, |gold|) ones.
* Session level: ``turns_to_sessions`` maps a ranked list of turn ids to session ids,
  keeping each session at its first rank; gold = ``answer_session_ids``.
  Turn level: gold = turns marked ``has_answer``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as _stats

__all__ = [
    "ConfidenceInterval",
    "aggregate",
    "bootstrap_ci",
    "capped_recall_at_k",
    "dedupe",
    "evidence_recall_at_k",
    "hit_at_k",
    "hits_at_k",
    "lme_ndcg_at_k",
    "locomo_metric_names",
    "locomo_question_metrics",
    "longmemeval_metric_names",
    "longmemeval_question_metrics",
    "ndcg_at_k",
    "paper_f1_at_k",
    "paper_recall_at_k",
    "percentile",
    "precision_at_k",
    "recall_all_at_k",
    "recall_any_at_k",
    "reciprocal_rank",
    "turns_to_sessions",
]

# --------------------------------------------------------------------------- basics


def dedupe(ranked: Iterable[str]) -> list[str]:
    """``ranked`` with repeated ids removed, each kept at its first position."""
    seen: set[str] = set()
    out: list[str] = []
    for x in ranked:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _check(gold: Iterable[str], k: int | None) -> set[str] | frozenset[str]:
    g = gold if isinstance(gold, (set, frozenset)) else set(gold)
    if not g:
        raise ValueError("gold set is empty")
    if k is not None and k < 1:
        raise ValueError("k must be at least 1")
    return g


def hits_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> int:
    """Number of distinct gold ids among the first k (deduplicated) ranked ids."""
    g = _check(gold, k)
    return sum(1 for x in dedupe(ranked)[:k] if x in g)


def evidence_recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Turn-level evidence recall@k: hits / |gold|."""
    g = _check(gold, k)
    return hits_at_k(ranked, g, k) / len(g)


paper_recall_at_k = evidence_recall_at_k
"""The paper's R@k = hits / |rel| (identical to ``evidence_recall_at_k``)."""


def hit_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 if any gold id is in the top k, else 0.0."""
    return 1.0 if hits_at_k(ranked, gold, k) > 0 else 0.0


def precision_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """The paper's P@k = hits / k (k is the cut-off, even if fewer ids were returned)."""
    return hits_at_k(ranked, gold, k) / k


def capped_recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """hits / min(k, |gold|): the "P@5" of the paper's ablation tables (a recall)."""
    g = _check(gold, k)
    return hits_at_k(ranked, g, k) / min(k, len(g))


def paper_f1_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Per-question 2PR/(P+R) of ``precision_at_k`` and ``paper_recall_at_k`` (0 if no hit)."""
    p = precision_at_k(ranked, gold, k)
    r = paper_recall_at_k(ranked, gold, k)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str], k: int | None = None) -> float:
    """1 / rank of the first gold id within the first k ids (all ids if k is None); 0 if none."""
    g = _check(gold, k)
    items = dedupe(ranked)
    if k is not None:
        items = items[:k]
    for rank, x in enumerate(items, start=1):
        if x in g:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary NDCG@k: DCG = sum over hits of 1/log2(rank + 1); ideal = min(k, |gold|) ones."""
    g = _check(gold, k)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, x in enumerate(dedupe(ranked)[:k], start=1) if x in g)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(g)) + 1))
    return dcg / ideal


# --------------------------------------------------------------------------- LongMemEval


def recall_any_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 if at least one gold id is in the top k."""
    return hit_at_k(ranked, gold, k)


def recall_all_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 if every gold id is in the top k."""
    g = _check(gold, k)
    return 1.0 if hits_at_k(ranked, g, k) == len(g) else 0.0


def _lme_discount(rank: int) -> float:
    return 1.0 if rank == 1 else 1.0 / math.log2(rank)


def lme_ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """NDCG@k as LongMemEval's evaluation computes it (rank 1 weight 1, rank r>=2 weight 1/log2 r)."""
    g = _check(gold, k)
    dcg = sum(_lme_discount(rank) for rank, x in enumerate(dedupe(ranked)[:k], start=1) if x in g)
    ideal = sum(_lme_discount(rank) for rank in range(1, min(k, len(g)) + 1))
    return dcg / ideal


def turns_to_sessions(
    ranked_turn_ids: Sequence[str],
    turn_to_session: Mapping[str, str] | Callable[[str], str | None],
) -> list[str]:
    """Map ranked turn ids to session ids, each session kept at its first rank.

    Turn ids the mapping does not know are skipped.
    """
    lookup = turn_to_session.get if isinstance(turn_to_session, Mapping) else turn_to_session
    out: list[str] = []
    seen: set[str] = set()
    for t in ranked_turn_ids:
        s = lookup(t)
        if s is None or s in seen:
            continue
        seen.add(s)
        out.append(s)
    return out


# --------------------------------------------------------------------------- per question


def locomo_metric_names(ks: Sequence[int]) -> list[str]:
    kmax = max(ks)
    names: list[str] = []
    for k in ks:
        names += [f"evidence_recall@{k}", f"hit@{k}", f"ndcg@{k}", f"precision@{k}", f"capped_recall@{k}"]
    names.append(f"mrr@{kmax}")
    return names


def locomo_question_metrics(ranked: Sequence[str], gold: Iterable[str], ks: Sequence[int]) -> dict[str, float]:
    """All LoCoMo metrics of one question (names as in ``locomo_metric_names``)."""
    g = _check(gold, None)
    out: dict[str, float] = {}
    for k in ks:
        out[f"evidence_recall@{k}"] = evidence_recall_at_k(ranked, g, k)
        out[f"hit@{k}"] = hit_at_k(ranked, g, k)
        out[f"ndcg@{k}"] = ndcg_at_k(ranked, g, k)
        out[f"precision@{k}"] = precision_at_k(ranked, g, k)
        out[f"capped_recall@{k}"] = capped_recall_at_k(ranked, g, k)
    out[f"mrr@{max(ks)}"] = reciprocal_rank(ranked, g, max(ks))
    return out


def longmemeval_metric_names(ks: Sequence[int]) -> list[str]:
    names: list[str] = []
    for level in ("session", "turn"):
        for k in ks:
            names += [f"{level}_recall_any@{k}", f"{level}_recall_all@{k}", f"{level}_ndcg@{k}"]
    return names


def longmemeval_question_metrics(
    ranked_turn_ids: Sequence[str],
    *,
    gold_sessions: Iterable[str],
    gold_turns: Iterable[str],
    turn_to_session: Mapping[str, str] | Callable[[str], str | None],
    ks: Sequence[int],
) -> dict[str, float]:
    """Session- and turn-level metrics of one question; a level with empty gold is omitted."""
    out: dict[str, float] = {}
    gs = set(gold_sessions)
    gt = set(gold_turns)
    if gs:
        sessions = turns_to_sessions(ranked_turn_ids, turn_to_session)
        for k in ks:
            out[f"session_recall_any@{k}"] = recall_any_at_k(sessions, gs, k)
            out[f"session_recall_all@{k}"] = recall_all_at_k(sessions, gs, k)
            out[f"session_ndcg@{k}"] = lme_ndcg_at_k(sessions, gs, k)
    if gt:
        for k in ks:
            out[f"turn_recall_any@{k}"] = recall_any_at_k(ranked_turn_ids, gt, k)
            out[f"turn_recall_all@{k}"] = recall_all_at_k(ranked_turn_ids, gt, k)
            out[f"turn_ndcg@{k}"] = lme_ndcg_at_k(ranked_turn_ids, gt, k)
    return out


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class ConfidenceInterval:
    """Mean of ``n`` values with a bootstrap interval (``low``/``high`` None if n < 2)."""

    mean: float
    low: float | None
    high: float | None
    n: int
    confidence: float = 0.95
    method: str = "percentile"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
    seed: int = 0,
) -> ConfidenceInterval:
    """Seeded bootstrap interval for the mean (``scipy.stats.bootstrap``).

    ``method`` is ``"percentile"``, ``"basic"`` or ``"BCa"``. With fewer than two values
    no interval is given; with all values equal the interval is that value.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    n = int(x.size)
    if n == 0:
        return ConfidenceInterval(float("nan"), None, None, 0, confidence, method)
    mean = float(x.mean())
    if n < 2:
        return ConfidenceInterval(mean, None, None, n, confidence, method)
    if float(np.ptp(x)) == 0.0:
        return ConfidenceInterval(mean, mean, mean, n, confidence, method)
    res = _stats.bootstrap(
        (x,),
        np.mean,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method=method,
        vectorized=True,
        axis=-1,
        rng=np.random.default_rng(seed),
    )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return ConfidenceInterval(
        mean,
        None if math.isnan(low) else low,
        None if math.isnan(high) else high,
        n,
        confidence,
        method,
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100, linear interpolation) or None for no values."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _summarize(
    rows: Sequence[Mapping[str, float]],
    metric_names: Sequence[str],
    ci_metrics: set[str],
    ci_kwargs: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for m in metric_names:
        vals = [float(r[m]) for r in rows if m in r and r[m] is not None]
        if not vals:
            continue
        if m in ci_metrics:
            out[m] = bootstrap_ci(vals, **ci_kwargs).as_dict()
        else:
            out[m] = {"mean": float(np.mean(vals)), "n": len(vals)}
    return out


def aggregate(
    records: Sequence[Mapping[str, Any]],
    metric_names: Sequence[str],
    *,
    group_by: str | None = None,
    ci_metrics: Iterable[str] = (),
    confidence: float = 0.95,
    n_resamples: int = 2000,
    method: str = "percentile",
    seed: int = 0,
) -> dict[str, Any]:
    """Means (and bootstrap CIs for ``ci_metrics``) overall and per group.

    Each record has a ``"metrics"`` dict (metric name -> value) and, when ``group_by`` is
    given, a group value under that key. Records without a metric are not counted for it.
    Returns ``{"overall": {metric: stats}, "groups": {group: {metric: stats}}}`` where
    stats has ``mean`` and ``n``, plus ``low``/``high``/``confidence``/``method`` for CI metrics.
    """
    ci_set = set(ci_metrics)
    kwargs = {"confidence": confidence, "n_resamples": n_resamples, "method": method, "seed": seed}
    rows = [r.get("metrics") or {} for r in records]
    result: dict[str, Any] = {"overall": _summarize(rows, metric_names, ci_set, kwargs), "groups": {}}
    if group_by is not None:
        buckets: dict[str, list[Mapping[str, float]]] = {}
        for r in records:
            buckets.setdefault(str(r.get(group_by)), []).append(r.get("metrics") or {})
        for g in sorted(buckets):
            result["groups"][g] = _summarize(buckets[g], metric_names, ci_set, kwargs)
    return result
