#!/usr/bin/env python
"""Cost of the agent-facing layer, on real LoCoMo dialogue, measured in one run.

1. Ingestion. Each LoCoMo session as one conversation (both speakers as named users).
   Baseline: ``store_many`` of its turns as episodes ("speaker: text"). Measured:
   ``add_messages`` with the offline RuleExtractor (the same episodes, plus a read-only
   recall per turn for related memories, extraction, durable memories, updates and
   intentions). Turns per second for both and their ratio, and what was extracted.
   Embeddings come from one embedder instance whose vectors are computed once in a
   warm-up pass (so both sides pay storage and logic, not the model).
2. Async. The same operations sequentially through the sync facade and all at once
   through ``AsyncMemory`` (``asyncio.gather``): writes (store + recall) and reads (get);
   wall-clock ratio async/sync.

    OMP_NUM_THREADS=1 python scripts/bench_agents.py [--data ../shared/data] [--conversations 2] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from zenbrain import AsyncMemory, Scope, open_memory
from zenbrain.bench.locomo import load_locomo
from zenbrain.ingest import RuleExtractor, add_messages
from zenbrain.providers.factory import make_embedder


class Memo:
    """An embedder that computes each text once per process (the warm-up fills it)."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.cache = inner, inner.name, inner.dim, {}

    def embed(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing)))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def sessions(conv):
    by = defaultdict(list)
    for d in conv.docs:
        by[d.session].append({"role": "user", "name": d.speaker or "user", "content": d.text, "timestamp": d.time})
    return [by[k] for k in sorted(by, key=lambda s: int(str(s).split("_")[-1]) if str(s).split("_")[-1].isdigit() else 0)]


def ingest(emb, convs, mode, folder):
    counts: Counter[str] = Counter()
    turns = 0
    start = time.perf_counter()
    for ci, conv in enumerate(convs):
        with open_memory(Path(folder) / f"{mode}-{ci}-{time.monotonic_ns()}.db", embedder=emb) as m:
            scope = Scope(f"c{ci}")
            for msgs in sessions(conv):
                turns += len(msgs)
                if mode == "store_many":
                    m.store_many([dict(content=f"{x['name']}: {x['content']}", kind="episode", layer="episodic",
                                       event_time=x["timestamp"]) for x in msgs], scope)
                else:
                    r = add_messages(m, msgs, scope, extractor=RuleExtractor())
                    counts.update(added=len(r.added), updated=len(r.updated), ignored=len(r.ignored),
                                  intentions=len(r.intentions))
                    counts.update(f"type:{a.metadata['memory_type']}" for a in r.added)
    return turns / (time.perf_counter() - start), counts


async def concurrent(am, scope, texts, ids):
    t0 = time.perf_counter()
    await asyncio.gather(*(am.store(t, scope) for t in texts), *(am.recall(t, scope, k=5) for t in texts))
    t1 = time.perf_counter()
    await asyncio.gather(*(am.get(i, scope) for i in ids))
    return t1 - t0, time.perf_counter() - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--embedder", default=None, help="embedder spec (default: the library default, MiniLM ONNX)")
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ops", type=int, default=200)
    args = ap.parse_args()
    convs = load_locomo(data_dir=args.data, limit=args.conversations, include_speaker=False, include_caption=False)
    emb = Memo(make_embedder(args.embedder))
    print(f"load average {os.getloadavg()[0]:.2f}; embedder {emb.name}; {sum(len(c.docs) for c in convs)} turns")
    with tempfile.TemporaryDirectory() as folder:
        ingest(emb, convs, "store_many", folder)  # warm-up: every vector computed once
        ingest(emb, convs, "add_messages", folder)
        base, full, counts = [], [], Counter()
        for _ in range(args.reps):
            base.append(ingest(emb, convs, "store_many", folder)[0])
            rate, counts = ingest(emb, convs, "add_messages", folder)
            full.append(rate)
        b, f = statistics.median(base), statistics.median(full)
        print(f"ingest  store_many {b:8.1f} turns/s | add_messages (rules) {f:8.1f} turns/s | ratio {f / b:.2f}")
        print("extracted:", dict(sorted(counts.items())))

        texts = [d.text for d in convs[0].docs[: args.ops]]
        emb.embed(texts)
        sync_w, sync_r, async_w, async_r = [], [], [], []
        for rep in range(args.reps):
            with open_memory(Path(folder) / f"sync-{rep}.db", embedder=emb) as m:
                scope = Scope("u")
                ids = [m.store(t, scope).id for t in texts[:20]]
                t0 = time.perf_counter()
                for t in texts:
                    m.store(t, scope)
                for t in texts:
                    m.recall(t, scope, k=5)
                t1 = time.perf_counter()
                for i in ids * (len(texts) // 20):
                    m.get(i, scope)
                sync_w.append(t1 - t0)
                sync_r.append(time.perf_counter() - t1)
            am = AsyncMemory(open_memory(Path(folder) / f"async-{rep}.db", embedder=emb))
            ids = [am.sync.store(t, Scope("u")).id for t in texts[:20]]
            w, r = asyncio.run(concurrent(am, Scope("u"), texts, ids * (len(texts) // 20)))
            am.close()
            async_w.append(w)
            async_r.append(r)
        sw, aw = statistics.median(sync_w), statistics.median(async_w)
        sr, ar = statistics.median(sync_r), statistics.median(async_r)
        n = len(texts)
        print(f"writes  {2 * n} ops: sync {sw * 1e3:7.1f} ms | async gather {aw * 1e3:7.1f} ms | ratio {aw / sw:.2f}")
        print(f"reads   {n} gets: sync {sr * 1e3:7.1f} ms | async gather {ar * 1e3:7.1f} ms | ratio {ar / sr:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
