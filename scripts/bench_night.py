"""Time one decay() or sleep() on a copy of a store, and fingerprint what it did.

The store (a SQLite file and its ``.idx`` directory, e.g. the ``scale.db`` that
``scripts/bench_speed.py --workdir DIR --no-lifecycle`` leaves) is copied first, so the
same store can be measured again and by another version of the code. The clock is a
``SimulatedClock`` ``--days`` after the newest memory's creation. Printed as one JSON line:
wall and CPU seconds of the operation, the process's peak RSS (``ru_maxrss``: the
interpreter and the embedder, ``rss_before_op_mb``, are part of it), and digests of the
report and of the store after it (memories, edges, history and kv rows), which two
versions of the code that decide the same give alike (new memories get seeded ids); then
the report's counts.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_night.py /tmp/w/scale.db /tmp/copy.db sleep --days 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

COUNTS = ("count", "tagged", "donors", "rescued", "promoted", "memories", "edges", "decayed_count",
          "changed_count", "facts", "queued", "nodes")


def copy_store(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        target = Path(f"{dst}{suffix}")
        target.unlink(missing_ok=True)
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", target)
    shutil.rmtree(f"{dst}.idx", ignore_errors=True)
    if Path(f"{src}.idx").exists():
        shutil.copytree(f"{src}.idx", f"{dst}.idx")


def counts(x: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(x, dict):
        for k, v in x.items():
            if k in COUNTS and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[prefix + k] = v
            if isinstance(v, dict):
                out.update(counts(v, f"{prefix}{k}."))
    return out


def digest(db: Path) -> dict[str, Any]:
    """Digests of the rows sleep and decay may change."""
    out: dict[str, Any] = {}
    with sqlite3.connect(db) as c:
        for name, sql in (
            ("memories", "SELECT id, archived, strength, stability, conf_alpha, conf_beta, state, layer, updated_at "
                         "FROM memories ORDER BY id"),
            ("edges", "SELECT part, src, dst, relation, weight, variance, activations, updated_at FROM edges "
                      "ORDER BY part, src, dst, relation"),
            ("history", "SELECT memory_id, at, action, detail FROM history ORDER BY seq"),
            ("kv", "SELECT user_id, agent_id, key, value FROM kv ORDER BY user_id, agent_id, key"),
        ):
            h = hashlib.sha256()
            n = 0
            for row in c.execute(sql):
                h.update(repr(row).encode())
                n += 1
            out[f"{name}_sha"], out[name] = h.hexdigest()[:16], n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path, help="the store to copy (SQLite file; its .idx directory is copied too)")
    ap.add_argument("copy", type=Path, help="where the copy goes (replaced)")
    ap.add_argument("op", choices=("decay", "sleep"))
    ap.add_argument("--days", type=float, default=2.0, help="clock: days after the newest memory (default 2)")
    ap.add_argument("--user", default="speed", help="the scope's user (default: bench_speed's)")
    ap.add_argument("--embedder", default="minilm-onnx", help="the store's embedder (default minilm-onnx)")
    ap.add_argument("--report", type=Path, help="also write the whole report as JSON")
    ap.add_argument("--profile", type=Path, help="write cProfile statistics of the operation")
    args = ap.parse_args()

    copy_store(args.store, args.copy)
    with sqlite3.connect(args.copy) as c:
        newest = float(c.execute("SELECT max(created_at) FROM memories").fetchone()[0])

    from zenbrain import Scope, open_memory
    from zenbrain.clock import DAY, SimulatedClock
    from zenbrain.ids import seeded_ids
    from zenbrain.providers.factory import make_embedder

    emb = make_embedder(args.embedder)
    emb.embed(["load the model before the measurement"])
    mem = open_memory(args.copy, embedder=emb, clock=SimulatedClock(newest + args.days * DAY))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    prof = None
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    w0, c0 = time.perf_counter(), time.process_time()
    with seeded_ids(0):  # new memories (schemas) get the same ids in every run
        rep = mem.decay(Scope(args.user)) if args.op == "decay" else mem.sleep(Scope(args.user))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mem.close()
    blob = json.dumps(rep.as_dict(), sort_keys=True, default=str)
    if args.report:
        args.report.write_text(blob)
    line = {"op": args.op, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "peak_rss_mb": round(peak),
            "rss_before_op_mb": round(rss0), "report_sha": hashlib.sha256(blob.encode()).hexdigest()[:16],
            **digest(args.copy)}
    print(json.dumps(line))
    print(json.dumps(counts(rep.as_dict()["stages"]), sort_keys=True))


if __name__ == "__main__":
    main()
