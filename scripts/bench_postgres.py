#!/usr/bin/env python
"""The PostgreSQL store measured on its own, in one run on this machine.

``trips``: statements and round trips of each recall on PostgreSQL, from libpq's trace.
``rest``: requests/s of the REST API on PostgreSQL with 1 and with N worker processes
(``zenbrain serve --workers``), a mix of stores and recalls from concurrent clients over
100 users. PostgreSQL beside SQLite and ChromaDB (ingest, recall, forget at 10k-1M
memories, one partition and many) is ``scripts/bench_speed.py --parts backends``.

    OMP_NUM_THREADS=1 python scripts/bench_postgres.py trips --size 2000 --queries 30
    OMP_NUM_THREADS=1 python scripts/bench_postgres.py rest --pg-url postgresql://... --workers 1,4

Without ``--pg-url`` a private server is started from the ``pgserver`` wheel. The load
average is printed beside every figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from bench_backends import pg_url
from bench_speed import TableEmbedder, load_average, locomo_material
from real_corpus import available, load_corpus

from zenbrain import Scope, SimulatedClock, open_memory
from zenbrain.providers.factory import make_embedder


def say(msg: str = "") -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- round trips


def run_trips(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Statements and round trips of each recall on a PostgreSQL store of ``--size`` memories
    (users of ``--per-user``), read from libpq's trace of the store's one pooled connection:
    a round trip is a turn from messages of the client to the server's answer."""
    import psycopg.pq

    from zenbrain.storage.postgres import store as pg_store

    url = pg_url(args.pg_url)
    live = make_embedder(args.embedder)
    texts, vecs = load_corpus(min(args.size, available()))
    embedder = TableEmbedder(live, {t: vecs[i] for i, t in enumerate(texts)})
    _, questions = locomo_material(args.data)
    queries = random.Random(7).sample(questions, min(args.queries, len(questions)))
    trace = tempfile.NamedTemporaryFile("w+", prefix="zenbrain-pgtrace-", delete=False)  # noqa: SIM115
    configure = pg_store.PostgresStore._configure

    def traced(self: Any, conn: Any) -> None:
        configure(self, conn)
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)

    pg_store.PostgresStore._configure = traced  # type: ignore[method-assign]
    from zenbrain.storage.postgres.schemas import create_schema, drop_schema

    schema, location = create_schema(url, "trips")
    # One pooled connection, so that its trace (buffered by libpq) can be written out after
    # each recall (untrace, trace again) and every line lands with the recall it belongs to.
    mem = open_memory(location, embedder=embedder, clock=SimulatedClock(1.7e9), pool_size=1)

    def drop() -> None:
        drop_schema(url, schema)

    def flush_trace() -> None:
        with mem.storage._pool.connection() as conn:
            conn.pgconn.untrace()
            pgconn = conn.pgconn
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
    try:
        users = max(1, args.size // args.per_user)
        scopes = [Scope(f"user{u:05d}", "agent") for u in range(users)]
        for u, scope in enumerate(scopes):
            mem.store_many([{"content": texts[j % len(texts)]} for j in range(u * args.per_user,
                                                                               (u + 1) * args.per_user)], scope)
        for q, v in zip(queries, live.embed(queries)):
            mem.engine._queries[q] = v
        rng = random.Random(11)
        mem.recall(queries[0], scopes[0], k=10)  # every connection opened, statements prepared
        rows = []
        for q in queries:
            flush_trace()
            start = os.path.getsize(trace.name)
            mem.recall(q, scopes[rng.randrange(len(scopes))], k=10)
            flush_trace()
            with open(trace.name) as fh:
                fh.seek(start)
                lines = [ln.split("\t") for ln in fh.read().splitlines() if ln[:2] in ("F\t", "B\t")]
            sides = [ln[0] for ln in lines]
            rows.append({"round_trips": sum(a == "F" and b == "B" for a, b in itertools.pairwise(sides)),
                         "statements": sum(ln[0] == "F" and len(ln) > 2 and ln[2] in ("Execute", "Query")
                                           for ln in lines)})
        out = {"size": args.size, "per_user": args.per_user, "queries": len(rows),
               "round_trips_median": float(np.median([r["round_trips"] for r in rows])),
               "statements_median": float(np.median([r["statements"] for r in rows])),
               "round_trips_max": max(r["round_trips"] for r in rows)}
        say(json.dumps(out))
        return [out]
    finally:
        pg_store.PostgresStore._configure = configure  # type: ignore[method-assign]
        mem.close()
        drop()
        os.unlink(trace.name)


# --------------------------------------------------------------------------- REST


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WORDS = "river garden harbor lantern maple stone cloud market bridge violin".split()


def load_mix(base: str, seconds: float, clients: int) -> dict[str, Any]:
    """Concurrent clients for ``seconds``: half stores, half recalls, over 100 users."""
    import httpx

    lat: list[float] = []
    errors = [0]
    failures: list[str] = []
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def client(n: int) -> None:
        rng = random.Random(n)
        with httpx.Client(base_url=base, timeout=60) as c:
            while time.monotonic() < stop:
                user = f"user{rng.randrange(100)}"
                text = " ".join(rng.choice(WORDS) for _ in range(8))
                t = time.perf_counter()
                try:
                    if rng.random() < 0.5:
                        r = c.post("/v1/memories", params={"user_id": user}, json={"content": text})
                    else:
                        r = c.post("/v1/recall", params={"user_id": user}, json={"query": text, "k": 10})
                    failure = f"{r.status_code} {r.text[:300]}" if r.status_code >= 400 else None
                except httpx.TransportError as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                with lock:
                    lat.append((time.perf_counter() - t) * 1e3)
                    if failure is not None:
                        errors[0] += 1
                        failures.append(failure)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {"requests_s": round(len(lat) / seconds, 1), "p50_ms": round(float(np.percentile(lat, 50)), 1),
            "p95_ms": round(float(np.percentile(lat, 95)), 1), "errors": errors[0], "failures": failures[:5]}


def run_rest(args: argparse.Namespace) -> list[dict[str, Any]]:
    import httpx

    from zenbrain.storage.postgres.schemas import create_schema, drop_schema

    url = pg_url(args.pg_url)
    out = []
    for workers in [int(w) for w in args.workers.split(",")]:
        schema, location = create_schema(url, "rest")
        port = _free_port()
        env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
        log = open(args.server_log, "a") if args.server_log else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-m", "zenbrain.cli", "serve", "--path", location, "--embedder",
                                 args.rest_embedder, "--port", str(port), "--workers", str(workers)],
                                env=env, stdout=subprocess.DEVNULL, stderr=log)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(base + "/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.3)
            time.sleep(3.0 * workers)  # every worker up (each imports and opens the store)
            load0 = load_average()
            out.append({"workers": workers, "clients": args.clients, **load_mix(base, args.seconds, args.clients),
                        "load_before": load0, "load_after": load_average()})
            say(json.dumps(out[-1]))
        finally:
            proc.terminate()
            proc.wait(30)
            drop_schema(url, schema)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trips", help="statements and round trips per recall")
    t.add_argument("--size", type=int, default=2000)
    t.add_argument("--per-user", type=int, default=1000)
    t.add_argument("--queries", type=int, default=50)
    t.add_argument("--embedder", default="minilm-onnx")
    t.add_argument("--data", default=None)
    r = sub.add_parser("rest")
    r.add_argument("--workers", default="1,4")
    r.add_argument("--clients", type=int, default=16)
    r.add_argument("--seconds", type=float, default=20.0)
    r.add_argument("--rest-embedder", default="hashing:384")
    r.add_argument("--server-log", default=None, help="append the servers' output to this file")
    for p in (t, r):
        p.add_argument("--pg-url", default=None)
        p.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    say(f"load average at start: {load_average()}")
    results = {"trips": run_trips, "rest": run_rest}[args.cmd](args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    say(f"load average at end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
