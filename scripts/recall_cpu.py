#!/usr/bin/env python
"""Recall's CPU time with the zenbrain found on ``PYTHONPATH``, to compare versions of the
code on the same workload in one session (run them interleaved, several times each).

``build`` stores the first N texts of ``scripts/real_corpus.py`` as episodic memories with
their precomputed MiniLM vectors (``--sessions S``: as conversation turns, S to a session,
speakers alternating) under a simulated clock. ``time`` copies that store, recalls distinct
LoCoMo questions with k=10 and ``touch=True`` (queries embedded first, the clock moved 7
minutes after each), and prints the CPU time per recall (p50, mean), the wall time, the load
average, and a digest of the results and of what the recalls wrote, so that two versions
can be checked to rank and write the same. A PostgreSQL URL in place of the path builds and
times a store there (recalled in place, no digest; the SQL statements per recall counted)::

    PYTHONPATH=src python scripts/recall_cpu.py build /tmp/rc/s10k.db --size 10000
    OMP_NUM_THREADS=1 PYTHONPATH=src python scripts/recall_cpu.py time /tmp/rc/s10k.db
    PYTHONPATH=src python scripts/recall_cpu.py build "postgresql://...?options=-c%20search_path%3Dschema" --size 5000

It imports nothing from the repository but zenbrain itself (through ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from zenbrain.api import open_memory
from zenbrain.bench.locomo import LOCOMO_FILES, load_locomo, resolve_data_file
from zenbrain.clock import DAY, SimulatedClock
from zenbrain.model import Scope
from zenbrain.providers.factory import make_embedder

START = 1_700_000_000.0
SCOPE = Scope("speed")


class TableEmbedder:
    """Corpus vectors looked up by text; any other text (a query) goes to the live embedder."""

    def __init__(self, live: Any, table: dict[str, np.ndarray]) -> None:
        self.live, self.table, self.name, self.dim = live, table, live.name, live.dim

    def embed(self, texts: Any) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        miss = [i for i, t in enumerate(texts) if t not in self.table]
        for i, t in enumerate(texts):
            if t in self.table:
                out[i] = self.table[t]
        if miss:
            out[miss] = np.asarray(self.live.embed([texts[i] for i in miss]), dtype=np.float32)
        return out


def build(path: str, size: int, sessions: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_corpus import load_corpus

    texts, vecs = load_corpus(size, embedder_name="minilm-onnx-int8_all-MiniLM-L6-v2")
    live = make_embedder("minilm-onnx")
    mem = open_memory(path, embedder=TableEmbedder(live, dict(zip(texts, vecs))), clock=SimulatedClock(START))
    times = START - np.random.default_rng(7).uniform(0, 365 * DAY, size)
    if sessions:
        times.sort()
        recs = [{"content": f"{'Ann' if j % 2 else 'Bob'}: {t}", "kind": "episode", "layer": "episodic",
                 "event_time": float(w)} for j, (t, w) in enumerate(zip(texts, times))]
        for i in range(0, size, sessions):
            mem.store_many(recs[i:i + sessions], SCOPE.with_session(f"session-{i // sessions}"))
    else:
        recs = [{"content": t, "kind": "episode", "layer": "episodic", "event_time": float(w)}
                for t, w in zip(texts, times)]
        for i in range(0, size, 1000):
            mem.store_many(recs[i:i + 1000], SCOPE)
    mem.close()


def digest(db: Path, results: list[Any], ignore: tuple[str, ...] = ()) -> str:
    """Digests of the ranked results and of the rows the recalls wrote (JSON columns by the
    values they hold, so that versions writing the same values in other JSON text - ``1e-5``
    or ``1e-05`` - agree); records named in ``ignore`` are left out."""
    hits = hashlib.sha256(repr(results).encode()).hexdigest()[:16]
    h = hashlib.sha256()
    con = sqlite3.connect(db)
    for q, json_col in (("SELECT key, value FROM kv ORDER BY key", 1),
                        ("SELECT id, state, stability, access_count, last_access, due_at FROM memories ORDER BY id", 1),
                        ("SELECT src, dst, relation, weight, variance, activations, updated_at FROM edges "
                         "ORDER BY 1, 2, 3", None)):
        for row in con.execute(q):
            if q.startswith("SELECT key") and row[0] in ignore:
                continue
            if json_col is not None:
                row = (*row[:json_col], json.loads(row[json_col]), *row[json_col + 1:])
            h.update(repr(row).encode())
    con.close()
    return f"hits {hits}, writes {h.hexdigest()[:16]}"


def count_statements() -> list[int]:
    """Count the SQL statements psycopg sends (PostgreSQL stores)."""
    import psycopg

    count = [0]
    for cls in (psycopg.Cursor, psycopg.Connection):
        for name in ("execute", "executemany"):
            fn = getattr(cls, name, None)
            if fn is None:
                continue

            def counted(self: Any, *a: Any, _fn: Any = fn, **kw: Any) -> Any:
                count[0] += 1
                return _fn(self, *a, **kw)
            setattr(cls, name, counted)
    return count


def run(src: str, queries: int, data: str, days: float = 0.0, ignore: tuple[str, ...] = ()) -> None:
    work = Path(tempfile.mkdtemp(prefix="recall-cpu-"))
    postgres = src.startswith("postgresql")
    db: Any = src if postgres else work / "s.db"
    statements = count_statements() if postgres else [0]
    try:
        if not postgres:
            shutil.copy(src, db)
            if Path(f"{src}.idx").exists():
                shutil.copytree(f"{src}.idx", f"{db}.idx")
        convs = load_locomo(resolve_data_file(None, LOCOMO_FILES, data_dir=data))
        qs = list(dict.fromkeys(q.question for c in convs for q in c.questions if q.question.strip()))[:queries + 5]
        clock = SimulatedClock(START + days * DAY)
        mem = open_memory(db, embedder=make_embedder("minilm-onnx"), clock=clock)
        embed = mem.engine.embed_query if hasattr(mem, "engine") else mem._embed_query  # older versions
        for q in qs:
            embed(q)
        for q in qs[:5]:  # opens the indexes
            mem.recall(q, SCOPE, k=10)
            clock.advance(minutes=7)
        cpu, wall, results = [], [], []
        sent = statements[0]
        for q in qs[5:]:
            c0, w0 = time.process_time(), time.perf_counter()
            hits = mem.recall(q, SCOPE, k=10)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            results.append([(h.item.id, h.score, repr(h.why)) for h in hits])
            clock.advance(minutes=7)
        mem.close()
        import zenbrain

        print(f"{Path(zenbrain.__file__).parents[1]}: CPU p50 {np.median(cpu) * 1e3:.2f} ms, mean "
              f"{np.mean(cpu) * 1e3:.2f} ms; wall p50 {np.median(wall) * 1e3:.1f} ms; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              + (f"SQL statements per recall {(statements[0] - sent) / len(cpu):.1f}" if postgres
                 else f"digests: {digest(db, results, ignore)}"), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("path")
    b.add_argument("--size", type=int, default=10_000)
    b.add_argument("--sessions", type=int, default=0, help="turns per session (0: no sessions)")
    t = sub.add_parser("time")
    t.add_argument("path")
    t.add_argument("--queries", type=int, default=200)
    t.add_argument("--days", type=float, default=0.0,
                   help="start the clock this many days later (a store recalled in place before)")
    t.add_argument("--ignore-record", action="append", default=[],
                   help="leave this partition record out of the digest of the writes (repeatable)")
    t.add_argument("--data", default=os.environ.get("ZENBRAIN_DATA", str(Path(__file__).resolve().parents[2]
                                                                        / "shared" / "data")))
    args = ap.parse_args()
    if args.cmd == "build":
        if not args.path.startswith("postgresql") and Path(args.path).exists():
            raise SystemExit(f"{args.path} exists")
        build(args.path, args.size, args.sessions)
    else:
        run(args.path, args.queries, args.data, args.days, tuple(args.ignore_record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
