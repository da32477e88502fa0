"""NoDecay and the layer-routing ablation on LoCoMo (``locomo_dev.json``), with MiniLM.

Vectors come from the embedding cache the CLI fills (``zenbrain.providers.cache``;
``$ZENBRAIN_CACHE_DIR`` or ``~/.cache/zenbrain/embeddings.db``), so no text is embedded
twice; a text missing from the cache is embedded by MiniLM (offline) and added to it.

Each conversation is one store (a SQLite file in a temporary folder: the in-memory store
cannot take semantic facts, see ``kg.bayes_run``). Every turn is stored at once with
``store_many``; questions with evidence are asked with ``recall(k=5, touch=False)``, so
answering one question never changes the memory for the next. Metrics per question,
against the evidence turns: precision@5 (hits / 5), recall@5 (evidence turns found /
evidence turns), MRR within the top 5, NDCG@5.

**NoDecay** (the paper: 600 facts, 200 queries, 14-day ageing; here every conversation of
the file): after ingest the clock advances 14 days and one ``sleep()`` runs (forgetting,
archiving and consolidation), then the questions. Systems: ``static_rag`` (the library's
dense cosine baseline), ``simple_memory`` (only ``ebbinghaus_decay``), ``zenbrain``
(every mechanism) and ``zenbrain_nodecay`` (both forgetting curves, ``ebbinghaus_decay``
and ``triple_copy``, off - switching off Ebbinghaus alone would leave TripleCopy's curve
deciding retrievability). Turns are stored as episodes, as the library's benchmark does.

**Routing** (the paper: nine variants; F1 and task success from an answering LLM, which
are not retrieval measures and are not reproduced): no ageing; turns are stored without
a layer so the library's own classifier and router place them; ``full``, each of the
seven layers switched off (``Config.disabled_layers``: its content is rerouted), and
``flat`` (every turn in the episodic layer, ``query_aware_fusion`` off). Without a
session id nothing is routed to working or short-term memory, so switching those off
cannot change anything.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.coordinator import MemoryCoordinator
from zenbrain.ids import seeded_ids
from zenbrain.model import Kind, Layer, Scope
from zenbrain.registry import Mechanisms
from zenbrain.storage.sqlite import SQLiteStore

from .harness import K

__all__ = ["DATA_FILE", "NODECAY_SYSTEMS", "ROUTING_VARIANTS", "jobs", "run_one", "summarize"]

DATA_FILE = "/work/shared/data/locomo_dev.json"
AGING_DAYS = 14
NODECAY_SYSTEMS = ("static_rag", "simple_memory", "zenbrain_nodecay", "zenbrain")
ROUTING_VARIANTS = ("full", "-working", "-short_term", "-episodic", "-semantic", "-procedural", "-core",
                    "-cross_context", "flat")


def data_file() -> str:
    env = os.environ.get("ZENBRAIN_DATA")
    if env:
        p = env if env.endswith(".json") else os.path.join(env, "locomo_dev.json")
        if os.path.exists(p):
            return p
    return DATA_FILE


def embedder() -> Any:
    from zenbrain.cli_support import CACHE_FILE, cache_dir
    from zenbrain.providers.cache import CachedEmbedder
    from zenbrain.providers.factory import make_embedder

    return CachedEmbedder(make_embedder("minilm"), cache_dir() / CACHE_FILE, memory_items=1 << 14)


def _conversations(sample_ids: Sequence[str] | None = None) -> list[Any]:
    from zenbrain.bench.locomo import load_locomo

    convs = load_locomo(data_file())
    if sample_ids:
        convs = [c for c in convs if c.sample_id in set(sample_ids)]
    return convs


def _config(kind: str, variant: str, seed: int) -> tuple[Config, bool, bool]:
    """(config, age the store?, let the library route the turns?)"""
    if kind == "nodecay":
        if variant == "simple_memory":
            return Config(mechanisms=Mechanisms.only(["ebbinghaus_decay"]), seed=seed), True, False
        if variant == "zenbrain_nodecay":
            return Config(mechanisms=Mechanisms(disabled=frozenset({"ebbinghaus_decay", "triple_copy"})), seed=seed), True, False
        return Config(seed=seed), True, False
    base = Config(seed=seed)
    if variant == "full":
        return base, False, True
    if variant == "flat":
        return base.without("query_aware_fusion"), False, False
    layer = Layer.parse(variant[1:])
    return replace(base, disabled_layers=frozenset({layer})), False, True


def _metrics(ranked: list[str], gold: Sequence[str]) -> tuple[float, float, float, float]:
    from zenbrain.bench.metrics import (
        evidence_recall_at_k,
        ndcg_at_k,
        precision_at_k,
        reciprocal_rank,
    )

    return (precision_at_k(ranked, gold, K), evidence_recall_at_k(ranked, gold, K),
            reciprocal_rank(ranked, gold, K), ndcg_at_k(ranked, gold, K))


def run_one(kind: str, variant: str, sample_id: str, seed: int = 42) -> dict[str, Any]:
    """One system on one conversation: per-question metrics (qid order)."""
    conv = _conversations([sample_id])[0]
    questions = [q for q in conv.questions if q.evidence]
    emb = embedder()
    rows: list[tuple[float, float, float, float]] = []
    extra: dict[str, Any] = {}
    try:
        if kind == "nodecay" and variant == "static_rag":
            from zenbrain.bench.baselines import DenseSystem

            dense = DenseSystem(emb, name="static_rag")
            dense.add(list(conv.docs))
            for q in questions:
                rows.append(_metrics(dense.search(q.question, K), q.evidence))
        else:
            config, age, routed = _config(kind, variant, seed)
            tmp = tempfile.mkdtemp(prefix="zenbrain-exp-locomo-")
            try:
                with seeded_ids(seed):
                    clock = SimulatedClock()
                    latest = max((d.time for d in conv.docs if d.time is not None), default=None)
                    if latest is not None:
                        clock.set(latest + 3600.0)
                    store = SQLiteStore(os.path.join(tmp, "m.db"), embedder_name=emb.name, dim=emb.dim)
                    coord = MemoryCoordinator(store, emb, config=config, clock=clock)
                    scope = Scope("locomo")
                    try:
                        records = []
                        for d in conv.docs:
                            rec: dict[str, Any] = dict(content=d.text, metadata={"doc_id": d.id}, event_time=d.time)
                            if not routed:
                                rec.update(kind=Kind.EPISODE, layer=Layer.EPISODIC)
                            records.append(rec)
                        items = coord.store_many(records, scope)
                        doc_of = {it.id: it.metadata["doc_id"] for it in items}
                        extra["layers"] = {k: v for k, v in coord.stats(scope)["by_layer"].items()}
                        if age:
                            clock.advance(days=AGING_DAYS)
                            rep = coord.sleep(scope)
                            extra["archived"] = int((rep.stages.get("archive") or {}).get("count", 0))
                        for q in questions:
                            hits = coord.recall(q.question, scope, k=K, touch=False)
                            ranked = [doc_of[h.item.id] for h in hits if h.item.id in doc_of]
                            rows.append(_metrics(ranked, q.evidence))
                    finally:
                        coord.close()
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        emb.close()
    arr = np.array(rows, dtype=float).reshape(-1, 4)
    return {"qids": [q.qid for q in questions], "precision5": arr[:, 0].tolist(), "recall5": arr[:, 1].tolist(),
            "mrr5": arr[:, 2].tolist(), "ndcg5": arr[:, 3].tolist(), **extra}


def available() -> bool:
    return os.path.exists(data_file())


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    if not available():
        return []
    convs = _conversations()
    if quick:
        convs = convs[:1]
    seed = int(seeds[0]) if seeds else 42
    out = []
    for c in convs:
        for v in NODECAY_SYSTEMS:
            out.append(Job(("locomo", "nodecay", v, c.sample_id), f"{__name__}:run_one",
                           dict(kind="nodecay", variant=v, sample_id=c.sample_id, seed=seed), cost=len(c.docs) * 40))
        for v in ROUTING_VARIANTS:
            out.append(Job(("locomo", "routing", v, c.sample_id), f"{__name__}:run_one",
                           dict(kind="routing", variant=v, sample_id=c.sample_id, seed=seed), cost=len(c.docs) * 30))
    return out


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    from ..stats import bonferroni, compare_paired

    if not available():
        return {"skipped": f"LoCoMo file not found ({data_file()})"}
    convs = [c.sample_id for c in _conversations()]
    if quick:
        convs = convs[:1]

    def pooled(kind: str, v: str, m: str) -> list[float]:
        return [x for c in convs for x in results[("locomo", kind, v, c)][m]]

    out: dict[str, Any] = {"data": data_file(), "conversations": convs, "seed": int(seeds[0]) if seeds else 42,
                           "aging_days": AGING_DAYS, "k": K}
    nd: dict[str, Any] = {"systems": {}}
    for v in NODECAY_SYSTEMS:
        nd["systems"][v] = {m: {"mean": float(np.mean(pooled("nodecay", v, m))), "std": float(np.std(pooled("nodecay", v, m), ddof=1)),
                                "n": len(pooled("nodecay", v, m))} for m in ("precision5", "recall5", "mrr5", "ndcg5")}
        nd["systems"][v]["archived"] = sum(results[("locomo", "nodecay", v, c)].get("archived", 0) for c in convs)
    nd["zenbrain_vs_nodecay"] = compare_paired(pooled("nodecay", "zenbrain", "precision5"),
                                               pooled("nodecay", "zenbrain_nodecay", "precision5"), seed=60)
    nd["zenbrain_vs_static_rag"] = compare_paired(pooled("nodecay", "zenbrain", "precision5"),
                                                  pooled("nodecay", "static_rag", "precision5"), seed=61)
    nd["zenbrain_vs_nodecay_recall5"] = compare_paired(pooled("nodecay", "zenbrain", "recall5"),
                                                       pooled("nodecay", "zenbrain_nodecay", "recall5"), seed=62)
    out["nodecay"] = nd
    rt: dict[str, Any] = {"variants": {}}
    full_r = pooled("routing", "full", "recall5")
    contrasts = [v for v in ROUTING_VARIANTS if v != "full"]
    for i, v in enumerate(ROUTING_VARIANTS):
        row: dict[str, Any] = {m: {"mean": float(np.mean(pooled("routing", v, m))), "n": len(pooled("routing", v, m))}
               for m in ("precision5", "recall5", "mrr5", "ndcg5")}
        layers: dict[str, int] = {}
        for c in convs:
            for k2, n in (results[("locomo", "routing", v, c)].get("layers") or {}).items():
                layers[k2] = layers.get(k2, 0) + int(n)
        row["layers"] = layers
        if v != "full":
            cmp = compare_paired(pooled("routing", v, "recall5"), full_r, seed=70 + i, m_tests=len(contrasts))
            row["vs_full_recall5"] = cmp
            row["p_bonferroni"] = bonferroni(cmp["p"], len(contrasts))
        rt["variants"][v] = row
    out["routing"] = rt
    return out
