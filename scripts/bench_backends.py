"""The storage backends side by side: SQLite, PostgreSQL and ChromaDB in one run, in one
big partition and in many small ones (``scripts/bench_speed.py --parts backends``).

For each size, layout and backend a fresh store is filled through
``MemoryCoordinator.store_many`` with real English text and its real MiniLM vectors (the
corpus of ``scripts/real_corpus.py``; vectors looked up, so embedding is excluded; beyond
the corpus, memory j is text j modulo its size, so users share texts), then recalled
with distinct LoCoMo questions (k=10, touch=True as in use; query vectors embedded
beforehand, so recall is storage and pipeline only). Layouts: ``many``, users of
``per_user`` memories each (one ``store_many`` per user), and ``one``, a single user
holding all of them (batches of 500). Then ``forgets`` memories of random users are
erased (the time of ``forget`` with its scrub). ChromaDB (``PersistentClient``, cosine
HNSW) gets the same texts, vectors and query vectors, each record with its user in its
metadata, each search filtered to the asking user. Measured: ingest items/s, recall
p50/p95 ms, forget median ms, bytes per memory on disk, and the ratios between backends
of the same run; for PostgreSQL also when the large partition's HNSW index was ready.

PostgreSQL: the server at ``pg_url`` or, without one, a private server started from the
``pgserver`` wheel (PostgreSQL 16 with pgvector, on a Unix socket, removed at exit; as
root it runs as a system user it creates). Each store gets a schema of its own.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_speed import TableEmbedder, dir_bytes, load_average, locomo_material
from real_corpus import available, load_corpus

from zenbrain import Scope, SimulatedClock, open_memory
from zenbrain.providers.factory import make_embedder

BACKENDS = ("sqlite", "postgres", "chroma")
LAYOUTS = ("many", "one")
ONE_BATCH = 500  # records per store_many in the one-partition layout


def say(msg: str = "") -> None:
    print(msg, flush=True)


def pg_url(given: str | None) -> str:
    """``given``, or the URL of a private server started from the ``pgserver`` wheel. The
    vector extension is made in the database's public schema, where every store's schema
    finds it (made inside a store's schema, dropping that schema would drop it too)."""
    if given:
        return given
    import pgserver
    import psycopg

    server = pgserver.get_server(tempfile.mkdtemp(prefix="zenbrain-pgbench-"), cleanup_mode="delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    return url


def open_fresh(backend: str, url: str | None, workdir: Path, embedder: Any) -> tuple[Any, Any]:
    """A coordinator on a new store, and a function that removes the store."""
    clock = SimulatedClock(1.7e9)
    if backend == "sqlite":
        path = workdir / f"s-{time.monotonic_ns()}.db"
        mem = open_memory(path, embedder=embedder, clock=clock)

        def drop() -> None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            shutil.rmtree(str(path) + ".idx", ignore_errors=True)
        return mem, drop
    from zenbrain.storage.postgres.schemas import create_schema, drop_schema

    assert url is not None
    schema, location = create_schema(url, "bench")
    return open_memory(location, embedder=embedder, clock=clock), lambda: drop_schema(url, schema)


def disk_bytes(mem: Any) -> int:
    """The store's bytes on disk: the SQLite file, its WAL and saved search indexes, or the
    PostgreSQL schema's tables with their indexes and TOAST."""
    path = Path(str(mem.storage.path))
    if path.exists():
        return sum(Path(str(path) + s).stat().st_size for s in ("", "-wal") if Path(str(path) + s).exists()) + (
            dir_bytes(str(path) + ".idx") if Path(str(path) + ".idx").exists() else 0)
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


@dataclass
class Settings:
    """What one comparison runs (the command-line options of the part)."""

    sizes: list[int]
    layouts: list[str]
    backends: list[str]
    per_user: int = 1000
    queries: int = 200
    forgets: int = 5
    embedder: str = "minilm-onnx"
    data: str | None = None
    pg_url: str | None = None
    corpus: Path | None = None  # the corpus directory of scripts/real_corpus.py (default: its default)
    progress: int = 0  # a progress line on stderr every N batches (0: none)
    workdir: Path | None = None


def check_settings(sizes: list[int], layouts: list[str], backends: list[str], per_user: int) -> None:
    bad = [b for b in backends if b not in BACKENDS] + [lay for lay in layouts if lay not in LAYOUTS]
    if bad:
        raise SystemExit(f"unknown backend or layout {bad}; backends are {', '.join(BACKENDS)}, "
                         f"layouts {', '.join(LAYOUTS)}")
    if per_user <= 0 or any(s <= 0 for s in sizes):
        raise SystemExit("sizes and --per-user must be positive")


def run(cfg: Settings, on_result: Any = None) -> list[dict[str, Any]]:
    """Every size x layout x backend; each result is printed (and passed to ``on_result``)
    as soon as it is measured, then a table with the ratios."""
    check_settings(cfg.sizes, cfg.layouts, cfg.backends, cfg.per_user)
    url = pg_url(cfg.pg_url) if "postgres" in cfg.backends else None
    live = make_embedder(cfg.embedder)
    have = available(cfg.corpus, live.name)
    if not have:
        raise SystemExit(f"no corpus vectors of {live.name}: run scripts/real_corpus.py extract, then embed")
    texts, vecs = load_corpus(min(max(cfg.sizes), have), cfg.corpus, live.name)
    embedder = TableEmbedder(live, {t: vecs[i] for i, t in enumerate(texts)})
    _, questions = locomo_material(cfg.data)
    queries = random.Random(7).sample(questions, min(cfg.queries, len(questions)))
    qvecs = {q: v for q, v in zip(queries, live.embed(queries))}
    say(f"backends {', '.join(cfg.backends)}; layouts {', '.join(cfg.layouts)} (many: users of {cfg.per_user}); "
        f"{len(texts)} corpus texts with their {live.name} vectors"
        + (f" (memories beyond {len(texts)} repeat them)" if max(cfg.sizes) > len(texts) else "")
        + f"; {len(queries)} LoCoMo questions"
        + ("" if url is None else f"; PostgreSQL {'of --pg-url' if cfg.pg_url else 'private (pgserver)'}"))
    if cfg.workdir is not None:
        cfg.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="zenbrain-backends-", dir=cfg.workdir))
    results = []
    try:
        for size in cfg.sizes:
            for layout in cfg.layouts:
                for backend in cfg.backends:
                    results.append(one_run(backend, layout, size, texts, vecs, queries, qvecs, embedder, url,
                                           workdir, cfg))
                    say(json.dumps(results[-1]))
                    if on_result is not None:
                        on_result(results)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_ratios(results)
    return results


