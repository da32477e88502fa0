"""Running the real coordinator in experiments: one in-memory SQLite store per run, a
simulated clock, seeded everything, and measurements that do not disturb the system.

Definitions used by every synthetic experiment (docs/experiments.md):

* **retained** - a memory counts as retained at time t when it is not archived and its
  retrievability at t (``dynamics.retrievability`` through the lifecycle's helper: the
  Ebbinghaus curve and the TripleCopy composite, whichever are switched on) is above the
  archive threshold of the Ebbinghaus parameters (0.1). **Retention** is the share of
  the workload's facts that are retained. Reading it writes nothing.
* **recall@5** - relevant facts among the top 5 of ``recall(..., touch=False)`` divided by
  ``min(5, |relevant|)`` (with at most 3 relevant facts this is plain recall@5; the paper
  calls it "P@5"). **precision@5** - the same hits divided by 5. NDCG@5 with binary gains.
  A consolidated schema among the hits is not one of the facts and counts as a miss;
  ``recall5_schema_credit`` counts it as retrieving the relevant facts it was built from.
* **quality** Q = retention x recall@5, per seed.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zenbrain.clock import DAY, SimulatedClock
from zenbrain.config import Config
from zenbrain.coordinator import MemoryCoordinator
from zenbrain.model import Kind, Layer, MemoryItem, Scope
from zenbrain.pipeline.retrievability import retrievability as _lifecycle_retrievability
from zenbrain.storage.sqlite import SQLiteStore

from .synthetic import SyntheticEmbedder, Workload

__all__ = [
    "T0",
    "K",
    "Run",
    "eval_queries",
    "limit_threads",
    "open_run",
    "paused_gc",
    "rank_metrics",
    "retention_of",
]

K = 5
T0 = 1_700_000_000.0  # the simulated clock's start (a fixed date, so runs are reproducible)


def limit_threads() -> None:
    """One BLAS thread per process: the experiments run in parallel processes, and on a
    2-core machine a multi-threaded LAPACK call (eigvalsh, svd) in every sleep is about
    twenty times slower than a single-threaded one."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # noqa: BLE001, S110 - threadpoolctl missing or no BLAS found: the variables still apply to children
        pass


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block without Python's cyclic garbage collector.

    An experiment run frees what it allocates by reference counting (it makes no reference
    cycles), while each automatic full collection walks the whole heap of the worker (tens
    of milliseconds, about once per ablation run). Results do not depend on it.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass
class Run:
    """One coordinator on a fresh in-memory store, with its clock, scope and workload ids."""

    coord: MemoryCoordinator
    clock: SimulatedClock
    scope: Scope
    fact_ids: list[str] = field(default_factory=list)
    index_of: dict[str, int] = field(default_factory=dict)  # memory id -> fact index

    @property
    def part(self) -> tuple[str, str]:
        return (self.scope.user_id, self.scope.agent_id)

    def close(self) -> None:
        self.coord.close()

    def advance_to(self, t: float) -> None:
        now = self.clock.now()
        if t > now:
            self.clock.advance(t - now)

    def store_facts(self, texts: Sequence[str], *, layer: Layer = Layer.EPISODIC, kind: Kind = Kind.EPISODE,
                    importance: Sequence[float] | None = None) -> list[MemoryItem]:
        records = []
        for i, t in enumerate(texts):
            rec: dict[str, Any] = dict(content=t, kind=kind, layer=layer)
            if importance is not None:
                rec["importance"] = float(importance[i])
            records.append(rec)
        items = self.coord.store_many(records, self.scope)
        start = len(self.fact_ids)
        for j, it in enumerate(items):
            self.fact_ids.append(it.id)
            self.index_of[it.id] = start + j
        return items


def open_run(embedder: SyntheticEmbedder | Any, config: Config, *, start: float = T0, user: str = "exp",
             path: str = ":memory:") -> Run:
    """A coordinator on a fresh SQLite store: in memory by default (no fsync, nothing to
    clean up). Pass a file ``path`` where the in-memory store cannot be used (semantic
    facts at store time: see ``kg.bayes_run``)."""
    clock = SimulatedClock(start)
    store = SQLiteStore(path, embedder_name=embedder.name, dim=embedder.dim)
    coord = MemoryCoordinator(store, embedder, config=config, clock=clock)
    return Run(coord, clock, Scope(user))


