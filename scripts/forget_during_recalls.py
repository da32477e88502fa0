#!/usr/bin/env python
"""Recall while a memory is forgotten: how long searches wait on an erasure's index rebuild.

On a copy of a store (a SQLite file and its ``.idx`` directory, e.g. the ``scale.db`` that
``scripts/bench_speed.py --workdir DIR`` leaves), a second thread recalls distinct LoCoMo
questions (k=10, ``touch=False``, embedded beforehand) in a loop while the main thread
forgets one memory of the same user. Prints how long the forget took, how many recalls ran
meanwhile, and the longest and median of them. ``--alone`` times the forget with no
recall beside it.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/forget_during_recalls.py /tmp/speed/scale.db /tmp/forget-copy
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from zenbrain.api import open_memory
from zenbrain.bench.locomo import LOCOMO_FILES, load_locomo, resolve_data_file
from zenbrain.model import Scope
from zenbrain.providers.factory import make_embedder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("workdir", type=Path, help="where the copy goes (replaced)")
    ap.add_argument("--user", default="speed")
    ap.add_argument("--embedder", default="minilm-onnx")
    ap.add_argument("--alone", action="store_true", help="no recall beside the forget")
    ap.add_argument("--data", default=os.environ.get("ZENBRAIN_DATA", str(ROOT.parent / "shared" / "data")))
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    copy = args.workdir / "store.db"
    shutil.copy(args.store, copy)
    if Path(f"{args.store}.idx").exists():
        shutil.copytree(f"{args.store}.idx", f"{copy}.idx")
    convs = load_locomo(resolve_data_file(None, LOCOMO_FILES, data_dir=args.data))
    questions = list(dict.fromkeys(q.question for c in convs for q in c.questions))[:300]
    mem = open_memory(str(copy), embedder=make_embedder(args.embedder))
    scope = Scope(args.user)
    for q in questions:
        mem.engine.embed_query(q)
    for q in questions[:5]:  # the indexes loaded
        mem.recall(q, scope, k=10)
    victim = mem.recall(questions[5], scope, k=1)[0].id
    latencies: list[float] = []
    stop = threading.Event()

    def recalls() -> None:
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            mem.recall(questions[10 + i % 290], scope, k=10, touch=False)
            latencies.append(time.perf_counter() - t0)
            i += 1

    thread = threading.Thread(target=recalls)
    if not args.alone:
        thread.start()
        time.sleep(1.0)
    before = len(latencies)
    t0 = time.perf_counter()
    receipt = mem.forget(victim, scope)
    took = time.perf_counter() - t0
    during = latencies[before:len(latencies) + 1]
    stop.set()
    if not args.alone:
        thread.join()
    mem.close()
    line = f"forget {took:.2f} s (scrubbed={receipt.scrubbed})"
    if during:
        line += (f"; {len(during)} recalls meanwhile, the longest {max(during) * 1e3:.0f} ms, "
                 f"p50 {np.median(during) * 1e3:.1f} ms")
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
