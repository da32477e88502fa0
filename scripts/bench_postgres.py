#!/usr/bin/env python
"""The PostgreSQL store beside the SQLite store, measured in one run on this machine.

``scale``: for each size (``--sizes``), layout and backend (``--backends``: sqlite,
postgres, chroma), a fresh store is filled through ``MemoryCoordinator.store_many`` with
real English text and its real MiniLM vectors (the corpus of ``scripts/real_corpus.py``;
vectors looked up, so embedding is excluded; beyond the corpus, memory j is text j modulo
its size, so users share texts), then recalled with distinct LoCoMo questions (k=10,
touch=True as in use; query vectors embedded beforehand, so recall is storage and pipeline
only). Layouts: ``many``, users of ``--per-user`` memories each (default 100; one
``store_many`` per user), and ``one``, a single user holding all of them (batches of 500).
Then ``--forgets`` memories of random users are erased (the time of ``forget`` with its
scrub). ChromaDB (``PersistentClient``, cosine HNSW) gets the same texts, vectors and
query vectors, each record with its user in its metadata, each search filtered to the
asking user. Printed: ingest items/s, recall p50/p95 ms, forget median ms, bytes per
memory on disk, and the ratios between backends of the same run; for PostgreSQL also when
the large partition's HNSW index was ready. ``trips``: statements and round trips of each
recall on PostgreSQL, from libpq's trace. ``rest``: requests/s of the REST API on
PostgreSQL with 1 and with N worker processes (``zenbrain serve --workers``), a mix of
stores and recalls from concurrent clients over 100 users.

    OMP_NUM_THREADS=1 python scripts/bench_postgres.py scale --sizes 10000,100000 --pg-url postgresql://...
    OMP_NUM_THREADS=1 python scripts/bench_postgres.py scale --sizes 100000 --per-user 1000 --backends postgres,chroma,sqlite
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
import shutil
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

from bench_speed import TableEmbedder, dir_bytes, load_average, locomo_material
from real_corpus import available, load_corpus

from zenbrain import Scope, SimulatedClock, open_memory
from zenbrain.providers.factory import make_embedder


def say(msg: str = "") -> None:
    print(msg, flush=True)


def pg_url(given: str | None) -> str:
    if given:
        return given
    import pgserver

    server = pgserver.get_server(tempfile.mkdtemp(prefix="zenbrain-pgbench-"), cleanup_mode="delete")
    return server.get_uri()


def open_fresh(backend: str, url: str, workdir: Path, embedder: Any) -> tuple[Any, Any]:
    """A coordinator on a new store, and a function that removes the store."""
    clock = SimulatedClock(1.7e9)
    if backend == "sqlite":
        path = workdir / f"s-{time.monotonic_ns()}.db"
        mem = open_memory(path, embedder=embedder, clock=clock)

        def drop() -> None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        return mem, drop
    from zenbrain.storage.postgres.schemas import create_schema, drop_schema

    schema, location = create_schema(url, "bench")
    return open_memory(location, embedder=embedder, clock=clock), lambda: drop_schema(url, schema)


def disk_bytes(mem: Any) -> int:
    return int(mem.storage.stats().file_bytes)


class ChromaPeer:
    """ChromaDB (``PersistentClient``, cosine HNSW, defaults) in the same layout: every record
    carries its user in its metadata and each search is filtered to the asking user
    (``where``), which is how a multi-user application would keep users apart in one
    collection. Same texts, same vectors, same query vectors as the zenbrain stores."""

    def __init__(self, workdir: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        self.dir = workdir / f"chroma-{time.monotonic_ns()}"
        self.client = chromadb.PersistentClient(path=str(self.dir), settings=Settings(anonymized_telemetry=False))
        self.col = self.client.create_collection("bench", embedding_function=None,
                                                 configuration={"hnsw": {"space": "cosine"}})
        self.next_id = 0

    def add(self, user: str, texts: list[str], vecs: np.ndarray) -> None:
        step = self.client.get_max_batch_size()
        for i in range(0, len(texts), step):
            chunk = texts[i:i + step]
            ids = [str(self.next_id + j) for j in range(len(chunk))]
            self.next_id += len(chunk)
            self.col.add(ids=ids, documents=chunk, embeddings=vecs[i:i + len(chunk)],
                         metadatas=[{"user": user}] * len(chunk))

    def search(self, user: str, qvec: np.ndarray, k: int) -> list[str]:
        res = self.col.query(query_embeddings=[qvec], n_results=k, where={"user": user}, include=[])
        return list(res["ids"][0])

    def one_id(self, user: str) -> str:
        return str(self.col.get(where={"user": user}, limit=1, include=[])["ids"][0])

    def forget(self, mid: str) -> None:
        self.col.delete(ids=[mid])

    def disk_bytes(self) -> int:
        return dir_bytes(self.dir)

    def close(self) -> None:
        self.client.close() if hasattr(self.client, "close") else None
        shutil.rmtree(self.dir, ignore_errors=True)


def run_scale(args: argparse.Namespace) -> list[dict[str, Any]]:
    url = pg_url(args.pg_url)
    live = make_embedder(args.embedder)
    sizes = [int(s) for s in args.sizes.split(",")]
    texts, vecs = load_corpus(min(max(sizes), available()))
    table = {t: vecs[i] for i, t in enumerate(texts)}
    embedder = TableEmbedder(live, table)
    _, questions = locomo_material(args.data)
    rng = random.Random(7)
    queries = rng.sample(questions, min(args.queries, len(questions)))
    qvecs = {q: v for q, v in zip(queries, live.embed(queries))}
    workdir = Path(tempfile.mkdtemp(prefix="zenbrain-pgbench-"))
    results = []
    try:
        for size in sizes:
            for layout in args.layouts.split(","):
                for backend in args.backends.split(","):
                    results.append(one_run(backend, layout, size, texts, vecs, queries, qvecs, embedder, url,
                                           workdir, args))
                    say(json.dumps(results[-1]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_ratios(results)
    return results


def print_ratios(results: list[dict[str, Any]]) -> None:
    """One line per size, layout and backend, then each backend / SQLite of the same run."""
    say(f"{'size':>8} {'layout':6} {'backend':9} {'ingest/s':>9} {'p50 ms':>7} {'p95 ms':>7} {'forget ms':>9} "
        f"{'B/memory':>9}")
    keyed = {(r["size"], r["layout"], r["backend"]): r for r in results}
    for size, layout in dict.fromkeys((r["size"], r["layout"]) for r in results):
        for backend in BACKENDS:
            r = keyed.get((size, layout, backend))
            if r:
                say(f"{size:>8} {layout:6} {backend:9} {r['ingest_items_s']:>9} {r['recall_p50_ms']:>7} "
                    f"{r['recall_p95_ms']:>7} {r['forget_p50_ms'] or '-':>9} {r['bytes_per_memory']:>9}")
        for num, den in (("postgres", "sqlite"), ("postgres", "chroma"), ("sqlite", "chroma")):
            a, b = keyed.get((size, layout, den)), keyed.get((size, layout, num))
            if a and b:
                say(f"{'':>8} {'':6} {num[:2]}/{den[:2]:6} {b['ingest_items_s'] / a['ingest_items_s']:>9.2f} "
                    f"{b['recall_p50_ms'] / a['recall_p50_ms']:>7.2f} {b['recall_p95_ms'] / a['recall_p95_ms']:>7.2f} "
                    + (f"{b['forget_p50_ms'] / a['forget_p50_ms']:>9.2f}" if a["forget_p50_ms"] and b["forget_p50_ms"]
                       else f"{'-':>9}")
                    + f" {b['bytes_per_memory'] / a['bytes_per_memory']:>9.2f}")


BACKENDS = ("sqlite", "postgres", "chroma")


def one_run(backend: str, layout: str, size: int, texts: list[str], vecs: np.ndarray, queries: list[str],
            qvecs: dict[str, Any], embedder: Any, url: str, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Fill a fresh store of ``backend`` with ``size`` memories, recall, forget. Memory j of
    the layout is corpus text ``j mod len(texts)`` (so beyond the corpus, users share texts)."""
    users = max(1, size // args.per_user) if layout == "many" else 1
    per_user = size // users
    scopes = [Scope(f"user{u:05d}", "agent") for u in range(users)]
    batches = ([(scopes[u], u * per_user, (u + 1) * per_user) for u in range(users)] if layout == "many"
               else [(scopes[0], i, min(size, i + 500)) for i in range(0, size, 500)])

    def rows(lo: int, hi: int) -> list[int]:
        return [j % len(texts) for j in range(lo, hi)]

    if backend == "chroma":
        peer = ChromaPeer(workdir)
        close = peer.close
    else:
        mem, drop = open_fresh(backend, url, workdir, embedder)

        def close() -> None:
            mem.close()
            drop()
    try:
        load0 = load_average()
        t0 = time.perf_counter()
        for n, (scope, lo, hi) in enumerate(batches):
            idx = rows(lo, hi)
            if backend == "chroma":
                peer.add(scope.user_id, [texts[j] for j in idx], vecs[idx])
            else:
                mem.store_many([{"content": texts[j]} for j in idx], scope)
            if args.progress and n and n % args.progress == 0:
                done = hi
                print(f"   {backend} {size}: {done} stored, {done / (time.perf_counter() - t0):.0f}/s, load "
                      f"{load_average()}", file=sys.stderr, flush=True)
        ingest_s = time.perf_counter() - t0
        index_ready_s = None
        if backend == "postgres":
            t1 = time.perf_counter()
            mem.storage.wait_for_indexes()
            index_ready_s = ingest_s + time.perf_counter() - t1
        if backend != "chroma":
            for q, v in qvecs.items():  # the query vectors, as a session that asked them before would have
                mem.engine._queries[q] = v

        def ask(q: str, scope: Scope) -> None:
            if backend == "chroma":
                peer.search(scope.user_id, qvecs[q], 10)
            else:
                mem.recall(q, scope, k=10)
        rng = random.Random(11)
        for q in queries[:10]:  # warm caches and connections
            ask(q, scopes[rng.randrange(len(scopes))])
        lat = []
        for q in queries:
            scope = scopes[rng.randrange(len(scopes))]
            t = time.perf_counter()
            ask(q, scope)
            lat.append((time.perf_counter() - t) * 1e3)
        forget_ms, scrubbed = [], 0
        for _ in range(args.forgets):
            scope = scopes[rng.randrange(len(scopes))]
            if backend == "chroma":
                mid = peer.one_id(scope.user_id)
                t = time.perf_counter()
                peer.forget(mid)
                forget_ms.append((time.perf_counter() - t) * 1e3)
                continue
            victim = mem.list_memories(scope, limit=1)[0]
            t = time.perf_counter()
            scrubbed += int(mem.forget(victim.id, scope).scrubbed)
            forget_ms.append((time.perf_counter() - t) * 1e3)
        disk = peer.disk_bytes() if backend == "chroma" else disk_bytes(mem)
        return {"backend": backend, "layout": layout, "size": size, "users": users,
                "ingest_items_s": round(size / ingest_s, 1), "ingest_s": round(ingest_s, 1),
                "hnsw_ready_s": None if index_ready_s is None else round(index_ready_s, 1),
                "recall_p50_ms": round(float(np.percentile(lat, 50)), 2),
                "recall_p95_ms": round(float(np.percentile(lat, 95)), 2),
                "queries": len(lat), "disk_mb": round(disk / 1e6, 1), "bytes_per_memory": round(disk / size),
                "forget_p50_ms": round(float(np.percentile(forget_ms, 50)), 1) if forget_ms else None,
                "forgets_scrubbed": None if backend == "chroma" else f"{scrubbed}/{len(forget_ms)}",
                "load_before": load0, "load_after": load_average()}
    finally:
        close()


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
    s = sub.add_parser("scale")
    s.add_argument("--sizes", default="10000,100000")
    s.add_argument("--layouts", default="many,one")
    s.add_argument("--backends", default="sqlite,postgres,chroma", help="in this order; any of sqlite,postgres,chroma")
    s.add_argument("--per-user", type=int, default=100, help="memories per user in the 'many' layout")
    s.add_argument("--progress", type=int, default=0, help="a progress line on stderr every N batches (0: none)")
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--forgets", type=int, default=5, help="memories erased after the recalls (0: none)")
    s.add_argument("--embedder", default="minilm-onnx")
    s.add_argument("--data", default=None)
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
    for p in (s, t, r):
        p.add_argument("--pg-url", default=None)
        p.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    say(f"load average at start: {load_average()}")
    results = {"scale": run_scale, "trips": run_trips, "rest": run_rest}[args.cmd](args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    say(f"load average at end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
