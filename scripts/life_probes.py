"""Probes of four suspected dead paths, on a store lived through with the timeline protocol.

One LoCoMo conversation goes through ``bench.longitudinal`` (sessions at their dates,
context recall before each turn, decay and sleep every night, every mechanism on). Then,
on the final store:

1. **strength**: every memory's ``strength`` (what sleep's LTP/LTD writes) is set to a
   random value; do the rankings of the questions, the retrievability of every memory and
   the archive decisions change?
2. **confidence**: every memory gets a Beta(1, 50) confidence and ``disputed`` in its
   metadata; do the rankings change?
3. **counterfactual replay**: |delta_TD| of every episode as sleep computes it without
   ``metadata.td_error`` (|reward - confidence|), against the ``failed_td`` threshold; and the
   counterfactuals the nights made.
4. **metacognitive monitor**: the hit rate the HyperAgent last saw and the changes it made.
5. **score factors**: for the end questions, the factors of the evidence turns ranked
   below 5 against those of the top 5 (recall's own breakdown, k=100, read-only).

Writes go through the store's transaction API (a diagnostic, not an application path).

    OMP_NUM_THREADS=1 python scripts/life_probes.py [--data PATH] [--conversation conv-26] [--context-k 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from zenbrain.bench.locomo import load_locomo, resolve_data_file
from zenbrain.bench.longitudinal.locomo_timeline import locomo_workload
from zenbrain.bench.longitudinal.timeline import LifeStore, Protocol, run_unit
from zenbrain.cli_support import CACHE_FILE, cache_dir
from zenbrain.ids import seeded_ids
from zenbrain.mechanisms import ebbinghaus, sleep_selection
from zenbrain.pipeline.retrievability import retrievability
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import make_embedder


def rankings(store: LifeStore, questions: list[str], k: int = 5) -> list[list[str]]:
    return [[h.item.id for h in store.mem.recall(q, store.user, k=k, touch=False)] for q in questions]


def state(store: LifeStore) -> tuple[list, np.ndarray]:
    items = store.mem.list_memories(store.user, include_archived=True)
    r = retrievability(store.mem.engine, items, store.clock.now())
    return items, np.asarray(r, dtype=float)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None)
    ap.add_argument("--conversation", default="conv-26")
    ap.add_argument("--context-k", type=int, default=5)
    ap.add_argument("--embedder", default="minilm-onnx")
    args = ap.parse_args()
    conv = next(c for c in load_locomo(resolve_data_file(args.data, ("locomo_dev.json",)))
                if c.sample_id == args.conversation)
    emb: Any = CachedEmbedder(make_embedder(args.embedder), cache_dir() / CACHE_FILE, memory_items=1 << 15)
    store = LifeStore(emb, protocol=Protocol(context_k=args.context_k))
    sessions, probes = locomo_workload(conv, fresh=False)
    questions = [p.question for p in probes]
    t0 = time.perf_counter()
    with seeded_ids(42):
        out = run_unit(store, sessions, probes, k=10)
    life = out["lifecycle"]
    print(f"{conv.sample_id}: {life['memories']} memories, {life['active']} active, {life['nights']} nights, "
          f"{time.perf_counter() - t0:.0f} s")
    tot = life["totals"]
    part = (store.user.user_id, store.user.agent_id)

    # 1. strength
    before = rankings(store, questions)
    items, r0 = state(store)
    s0 = np.array([i.strength for i in items])
    rng = np.random.default_rng(0)
    new = rng.uniform(0.05, 1.0, len(items)).tolist()
    with store.mem.storage.transaction() as tx:
        tx.update_columns(part, [i.id for i in items], strength=new)
    after = rankings(store, questions)
    items2, r1 = state(store)
    ebb = store.config.params.ebbinghaus_decay
    st0 = ebbinghaus.status(retrievability=r0, archived=[i.archived for i in items], params=ebb)
    st1 = ebbinghaus.status(retrievability=r1, archived=[i.archived for i in items2], params=ebb)
    print(f"1. strength: sleep changed strengths {int(tot.get('replay_strengths_changed', 0)):,} times "
          f"(final spread {s0.min():.2f}-{s0.max():.2f}); after randomising every strength: "
          f"{sum(a == b for a, b in zip(before, after))}/{len(before)} rankings identical, "
          f"max |delta R| {float(np.max(np.abs(r1 - r0))):.2e}, "
          f"decay decisions identical: {bool(np.array_equal(np.asarray(st0), np.asarray(st1)))}")

    # 2. confidence, then the disputed flag (set on every memory ranked in a top 5)
    with store.mem.storage.transaction() as tx:
        tx.update_columns(part, [i.id for i in items2], conf_alpha=[1.0] * len(items2), conf_beta=[50.0] * len(items2))
    after2 = rankings(store, questions)
    print(f"2. confidence: after every memory got confidence 0.02: "
          f"{sum(a == b for a, b in zip(after, after2))}/{len(after)} rankings identical")
    ranked = {m for r in after2 for m in r}
    for i in store.mem.list_memories(store.user):
        if i.id in ranked:
            store.mem.update(i.id, store.user, metadata={**i.metadata, "disputed": True})
    after3 = rankings(store, questions)
    print(f"   disputed: after {len(ranked)} ranked memories were flagged disputed: "
          f"{sum(a == b for a, b in zip(after2, after3))}/{len(after2)} rankings identical")

    # 3. counterfactual replay
    sp = sleep_selection.DEFAULTS
    eps = [i for i in store.mem.list_memories(store.user, layer="episodic")]
    conf = [0.5 for _ in eps]  # probe 2 changed the stored confidences: sleep saw alpha = beta = 1
    td = [abs(min(1.0, i.access_count / 5.0) - c) for i, c in zip(eps, conf)]
    print(f"3. counterfactuals: {int(tot.get('counterfactuals', 0))} made over {life['nights']} nights; "
          f"episodes {len(eps)}, max |delta_TD| {max(td, default=0):.2f} (needs > failed_td {sp.failed_td} with "
          f"reward < failed_reward {sp.failed_reward}); with confidence 0.5, |reward - 0.5| <= 0.5")

    # 4. metacognitive monitor and HyperAgent
    print(f"4. monitor: last hit rate seen by the HyperAgent {life.get('monitor_hit_rate_last')}; "
          f"HyperAgent changes {int(tot.get('hyperagent_changes', 0))}")

    # 5. score factors of missed evidence against the top 5 (a fresh store is not needed:
    #    the breakdown is read-only and independent of probes 1-2)
    miss: dict[str, list[float]] = {"retrievability": [], "layer_weight": [], "priority": [], "hebbian_boost": [],
                                     "fused": []}
    top: dict[str, list[float]] = {k: [] for k in miss}
    for p in probes:
        hits = store.mem.recall(p.question, store.user, k=100, touch=False)
        docs = [h.item.metadata.get("doc_id") for h in hits]
        for rank, (h, d) in enumerate(zip(hits, docs)):
            b = h.why
            row = {"retrievability": b.retrievability, "layer_weight": b.layer_weight, "priority": b.priority,
                   "hebbian_boost": b.hebbian_boost, "fused": b.fused}
            target = top if rank < 5 else (miss if d in p.gold else None)
            if target is not None:
                for k, v in row.items():
                    target[k].append(float(v))
    print("5. score factors, median (evidence ranked 6-100 | top 5):")
    for k, vals in miss.items():
        m = statistics.median(vals) if vals else float("nan")
        t = statistics.median(top[k]) if top[k] else float("nan")
        print(f"   {k:15s} {m:.3f} | {t:.3f}")
    store.close()
    emb.close()


if __name__ == "__main__":
    main()