def retention_of(run: Run, ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Retention of the given memories (default: the workload's facts) at the clock's now.

    Returns the share retained, the mean retrievability, the share archived and the
    per-memory retained flags (for group breakdowns). Read-only.
    """
    ids = list(run.fact_ids if ids is None else ids)
    items = run.coord.storage.get(run.part, ids)
    by_id = {i.id: i for i in items}
    ordered = [by_id[i] for i in ids if i in by_id]
    if not ordered:
        return {"retention": 0.0, "mean_r": 0.0, "archived": 0.0, "retained": np.zeros(0, bool)}
    r = np.asarray(_lifecycle_retrievability(run.coord.engine, ordered, run.clock.now()), dtype=float)
    archived = np.fromiter((i.archived for i in ordered), bool, len(ordered))
    thr = run.coord.config.params.ebbinghaus_decay.archive_threshold
    retained = (~archived) & (r > thr)
    return {
        "retention": float(retained.mean()),
        "mean_r": float(r.mean()),
        "archived": float(archived.mean()),
        "retained": retained,
    }


def rank_metrics(ranked: Sequence[int], relevant: Sequence[int], k: int = K) -> tuple[float, float, float, float]:
    """(recall@k capped at min(k, |rel|), precision@k, NDCG@k, reciprocal rank within k)."""
    rel = set(relevant)
    top = list(ranked[:k])
    hits = [1.0 if f in rel else 0.0 for f in top]
    n_hit = sum(hits)
    recall = n_hit / min(k, len(rel)) if rel else 0.0
    precision = n_hit / k
    dcg = sum(h / math.log2(i + 2) for i, h in enumerate(hits))
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(rel))))
    ndcg = dcg / idcg if idcg > 0 else 0.0
    rr = next((1.0 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    return recall, precision, ndcg, rr


def eval_queries(run: Run, work: Workload, queries: Sequence[int] | None = None, k: int = K,
                 per_query: bool = False) -> dict[str, Any]:
    """Every query through ``recall(..., touch=False)``: read-only, so one query's
    evaluation cannot change the next. Means over queries (and, with ``per_query``, the
    per-query values of precision@k, recall@k, MRR and NDCG@k)."""
    qs = range(work.n_queries) if queries is None else queries
    sums = np.zeros(5)
    n = 0
    rows: dict[str, list[float]] = {"precision5": [], "recall5": [], "mrr5": [], "ndcg5": []}
    for q in qs:
        hits = run.coord.recall(work.query_texts[q], run.scope, k=k, touch=False)
        ranked: list[int] = []
        credited: list[int] = []
        for h in hits:
            f = run.index_of.get(h.item.id)
            if f is not None:
                ranked.append(f)
                credited.append(f)
            else:
                ranked.append(-1)
                ev = [run.index_of.get(e) for e in (h.item.metadata.get("evidence_ids") or [])]
                ev_rel = [e for e in ev if e is not None and e in work.relevant[q]]
                credited.append(ev_rel[0] if ev_rel else -1)
        rec, prec, ndcg, rr = rank_metrics(ranked, work.relevant[q], k)
        # schema credit: a schema hit counts for (one of) the relevant facts it was built from
        rel = set(work.relevant[q])
        credit_hits = len(rel.intersection(credited[:k]))
        sums += (rec, prec, ndcg, rr, credit_hits / min(k, len(rel)))
        n += 1
        if per_query:
            rows["precision5"].append(prec)
            rows["recall5"].append(rec)
            rows["mrr5"].append(rr)
            rows["ndcg5"].append(ndcg)
    m = sums / max(n, 1)
    out: dict[str, Any] = {"recall5": float(m[0]), "precision5": float(m[1]), "ndcg5": float(m[2]), "mrr5": float(m[3]),
                           "recall5_schema_credit": float(m[4])}
    if per_query:
        out["per_query"] = rows
    return out


def review_due(run: Run, rng: np.random.Generator, limit: int) -> dict[str, int]:
    """The reviewer works through up to ``limit`` memories of ``review_queue``; each is
    remembered (grade "good") with probability equal to its retrievability now, else
    forgotten ("again")."""
    if limit <= 0:
        return {"reviewed": 0, "good": 0}
    due = run.coord.review_queue(run.scope, limit=limit)
    if not due:
        return {"reviewed": 0, "good": 0}
    r = np.asarray(_lifecycle_retrievability(run.coord.engine, due, run.clock.now()), dtype=float)
    draws = rng.random(len(due))
    grades = ["good" if u < ri else "again" for ri, u in zip(r, draws)]
    run.coord.review_many([(item.id, g) for item, g in zip(due, grades)], run.scope)
    return {"reviewed": len(due), "good": grades.count("good")}


def days(x: float) -> float:
    return float(x) * DAY
