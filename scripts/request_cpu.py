#!/usr/bin/env python
"""CPU time of the REST workload's two requests (a store, a recall), with the zenbrain found
on ``PYTHONPATH``, to compare versions on the same store (run them interleaved).

The store is the one ``scripts/load_rest.py`` builds (``--memories`` LoCoMo turns over
``--users`` users, hashing embedder); pass its path. Each run works on a copy.

``inprocess``: through the coordinator under a simulated clock (3 minutes between
requests): N stores of a LoCoMo turn for a random user, then N recalls (k=10) of a LoCoMo
question; prints the CPU per store and per recall and a digest of what they wrote and
returned, so that two versions can be checked to do the same.

``instructions``: the instructions a store and a recall execute, counted by valgrind's
callgrind (Debian's valgrind): the in-process workload run with N operations of one kind
and with none, the difference divided by N. Unlike CPU time, the count does not move with
what else the shared cores do (CPU time of the same code here moved by up to 1.5x between
runs), so it compares two versions in one pair of runs (a few minutes)::

    OMP_NUM_THREADS=1 PYTHONPATH=src python scripts/request_cpu.py instructions /tmp/zl/load-hashing384-10000-10.db --requests 60

``server``: a REST server (``zenbrain.server.workers``, one worker) on the copy; N recalls,
N stores, N recalls again and N health checks (the HTTP layer's own floor), one request at a time over one keep-alive connection; prints
the server process's CPU time per request (from /proc), so the HTTP layer is counted::

    PYTHONPATH=src python scripts/load_rest.py --rates 10 --seconds 1 --workdir /tmp/zl   # builds the store
    OMP_NUM_THREADS=1 PYTHONPATH=src python scripts/request_cpu.py inprocess /tmp/zl/load-hashing384-10000-10.db
    OMP_NUM_THREADS=1 PYTHONPATH=src python scripts/request_cpu.py server /tmp/zl/load-hashing384-10000-10.db
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_rest import free_port, locomo


def copy_store(src: Path, work: Path) -> Path:
    db = work / "s.db"
    shutil.copy(src, db)
    if Path(f"{src}.idx").exists():
        shutil.copytree(f"{src}.idx", f"{db}.idx")
    return db


def open_copy(src: Path, work: Path, users: int, rng: random.Random,
              questions: list[str]) -> tuple[Any, Any, Path]:
    """A memory on a copy of ``src`` in ``work`` under a simulated clock, every user's
    indexes opened by one recall: (memory, clock, the copy's path)."""
    from zenbrain.api import open_memory
    from zenbrain.clock import SimulatedClock
    from zenbrain.model import Scope
    from zenbrain.providers.factory import make_embedder

    db = copy_store(src, work)
    # After everything in the store (load_rest.py builds it on the real clock): a clock
    # before its memories' last use would make every recall a massed repetition, which
    # skips the spaced-review bookkeeping a server on the real clock does.
    con = sqlite3.connect(db)
    newest = con.execute("SELECT MAX(MAX(created_at, last_access)) FROM memories").fetchone()[0]
    con.close()
    clock = SimulatedClock(float(newest) + 86_400.0)
    mem = open_memory(str(db), embedder=make_embedder("hashing:384"), clock=clock)
    for u in range(users):  # opens every user's indexes
        mem.recall(rng.choice(questions), Scope(f"user{u}"), k=10)
    return mem, clock, db


def store_one(mem: Any, rng: random.Random, turns: list[str], users: int, i: int) -> None:
    from zenbrain.model import Scope

    mem.store(f"{rng.choice(turns)} (note {i})", Scope(f"user{rng.randrange(users)}"))


def recall_one(mem: Any, rng: random.Random, questions: list[str], users: int) -> Any:
    from zenbrain.model import Scope

    return mem.recall(rng.choice(questions), Scope(f"user{rng.randrange(users)}"), k=10)


def in_process(src: Path, n: int, data: str | None, users: int) -> None:
    turns, questions = locomo(data)
    rng = random.Random(0)
    work = Path(tempfile.mkdtemp(prefix="request-cpu-"))
    try:
        mem, clock, db = open_copy(src, work, users, rng, questions)
        c0 = time.process_time()
        for i in range(n):
            store_one(mem, rng, turns, users, i)
            clock.advance(minutes=3)
        c1 = time.process_time()
        results = []
        for _ in range(n):
            hits = recall_one(mem, rng, questions, users)
            results.append([(h.item.content, round(h.score, 12)) for h in hits])
            clock.advance(minutes=3)
        c2 = time.process_time()
        mem.close()
        h = hashlib.sha256(repr(results).encode())
        con = sqlite3.connect(db)
        for row in con.execute("SELECT content, strength, importance, valence, arousal, stability, due_at, "
                               "access_count, last_access, state FROM memories ORDER BY content, created_at"):
            h.update(repr((*row[:-1], json.loads(row[-1]))).encode())
        edges = con.execute("SELECT COUNT(*), SUM(weight) FROM edges").fetchone()
        con.close()
        import zenbrain

        print(f"{Path(zenbrain.__file__).parents[1]}: CPU per store {(c1 - c0) / n * 1e3:.2f} ms, per recall "
              f"{(c2 - c1) / n * 1e3:.2f} ms; edges {edges[0]}; digest {h.hexdigest()[:16]}; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def operations(src: Path, kind: str, n: int, data: str | None, users: int) -> None:
    """``n`` stores or recalls as ``in_process`` does them, after the same set-up (the body
    of one run under callgrind)."""
    turns, questions = locomo(data)
    rng = random.Random(0)
    work = Path(tempfile.mkdtemp(prefix="request-cpu-"))
    try:
        mem, clock, _ = open_copy(src, work, users, rng, questions)
        for i in range(n):
            if kind == "store":
                store_one(mem, rng, turns, users, i)
            else:
                recall_one(mem, rng, questions, users)
            clock.advance(minutes=3)
        mem.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def instructions(src: Path, n: int, data: str | None, users: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions: valgrind is not installed (Debian: apt-get install valgrind)")
    work = Path(tempfile.mkdtemp(prefix="request-instructions-"))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = {}
    try:
        for kind in ("store", "recall"):
            for count in (0, n):
                log = work / f"{kind}-{count}.log"
                cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work / f'{kind}-{count}.out'}",
                       sys.executable, __file__, "_operations", str(src), "--kind", kind, "--requests", str(count),
                       "--users", str(users), *(["--data", data] if data else [])]
                runs[(kind, count)] = (subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                                        stderr=log.open("wb")), log)
            # Two at a time: one of each count of a kind.
            for count in (0, n):
                proc, log = runs[(kind, count)]
                if proc.wait() != 0:
                    raise SystemExit(f"instructions: the {kind} run failed; see {log}")
        counts = {}
        for key, (_, log) in runs.items():
            found = re.findall(r"Collected : (\d+)", log.read_text())
            if not found:
                raise SystemExit(f"instructions: no count in {log}")
            counts[key] = int(found[-1])
        import zenbrain

        per = {kind: (counts[(kind, n)] - counts[(kind, 0)]) / n / 1e6 for kind in ("store", "recall")}
        print(f"{Path(zenbrain.__file__).parents[1]}: million instructions per store {per['store']:.2f}, "
              f"per recall {per['recall']:.2f} (callgrind, {n} of each against none)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server(src: Path, n: int, data: str | None, users: int) -> None:
    turns, questions = locomo(data)
    rng = random.Random(0)
    work = Path(tempfile.mkdtemp(prefix="request-cpu-"))
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "zenbrain.server.workers", "--path", str(copy_store(src, work)),
           "--embedder", "hashing:384", "--workers", "1", "--port", str(port), "--durability", "full"]
    proc = subprocess.Popen(cmd, env=env, stdout=(work / "log").open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                probe.request("GET", "/health")
                if probe.getresponse().status == 200:
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"the server did not start; see {work / 'log'}") from None
                time.sleep(0.2)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def post(path: str, body: object, headers: dict[str, str] | None = None) -> None:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
            r = conn.getresponse()
            r.read()
            if r.status >= 300:
                raise SystemExit(f"{path}: HTTP {r.status}")

        def recall() -> None:
            post(f"/v1/recall?user_id=user{rng.randrange(users)}", {"query": rng.choice(questions), "k": 10})

        def store(i: int) -> None:
            post(f"/v1/memories?user_id=user{rng.randrange(users)}", {"content": f"{rng.choice(turns)} (note {i})"},
                 {"Idempotency-Key": uuid.uuid4().hex})

        for u in range(users):  # opens every user's indexes
            recall()
        pids = [int(p) for p in subprocess.run(["pgrep", "-g", str(proc.pid)], check=False, capture_output=True,
                                               text=True).stdout.split()]
        cpu = []
        def health() -> None:
            conn.request("GET", "/health")
            conn.getresponse().read()

        for phase in ("recall", "store", "recall", "health"):
            c0 = sum(process_cpu(p) for p in pids)
            for i in range(n):
                {"recall": recall, "health": health}[phase]() if phase != "store" else store(i)
            cpu.append((sum(process_cpu(p) for p in pids) - c0) / n * 1e3)
        import zenbrain

        print(f"{Path(zenbrain.__file__).parents[1]}: server CPU per recall {cpu[0]:.2f} ms, per store {cpu[1]:.2f} "
              f"ms, per recall after the stores {cpu[2]:.2f} ms, per GET /health {cpu[3]:.2f} ms; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["inprocess", "server", "instructions", "_operations"])
    ap.add_argument("store", type=Path, help="a store scripts/load_rest.py built (hashing embedder)")
    ap.add_argument("--requests", type=int, default=200, help="requests of each kind")
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--data", default=None)
    ap.add_argument("--kind", choices=["store", "recall"], default="store", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mode == "_operations":
        operations(args.store, args.kind, args.requests, args.data, args.users)
    elif args.mode == "instructions":
        instructions(args.store, args.requests, args.data, args.users)
    else:
        (in_process if args.mode == "inprocess" else server)(args.store, args.requests, args.data, args.users)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
