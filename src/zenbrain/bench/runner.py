"""Run retrieval systems over LoCoMo and LongMemEval and collect per-question rankings.

The results are a plain JSON-serialisable dict::

    {"benchmark": "locomo" | "longmemeval", "mode": ..., "ks": [5, 10], "search_k": 10,
     "dataset": {...counts...}, "metric_names": [...], "headline_metrics": [...],
     "bootstrap": {"confidence", "n_resamples", "method", "seed"},
     "systems": {name: {"name", "timing": {...},
                        "questions": [{"qid", "group", "gold", "ranked", "metrics", ...}],
                        "summary": {"overall": {...}, "groups": {...}}}}}

Each question keeps its ranking and gold ids, so ``recompute`` can rebuild every metric
and confidence interval (for other cut-offs or bootstrap settings) without re-running.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from tqdm.auto import tqdm

from .base import RetrievalSystem
from .locomo import LocomoConversation, LocomoQA, prefix_conversation
from .longmemeval import LongMemEvalItem
from .metrics import (
    aggregate,
    locomo_metric_names,
    locomo_question_metrics,
    longmemeval_metric_names,
    longmemeval_question_metrics,
    percentile,
)

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "locomo_headline_metrics",
    "longmemeval_headline_metrics",
    "recompute",
    "run_locomo",
    "run_longmemeval",
]

DEFAULT_BOOTSTRAP: dict[str, Any] = {"confidence": 0.95, "n_resamples": 2000, "method": "percentile", "seed": 0}


def locomo_headline_metrics(ks: Sequence[int]) -> list[str]:
    return [f"evidence_recall@{k}" for k in ks] + [f"ndcg@{max(ks)}"]


def longmemeval_headline_metrics(ks: Sequence[int]) -> list[str]:
    """The official strict ``recall_all@k`` (every answer session / turn found) beside the
    lenient ``recall_any@k`` (at least one), at session and turn level."""
    return [f"{level}_recall_{kind}@{k}" for level in ("session", "turn") for k in ks for kind in ("all", "any")]


def _check_systems(systems: Sequence[RetrievalSystem]) -> None:
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise ValueError(f"system names must be unique, got {names}")
    if not systems:
        raise ValueError("no systems to run")


def _normalize_ks(ks: Iterable[int]) -> list[int]:
    out = sorted({int(k) for k in ks})
    if not out or out[0] < 1:
        raise ValueError("ks must be positive integers")
    return out


def _timing(ingest: list[float], latencies: list[float], unit: str) -> dict[str, Any]:
    return {
        "ingest_seconds": float(sum(ingest)),
        f"ingest_seconds_per_{unit}": [float(x) for x in ingest],
        "search_count": len(latencies),
        "search_latency_ms": {
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "mean": (sum(latencies) / len(latencies)) if latencies else None,
        },
    }


def _search(system: RetrievalSystem, query: str, k: int, query_time: float | None, latencies: list[float]) -> list[str]:
    t0 = time.perf_counter()
    ranked = system.search(query, k, query_time=query_time)
    latencies.append((time.perf_counter() - t0) * 1000.0)
    return [str(x) for x in (ranked or [])][:k]


# --------------------------------------------------------------------------- LoCoMo


def _locomo_record(q: LocomoQA, ranked: list[str], ks: Sequence[int]) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "qid": q.qid,
        "sample_id": q.sample_id,
        "group": q.category_name,
        "category": q.category,
        "question": q.question,
        "gold": list(q.evidence),
        "ranked": ranked,
    }
    rec["metrics"] = locomo_question_metrics(ranked, q.evidence, ks) if q.evidence else {}
    return rec


def run_locomo(
    systems: Sequence[RetrievalSystem],
    conversations: Sequence[LocomoConversation],
    ks: Iterable[int] = (5, 10),
    mode: str = "per_conversation",
    progress: bool = True,
    *,
    categories: Iterable[int] | None = None,
    bootstrap: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate ``systems`` on LoCoMo turn retrieval.

    ``mode="per_conversation"``: for each conversation every system is reset, ingests that
    conversation's turns (one ``add`` call) and answers its questions.
    ``mode="pooled"``: every system is reset once and ingests all conversations (ids
    ``"<sample_id>/D3:12"``), then answers all questions.
    Questions without valid evidence are not searched and are counted in the dataset stats.
    ``categories`` restricts the questions (e.g. ``(1, 2, 3, 4)``).
    Systems are not closed.
    """
    if mode not in ("per_conversation", "pooled"):
        raise ValueError("mode must be 'per_conversation' or 'pooled'")
    _check_systems(systems)
    ks = _normalize_ks(ks)
    search_k = max(ks)
    cats = set(categories) if categories is not None else None

    def keep(q: LocomoQA) -> bool:
        return cats is None or q.category in cats

    # Units of work: (label, docs, questions).
    if mode == "pooled":
        pooled = [prefix_conversation(c) for c in conversations]
        units = [("pooled", [d for c in pooled for d in c.docs], [q for c in pooled for q in c.questions if keep(q)])]
    else:
        units = [(c.sample_id, c.docs, [q for q in c.questions if keep(q)]) for c in conversations]

    dataset: dict[str, Any] = {
        "conversations": len(conversations),
        "sample_ids": [c.sample_id for c in conversations],
        "turns": sum(len(c.docs) for c in conversations),
        "questions": sum(len(u[2]) for u in units),
        "questions_scored": sum(1 for u in units for q in u[2] if q.evidence),
        "questions_without_evidence": sum(1 for u in units for q in u[2] if not q.evidence),
        "dangling_evidence_ids": sum(len(q.dangling) for u in units for q in u[2]),
        "malformed_evidence_ids": sum(len(q.malformed) for u in units for q in u[2]),
    }

    per_system: dict[str, dict[str, Any]] = {
        s.name: {"ingest": [], "latencies": [], "questions": []} for s in systems
    }
    n_total = len(systems) * dataset["questions_scored"]
    with tqdm(total=n_total, desc=f"locomo[{mode}]", disable=not progress, unit="q") as bar:
        for label, docs, questions in units:
            scored = [q for q in questions if q.evidence]
            for system in systems:
                acc = per_system[system.name]
                bar.set_postfix_str(f"{system.name} {label}", refresh=False)
                system.reset()
                t0 = time.perf_counter()
                system.add(list(docs))
                acc["ingest"].append(time.perf_counter() - t0)
                for q in scored:
                    ranked = _search(system, q.question, search_k, q.query_time, acc["latencies"])
                    acc["questions"].append(_locomo_record(q, ranked, ks))
                    bar.update(1)

    results: dict[str, Any] = {
        "benchmark": "locomo",
        "mode": mode,
        "ks": ks,
        "search_k": search_k,
        "group_by": "category",
        "dataset": dataset,
        "metric_names": locomo_metric_names(ks),
        "headline_metrics": locomo_headline_metrics(ks),
        "bootstrap": dict(bootstrap or DEFAULT_BOOTSTRAP),
        "systems": {},
    }
    unit = "run" if mode == "pooled" else "conversation"
    for system in systems:
        acc = per_system[system.name]
        results["systems"][system.name] = {
            "name": system.name,
            "timing": _timing(acc["ingest"], acc["latencies"], unit),
            "questions": acc["questions"],
        }
    return recompute(results)


