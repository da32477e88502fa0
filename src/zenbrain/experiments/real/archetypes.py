"""Long-horizon archetypes on the real system: static RAG, a simple decaying memory, and
zenbrain with every mechanism, after 14 and 60 days.

The paper's table (REFERENCE.md 3.7): 100 facts, 50 queries, a shared base decay of
0.15/day, P@5 as true precision, R@5 and MRR, 10 seeds; and the claim that simple
memory collapses by day 30 while zenbrain keeps its day-1 precision at day 60.

Here, on the same synthetic workload (100 facts, 50 queries with 1-3 relevant facts,
query noise U(-0.15, 0.15)):

* ``static_rag`` - the library's dense cosine baseline (``bench.baselines.DenseSystem``):
  everything stored, nothing forgotten, no use effects.
* ``simple_memory`` - the real coordinator with only ``ebbinghaus_decay`` switched on
  (S0 = 1 / 0.15 days): forgetting, archiving at the threshold, and the stability a
  spaced recall adds; nothing else.
* ``full`` - the real coordinator with every mechanism (S0 = 1 / 0.15 days).

Both coordinators get the ablation's usage protocol (each query asked once, in a session
every 5 days; reviews; sleep - which for the simple memory is only its decay stage). All
three are evaluated at days 1, 7, 14, 30 and 60 with read-only recalls: precision@5
(hits / 5), recall@5 (hits / |relevant|), MRR within the top 5, NDCG@5.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zenbrain.bench.base import Doc
from zenbrain.bench.baselines import DenseSystem
from zenbrain.registry import ALL_MECHANISMS

from .ablation import PROTOCOL, Condition, simulate
from .harness import K, rank_metrics
from .synthetic import SyntheticEmbedder, make_workload

__all__ = ["DAYS", "SYSTEMS", "jobs", "run_one", "summarize"]

DAYS = (1, 7, 14, 30, 60)
SYSTEMS = ("static_rag", "simple_memory", "full")
BASE_DECAY = 0.15
N_FACTS, N_QUERIES = 100, 50


def _per_query(ranked: list[list[int]], work: Any) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"precision5": [], "recall5": [], "mrr5": [], "ndcg5": []}
    for q, r in enumerate(ranked):
        rel = work.relevant[q]
        hits = len(set(r[:K]) & set(rel))
        _, prec, ndcg, rr = rank_metrics(r, rel, K)
        out["precision5"].append(prec)
        out["recall5"].append(hits / len(rel))
        out["mrr5"].append(rr)
        out["ndcg5"].append(ndcg)
    return out


def run_one(system: str, seed: int, n_facts: int = N_FACTS, n_queries: int = N_QUERIES) -> dict[str, Any]:
    if system == "static_rag":
        work = make_workload(seed, n_facts, n_queries, noise=0.15)
        dense = DenseSystem(SyntheticEmbedder(work.table()), name="static_rag")
        dense.add([Doc(id=str(i), text=t) for i, t in enumerate(work.fact_texts)])
        ranked = [[int(x) for x in dense.search(q, K)] for q in work.query_texts]
        m = _per_query(ranked, work)
        return {"days": list(DAYS), "per_query": {d: m for d in DAYS}, "retention": {d: 1.0 for d in DAYS}}
    disabled = tuple(n for n in ALL_MECHANISMS if n != "ebbinghaus_decay") if system == "simple_memory" else ()
    cond = Condition(system, n_facts, n_queries, max(DAYS), BASE_DECAY)
    out = simulate(cond, disabled, seed, PROTOCOL, eval_days=DAYS, per_query=True, noise=0.15)
    return {"days": list(DAYS),
            "per_query": {int(e["day"]): e["per_query"] for e in out["evaluations"]},
            "retention": {int(e["day"]): e["retention"] for e in out["evaluations"]}}


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    n, q = (40, 20) if quick else (N_FACTS, N_QUERIES)
    cost = {"static_rag": 50, "simple_memory": n * 30, "full": n * 60}
    return [Job(("archetypes", sysname, int(s)), f"{__name__}:run_one", dict(system=sysname, seed=int(s), n_facts=n, n_queries=q),
                cost=cost[sysname]) for sysname in SYSTEMS for s in seeds]


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    from ..stats import compare_paired

    out: dict[str, Any] = {"seeds": [int(s) for s in seeds], "days": list(DAYS), "base_decay": BASE_DECAY,
                           "n_facts": 40 if quick else N_FACTS, "n_queries": 20 if quick else N_QUERIES, "systems": {}}
    for sysname in SYSTEMS:
        block: dict[str, Any] = {}
        for d in DAYS:
            vals = {m: [v for s in seeds for v in results[("archetypes", sysname, int(s))]["per_query"][d][m]]
                    for m in ("precision5", "recall5", "mrr5", "ndcg5")}
            block[str(d)] = {m: {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
                                 "n": len(v)} for m, v in vals.items()}
            block[str(d)]["retention"] = float(np.mean([results[("archetypes", sysname, int(s))]["retention"][d]
                                                        for s in seeds]))
        out["systems"][sysname] = block
    tests = {}
    for d in (14, 60):
        full = [v for s in seeds for v in results[("archetypes", "full", int(s))]["per_query"][d]["precision5"]]
        for other in ("static_rag", "simple_memory"):
            o = [v for s in seeds for v in results[("archetypes", other, int(s))]["per_query"][d]["precision5"]]
            tests[f"full_vs_{other}_day{d}"] = compare_paired(full, o, seed=50 + d)
    out["tests_per_query"] = tests
    d1 = out["systems"]["full"]["1"]["precision5"]["mean"]
    out["full_day60_over_day1"] = out["systems"]["full"]["60"]["precision5"]["mean"] / d1 if d1 > 0 else None
    return out
