#!/usr/bin/env python
"""Lexical search in the SQLite store by its two paths, at growing partition sizes: FTS5
ranking the partition's matches in its rowid range, and the tantivy index
(``zenbrain.index``). What ``SQLiteStore(lexical_index_min_rows=...)`` chooses between.

The memories are real English sentences from this machine's documentation
(``scripts/real_corpus.py``); queries are LoCoMo questions, top 50 (recall's lexical_k)
under the store's default filter. Both paths are timed on the same store in one run,
query by query in turn. Printed: p50/p95 ms per path and the overlap of their top 10.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_lexical_paths.py --sizes 1000,5000,10000,20000,50000
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

from zenbrain.bench.locomo import LOCOMO_FILES, load_locomo, resolve_data_file
from zenbrain.model import Kind, Layer, MemoryItem
from zenbrain.storage.sqlite import SQLiteStore

PART = ("bench", "default")


def items(texts: list[str], start: int) -> list[MemoryItem]:
    out = []
    for i, text in enumerate(texts, start=start):
        h = hashlib.sha256(text.encode()).hexdigest()
        out.append(MemoryItem(id=f"m{i:08d}", user_id=PART[0], agent_id=PART[1], session_id=None, context="default",
                              layer=Layer.SEMANTIC, kind=Kind.FACT, content=text, content_hash=h, metadata={},
                              created_at=1.7e9 + i, updated_at=1.7e9 + i, event_time=None, last_access=1.7e9 + i,
                              vector_key=h))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000,10000,20000,50000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--data", default=os.environ.get("ZENBRAIN_DATA", str(ROOT.parent / "shared" / "data")))
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    from real_corpus import Corpus, default_dir

    corpus = Corpus(default_dir())
    texts = corpus.texts(0, max(sizes))
    convs = load_locomo(resolve_data_file(None, LOCOMO_FILES, data_dir=args.data))
    questions = list(dict.fromkeys(q.question for c in convs for q in c.questions))[: args.queries]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {len(questions)} queries, top {args.k}")
    print(f"{'size':>7} {'FTS5 p50':>9} {'p95':>7} {'tantivy p50':>12} {'p95':>7} {'top-10 overlap':>15}")
    with tempfile.TemporaryDirectory() as d:
        fts = SQLiteStore(Path(d) / "s.db", embedder_name="none", dim=4, lexical_index_min_rows=10**12)
        tan = SQLiteStore(Path(d) / "s.db", embedder_name="none", dim=4, lexical_index_min_rows=0, keep_fts=True)
        have = 0
        for size in sizes:
            batch = items(texts[have:size], have)
            for i in range(0, len(batch), 1000):
                with fts.transaction() as tx:
                    tx.put_memories(batch[i : i + 1000])
            have = size
            for s in (fts, tan):  # first use: build or sync, not timed
                s.lexical_search(PART, questions[0], args.k)
            t_f, t_t, overlap = [], [], []
            for q in questions:
                t0 = time.perf_counter()
                a = fts.lexical_search(PART, q, args.k)
                t1 = time.perf_counter()
                b = tan.lexical_search(PART, q, args.k)
                t2 = time.perf_counter()
                t_f.append((t1 - t0) * 1e3)
                t_t.append((t2 - t1) * 1e3)
                top_a = {m for m, _ in a[:10]}
                if top_a:
                    overlap.append(len(top_a & {m for m, _ in b[:10]}) / len(top_a))
            print(f"{size:>7} {np.median(t_f):>9.2f} {np.percentile(t_f, 95):>7.2f} {np.median(t_t):>12.2f} "
                  f"{np.percentile(t_t, 95):>7.2f} {np.mean(overlap):>15.3f}", flush=True)
        tan.close()
        fts.close()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
