#!/usr/bin/env python
"""Where a recall's time goes: the store's search calls (dense and lexical search, vector
reads) against the rest of the pipeline, on an existing store (for example one left by
``scripts/bench_speed.py --workdir DIR``). Recall as in use: k=10, touch=True, queries
distinct LoCoMo questions, embedded first (the embedding is left out of every figure).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/recall_breakdown.py /tmp/speed/scale.db --user speed
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from zenbrain.api import open_memory
from zenbrain.bench.locomo import LOCOMO_FILES, load_locomo, resolve_data_file
from zenbrain.model import Scope
from zenbrain.providers.factory import make_embedder

TIMED = ("vector_search", "lexical_search", "vectors", "get", "edges", "query", "kv_get", "kv_get_many", "transaction")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--user", default="speed")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--embedder", default="minilm-onnx")
    ap.add_argument("--data", default=os.environ.get("ZENBRAIN_DATA", str(ROOT.parent / "shared" / "data")))
    args = ap.parse_args()
    convs = load_locomo(resolve_data_file(None, LOCOMO_FILES, data_dir=args.data))
    questions = list(dict.fromkeys(q.question for c in convs for q in c.questions))[: args.queries + 3]
    mem = open_memory(args.path, embedder=make_embedder(args.embedder))
    scope = Scope(args.user)
    for q in questions:  # embedded now: the coordinator's query cache holds them (not timed below)
        mem.engine.embed_query(q)
    for q in questions[:3]:
        mem.recall(q, scope, k=10)
    spent: dict[str, float] = defaultdict(float)  # wall time
    cpu: dict[str, float] = defaultdict(float)  # this thread's CPU time (what other work on the machine inflates less)
    store = mem.storage
    for name in TIMED:
        fn = getattr(store, name)

        def timed(*a, _fn=fn, _name=name, **kw):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return _fn(*a, **kw)
            finally:
                spent[_name] += time.perf_counter() - t0
                cpu[_name] += time.thread_time() - c0

        @contextlib.contextmanager
        def timed_block(*a, _fn=fn, **kw):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                with _fn(*a, **kw) as tx:
                    yield tx
            finally:
                spent["transaction"] += time.perf_counter() - t0
                cpu["transaction"] += time.thread_time() - c0

        setattr(store, name, timed_block if name == "transaction" else timed)
    totals, cpu_totals = [], []
    for q in questions[3:]:
        t0, c0 = time.perf_counter(), time.thread_time()
        mem.recall(q, scope, k=10)
        totals.append(time.perf_counter() - t0)
        cpu_totals.append(time.thread_time() - c0)
    n = len(totals)
    total, cpu_total = sum(totals), sum(cpu_totals)
    print(f"{n} recalls on {args.path}: p50 {np.median(totals) * 1e3:.1f} ms, mean {total / n * 1e3:.1f} ms; "
          f"CPU p50 {np.median(cpu_totals) * 1e3:.1f} ms, mean {cpu_total / n * 1e3:.1f} ms; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("per recall, mean ms, wall and CPU (transaction: the side effects' write blocks, from begin to commit):")
    for name in TIMED:
        print(f"  {name:<15} {spent[name] / n * 1e3:7.2f} {cpu[name] / n * 1e3:7.2f}")
    rest, rest_cpu = total - sum(spent[k] for k in TIMED), cpu_total - sum(cpu[k] for k in TIMED)
    print(f"  {'everything else':<15} {rest / n * 1e3:7.2f} {rest_cpu / n * 1e3:7.2f}  "
          "(the pipeline's own Python: fusion, mechanisms, ...)")
    print("(reads inside a transaction block count twice: in their line and in the block's)")
    mem.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
