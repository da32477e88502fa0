#!/usr/bin/env python
"""Writers in several processes on one store file: throughput and latency against one writer.

Each writer process opens the same SQLite file and stores ``--stores`` memories one at a
time (``MemoryCoordinator.store``, hashing embedder, LoCoMo-like short facts), after all
have opened the file (a barrier). Printed for 1 writer and for ``--processes`` writers, in
the same run: stores per second in all, latency p50 / p99 / max per store, CPU per store,
the time each store holds the write lock (BEGIN IMMEDIATE to the end of COMMIT, fsync
included), the longest wait for the lock, and the load average. The ratio of the two rates
is the figure; when it stays below the number of processes the lock-hold and CPU columns
say why (the write lock is held for a fixed time per commit; the cores are shared).

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python scripts/bench_writers.py --processes 4 --stores 100
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

COLOURS = ("red", "blue", "green", "white", "black", "grey")


def writer(path: str, wid: int, n: int, durability: str, barrier: Any, out: Any) -> None:
    from zenbrain import Scope, open_memory

    mem = open_memory(path, embedder="hashing:384", durability=durability)
    store = mem.storage
    holds: list[float] = []
    begin = store._c.begin  # timed from the lock taken to the commit done
    began = [0.0]

    def timed_begin() -> None:
        begin()
        began[0] = time.perf_counter()

    store._c.begin = timed_begin
    inner = store.transaction

    @contextmanager
    def transaction(**kw: Any) -> Any:
        with inner(**kw) as tx:
            yield tx
        holds.append(time.perf_counter() - began[0])

    store.transaction = transaction
    scope = Scope(f"writer{wid}")
    rng = random.Random(wid)
    mem.store("a first memory to open everything", scope)
    holds.clear()
    barrier.wait()
    lat = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        mem.store(f"writer {wid} fact {i}: the {rng.choice(COLOURS)} car is parked at house {rng.randint(1, 999)}",
                  scope, kind="fact")
        lat.append(time.perf_counter() - t)
    out.put((time.perf_counter() - t0, lat, time.process_time() - cpu0, store.max_lock_wait_s, holds))
    mem.close()


def run(processes: int, n: int, durability: str, workdir: Path) -> dict[str, Any]:
    path = workdir / f"writers{processes}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    ctx = mp.get_context("spawn")
    out, barrier = ctx.Queue(), ctx.Barrier(processes)
    procs = [ctx.Process(target=writer, args=(str(path), w, n, durability, barrier, out)) for w in range(processes)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    lat = np.array([x for r in results for x in r[1]]) * 1000
    holds = np.array([x for r in results for x in r[4]]) * 1000
    span = max(r[0] for r in results)
    return {
        "processes": processes, "stores_per_s": processes * n / span,
        "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99)), "max_ms": float(lat.max()),
        "cpu_ms_per_store": sum(r[2] for r in results) / (processes * n) * 1000,
        "lock_hold_p50_ms": float(np.percentile(holds, 50)), "lock_hold_share": float(holds.sum() / 1000 / span),
        "max_lock_wait_ms": max(r[3] for r in results) * 1000,
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--stores", type=int, default=100, help="stores per process")
    ap.add_argument("--durability", choices=["full", "process"], default="full")
    args = ap.parse_args(argv)
    if args.processes > 16 or args.stores > 2000:
        ap.error("kept bounded: at most 16 processes and 2000 stores each")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(1, args.stores, args.durability, Path(tmp)), run(args.processes, args.stores, args.durability,
                                                                      Path(tmp))]
    for r in rows:
        print(f"{r['processes']} writer(s): {r['stores_per_s']:.1f} stores/s, p50 {r['p50_ms']:.0f} ms, "
              f"p99 {r['p99_ms']:.0f} ms, max {r['max_ms']:.0f} ms; CPU {r['cpu_ms_per_store']:.1f} ms/store; "
              f"lock held {r['lock_hold_p50_ms']:.1f} ms/store (p50), {100 * r['lock_hold_share']:.0f} % of the time; "
              f"longest lock wait {r['max_lock_wait_ms']:.0f} ms; load {r['load']}")
    print(f"ratio {rows[1]['processes']} writers / 1 writer: {rows[1]['stores_per_s'] / rows[0]['stores_per_s']:.2f}x "
          f"(durability {args.durability})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