# --------------------------------------------------------------------------- LongMemEval


def run_longmemeval(
    systems: Sequence[RetrievalSystem],
    items: Sequence[LongMemEvalItem],
    ks: Iterable[int] = (5, 10),
    progress: bool = True,
    *,
    include_abstention: bool = False,
    bootstrap: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate ``systems`` on LongMemEval with per-question isolation.

    For every item each system is reset, ingests that item's haystack (one ``add`` call)
    and answers its question with ``query_time`` = the question date. Abstention items
    are skipped (``include_abstention=True`` searches them too, without metrics).
    """
    _check_systems(systems)
    ks = _normalize_ks(ks)
    search_k = max(ks)
    run_items = [it for it in items if include_abstention or not it.is_abstention]
    dataset = {
        "items": len(items),
        "items_run": len(run_items),
        "abstention_items": sum(1 for it in items if it.is_abstention),
        "items_scored": sum(1 for it in run_items if it.has_retrieval_gold),
        "turns": sum(len(it.docs) for it in run_items),
        "question_types": sorted({it.question_type for it in run_items}),
    }
    per_system: dict[str, dict[str, Any]] = {
        s.name: {"ingest": [], "latencies": [], "questions": []} for s in systems
    }
    with tqdm(total=len(run_items) * len(systems), desc="longmemeval", disable=not progress, unit="q") as bar:
        for it in run_items:
            for system in systems:
                acc = per_system[system.name]
                bar.set_postfix_str(system.name, refresh=False)
                system.reset()
                t0 = time.perf_counter()
                system.add(list(it.docs))
                acc["ingest"].append(time.perf_counter() - t0)
                ranked = _search(system, it.question, search_k, it.query_time, acc["latencies"])
                acc["questions"].append(
                    {
                        "qid": it.question_id,
                        "group": it.question_type,
                        "question": it.question,
                        "abstention": it.is_abstention,
                        "gold": list(it.gold_turn_ids),
                        "gold_sessions": list(it.answer_session_ids),
                        "ranked": ranked,
                        "ranked_sessions": [it.turn_to_session.get(t) for t in ranked],
                    }
                )
                bar.update(1)

    results: dict[str, Any] = {
        "benchmark": "longmemeval",
        "mode": "per_question",
        "ks": ks,
        "search_k": search_k,
        "group_by": "question_type",
        "dataset": dataset,
        "metric_names": longmemeval_metric_names(ks),
        "headline_metrics": longmemeval_headline_metrics(ks),
        "bootstrap": dict(bootstrap or DEFAULT_BOOTSTRAP),
        "systems": {},
    }
    for system in systems:
        acc = per_system[system.name]
        results["systems"][system.name] = {
            "name": system.name,
            "timing": _timing(acc["ingest"], acc["latencies"], "question"),
            "questions": acc["questions"],
        }
    return recompute(results)


# --------------------------------------------------------------------------- recompute


def recompute(
    results: dict[str, Any],
    *,
    ks: Iterable[int] | None = None,
    bootstrap: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Recompute per-question metrics and summaries from the stored rankings (in place).

    ``ks`` may not exceed the ``search_k`` the rankings were produced with.
    """
    if ks is not None:
        ks_list = _normalize_ks(ks)
        if max(ks_list) > results["search_k"]:
            raise ValueError(f"rankings only hold {results['search_k']} ids")
        results["ks"] = ks_list
    ks_list = results["ks"]
    if bootstrap is not None:
        results["bootstrap"] = {**DEFAULT_BOOTSTRAP, **bootstrap}
    bs = {**DEFAULT_BOOTSTRAP, **results.get("bootstrap", {})}
    bench = results["benchmark"]
    if bench == "locomo":
        names = locomo_metric_names(ks_list)
        headline = locomo_headline_metrics(ks_list)
    elif bench == "longmemeval":
        names = longmemeval_metric_names(ks_list)
        headline = longmemeval_headline_metrics(ks_list)
    else:
        raise ValueError(f"unknown benchmark {bench!r}")
    results["metric_names"] = names
    results["headline_metrics"] = headline

    for sysres in results["systems"].values():
        for rec in sysres["questions"]:
            if bench == "locomo":
                rec["metrics"] = locomo_question_metrics(rec["ranked"], rec["gold"], ks_list) if rec["gold"] else {}
            else:
                if rec.get("abstention"):
                    rec["metrics"] = {}
                    continue
                mapping = {t: s for t, s in zip(rec["ranked"], rec["ranked_sessions"]) if s is not None}
                rec["metrics"] = longmemeval_question_metrics(
                    rec["ranked"],
                    gold_sessions=rec["gold_sessions"],
                    gold_turns=rec["gold"],
                    turn_to_session=mapping,
                    ks=ks_list,
                )
        sysres["summary"] = aggregate(
            sysres["questions"],
            names,
            group_by="group",
            ci_metrics=headline,
            confidence=bs["confidence"],
            n_resamples=bs["n_resamples"],
            method=bs["method"],
            seed=bs["seed"],
        )
    return results