def print_ratios(results: list[dict[str, Any]]) -> None:
    """One line per size, layout and backend, then each backend / another of the same run."""
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


def one_run(backend: str, layout: str, size: int, texts: list[str], vecs: np.ndarray, queries: list[str],
            qvecs: dict[str, Any], embedder: Any, url: str | None, workdir: Path, cfg: Settings) -> dict[str, Any]:
    """Fill a fresh store of ``backend`` with ``size`` memories, recall, forget. Memory j of
    the layout is corpus text ``j mod len(texts)`` (so beyond the corpus, users share texts)."""
    users = max(1, size // cfg.per_user) if layout == "many" else 1
    per_user = size // users
    scopes = [Scope(f"user{u:05d}", "agent") for u in range(users)]
    batches = ([(scopes[u], u * per_user, (u + 1) * per_user) for u in range(users)] if layout == "many"
               else [(scopes[0], i, min(size, i + ONE_BATCH)) for i in range(0, size, ONE_BATCH)])

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
            if cfg.progress and n and n % cfg.progress == 0:
                elapsed = time.perf_counter() - t0
                print(f"   {backend} {layout} {size}: {hi if layout == 'one' else (n + 1) * per_user} stored, "
                      f"{(n + 1) * (hi - lo) / elapsed:.0f}/s, load {load_average()}", file=sys.stderr, flush=True)
        ingest_s = time.perf_counter() - t0
        load_ingest = load_average()
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
        for _ in range(cfg.forgets):
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
                "load_before": load0, "load_after_ingest": load_ingest, "load_after": load_average()}
    finally:
        close()
