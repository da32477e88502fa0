#!/usr/bin/env python
"""Speed of zenbrain: ingest throughput, recall latency at scale, sleep and decay time.

Everything is measured in one run, on this machine, and printed as medians and ratios:

1. Ingest. ``store_many`` throughput (items/s) with the real embedder (default MiniLM,
   batched) beside the raw throughput of the same embedder on the same texts (ratio
   ingest/raw), and ``store_many`` with a pre-warmed embedding cache, which leaves the
   storage cost alone. Records are plain ``{"content": text}`` (layer chosen by routing),
   distinct LoCoMo turns, one fresh store per repetition.
2. Ingest scaling (``--growth N``): storage-only ``store_many`` throughput, per batch, while a
   store of routed memories grows to N items (vectors precomputed, embedding excluded).
3. Recall at scale (``--sizes``). One store grows through the sizes, through ``store_many``
   in batches of ``--scale-batch`` with the vectors precomputed (so the ingest rate is storage
   only; the per-batch rate is kept as a curve). Its memories are LoCoMo turns cycled with
   variations (other speaker names, added words, later times), stored as episodic turns,
   the way the LoCoMo benchmark stores them. Real embedder vectors are used for the
   distinct LoCoMo turns (a few thousand, cached on disk between runs); the bulk of the
   variations gets vectors from ``--bulk`` (hashing: the HashingEmbedder of the varied text;
   random: random unit vectors; perturbed: the real vector of the base turn plus noise,
   cosine about 0.85 to it), because embedding a million texts with MiniLM would take
   hours here. With ``--corpus [DIR]`` the memories are instead real English sentences
   (and passages of two) from this machine's man pages and documentation, with their real
   MiniLM vectors, embedded ahead of time by ``scripts/real_corpus.py`` (``--bulk corpus``;
   every memory is distinct real text, no variation). Queries are distinct LoCoMo questions embedded by the real embedder at query
   time: pass 1 includes that query embedding, pass 2 repeats the same queries an hour
   later on the simulated clock, served from the coordinator's query LRU (an hour, so that
   the memories they reach are reviewed as in pass 1: a repetition within the hour is
   massed and skips that work). ``recall`` runs as in use (k=10, touch=True). Then
   ``decay()`` and ``sleep()`` are timed once per size up to ``--lifecycle-max`` (they may
   change the store; the next size grows the changed store, like a store that sleeps), and
   after them, on the reopened store, the same queries once more (embedded again, then
   timed cached): recall on a store a night has changed.
   After each size: peak RSS of this process (``ru_maxrss``; it also holds the generated
   texts and the embedder, whose share is printed), the SQLite file plus its WAL on disk,
   and bytes per memory.

   Planner statistics (``--analyze-above N``, default 100000): SQLite has none unless
   ANALYZE runs, and without them the query that keeps the in-memory vector index in step
   with the database (``SQLiteStore._sync``) scans the whole embeddings table for every
   500 changed ids, so each ``store_many`` batch costs time in proportion to the store's
   size. So that a million memories can be stored in a practical time, the script runs
   ANALYZE on the store's connection once, when the store holds N memories. When N is one
   of the sizes, that size is measured as shipped (recall, decay, sleep), then the cached
   queries run once more just before ANALYZE (pass 3) and just after it (pass 4) as a
   control; every size above N is measured with the statistics. ``none`` never runs it.

4. Peers (``--peers chroma,mem0`` or ``none``): after zenbrain at each size, ChromaDB
   (``PersistentClient``, cosine HNSW, defaults) and Mem0 open source (``add(...,
   infer=False)``, local Qdrant) get the same new texts with the same vectors
   (``add_texts`` in ``zenbrain.bench.peers``; Mem0 gets them through its embedding model,
   100 messages per ``add`` call) and the same queries (search k=10, the query embedded
   by the same ``--embedder`` at query time, as in zenbrain's pass 1). Each peer runs in
   its own spawned process, so its memory (peak RSS as ``VmHWM``) and disk are its own;
   it ingests and answers while zenbrain waits. Printed: ingest items/s, search p50/p95,
   disk, peak RSS, and the ratios zenbrain/peer. A peer is skipped at a size when the
   time it would need there (ingest at its last rate plus its queries, latency scaled with
   size) exceeds its ``--peer-budget``; the reason is printed.

5. Backends side by side (``--parts backends``, ``scripts/bench_backends.py``): SQLite,
   PostgreSQL and ChromaDB (``--backends``), each size of ``--sizes`` a fresh store per
   backend, in one big partition (``--layout one``) and in users of ``--per-user``
   memories (``--layout many``: 1,000 users of 1,000 at 1M), filled through
   ``store_many`` with the real-text corpus and its real vectors (records routed as in
   use, embedding excluded), recalled with LoCoMo questions (query vectors embedded
   beforehand) by random users, then a few memories forgotten. ChromaDB keeps each
   record's user in its metadata and filters every search to the asking user. Printed per
   size, layout and backend: ingest items/s, recall p50/p95, forget median, bytes per
   memory, and the ratios postgres/sqlite, postgres/chroma, sqlite/chroma. PostgreSQL is
   the server of ``--pg-url``, or a private one started from the ``pgserver`` wheel.

Everything runs at one thread per numpy/onnxruntime pool when ``OMP_NUM_THREADS=1`` is
set; the load average is printed at the start, after each size and at the end.

    .venv/bin/python scripts/bench_speed.py                       # sizes 10000,100000
    .venv/bin/python scripts/bench_speed.py --sizes 2000 --queries 50 --ingest-n 300 --growth 0 --peers none
    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_speed.py --sizes 10000,100000,1000000 \
        --embedder minilm-onnx --bulk perturbed --queries 100 --scale-batch 2000 --workdir /tmp/speed --json out.json
    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_speed.py --parts backends --sizes 10000,100000 \
        --backends sqlite,postgres,chroma --layout many,one --per-user 1000 --embedder minilm-onnx --json pg.json

Data: LoCoMo from ``--data`` or ``$ZENBRAIN_DATA`` (default ../shared/data).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zenbrain.api import open_memory
from zenbrain.bench.locomo import LOCOMO_FILES, load_locomo, resolve_data_file
from zenbrain.cli_support import CACHE_FILE, cache_dir
from zenbrain.clock import SimulatedClock
from zenbrain.model import Scope
from zenbrain.providers.base import normalize_rows
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import make_embedder
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.retrieval.turn_context import split_speaker

SCOPE = Scope("speed")
NAMES = (
    "Avery", "Blake", "Carmen", "Dario", "Elena", "Farah", "Gustav", "Hana", "Ibrahim", "Jonas",
    "Keiko", "Luca", "Maya", "Nikolai", "Olivia", "Pedro", "Quinn", "Rosa", "Sven", "Tariq",
    "Uma", "Viktor", "Wen", "Ximena", "Yusuf", "Zoe",
)
_WORD = re.compile(r"[A-Za-z]{4,}")


# --------------------------------------------------------------------------- helpers


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def say(msg: str = "") -> None:
    print(msg, flush=True)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def fresh_memory(workdir: Path, name: str, embedder: Any, clock: Any = None):
    path = workdir / f"{name}.db"
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            p.unlink()
    return open_memory(path, embedder=embedder, clock=clock or SimulatedClock())


def store_in_batches(mem: Any, records: Sequence[dict[str, Any]], batch: int) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(records), batch):
        mem.store_many(list(records[i : i + batch]), SCOPE)
    return time.perf_counter() - t0


class TableEmbedder:
    """Vectors looked up by text; any other text (a query) goes to the live embedder.

    It carries the live embedder's name and width, so the store treats its vectors as the
    live embedder's.
    """

    def __init__(self, live: Any, table: dict[str, np.ndarray]) -> None:
        # Keyed by each text and by its words without a leading "Name:", which is what the
        # store embeds of a speaker's turn.
        self.live = live
        self.table = table
        self.name = live.name
        self.dim = live.dim
        self.live_calls = 0
        # A query goes to the live embedder: recall may embed it beside its keyword search.
        self.releases_gil = bool(getattr(live, "releases_gil", False))

    def load(self, mapping: dict[str, np.ndarray]) -> None:
        """Replace the table (the texts of the next slice): the words index follows it."""
        self.table.clear()
        self.table.update(mapping)
        self.__dict__.pop("by_words", None)

    @functools.cached_property
    def by_words(self) -> dict[str, str]:
        """Own words -> the stored text they come from (built once per table: rebuilding it
        on each call cost 1.4 s per batch at a million texts)."""
        return {split_speaker(t)[1]: t for t in self.table}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        words = self.by_words if any(t not in self.table for t in texts) else {}
        keys = [t if t in self.table else words.get(t, t) for t in texts]
        miss = [i for i, t in enumerate(keys) if t not in self.table]
        for i, t in enumerate(keys):
            v = self.table.get(t)
            if v is not None:
                out[i] = v
        if miss:
            self.live_calls += 1
            out[miss] = np.asarray(self.live.embed([texts[i] for i in miss]), dtype=np.float32)
        return out


# --------------------------------------------------------------------------- data


def locomo_material(data: str | None) -> tuple[list[tuple[str, float]], list[str]]:
    """Distinct LoCoMo turns (text, time) and distinct questions, in file order."""
    if data and Path(data).is_dir():
        file = resolve_data_file(None, LOCOMO_FILES, data_dir=data)
    else:
        file = resolve_data_file(data, LOCOMO_FILES)
    convs = load_locomo(file)
    turns: dict[str, float] = {}
    for c in convs:
        for d in c.docs:
            turns.setdefault(d.text, d.time if d.time is not None else 1.68e9)
    questions = list(dict.fromkeys(q.question for c in convs for q in c.questions if q.question.strip()))
    return list(turns.items()), questions


def variations(turns: list[tuple[str, float]], n: int, seed: int = 0) -> list[tuple[str, int, float, bool]]:
    """``n`` memories: the distinct turns first, then varied copies.

    Each is (text, index of its base turn, event time, whether it is the unvaried turn).
    """
    rng = random.Random(seed)
    vocab = sorted({w.lower() for t, _ in turns for w in _WORD.findall(t)})
    t_min = min(t for _, t in turns)
    out: list[tuple[str, int, float, bool]] = []
    seen: set[str] = set()
    for i in range(n):
        b = i % len(turns)
        text, when = turns[b]
        cycle = i // len(turns)
        if cycle:
            _, sep, rest = text.partition(": ")
            name = NAMES[(i * 7 + cycle) % len(NAMES)]
            body = rest if sep else text
            words = " ".join(rng.sample(vocab, 3))
            text = f"{name}: {body} (also {words})"
            when = t_min + (when - t_min) + cycle * 30 * 86400.0
        if text in seen:
            text = f"{text} [{i}]"
        seen.add(text)
        out.append((text, b, when, cycle == 0))
    return out


def corpus_items(texts: list[tuple[str, float]], n: int) -> list[tuple[str, int, float, bool]]:
    """The first ``n`` corpus texts as memories (text, corpus index, event time, real)."""
    if len(texts) < n:
        raise SystemExit(f"the corpus has {len(texts)} embedded texts, {n} needed: run scripts/real_corpus.py embed")
    return [(t, i, when, True) for i, (t, when) in enumerate(texts[:n])]


def load_real_corpus(directory: str, n: int, embedder_name: str) -> tuple[list[tuple[str, float]], np.ndarray]:
    """``n`` texts and vectors of the corpus of scripts/real_corpus.py; event times one minute apart."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_corpus import default_dir, load_corpus

    texts, vecs = load_corpus(n, Path(directory) if directory else default_dir(), embedder_name)
    t0 = 1.68e9
    return [(t, t0 + 60.0 * i) for i, t in enumerate(texts)], vecs


# --------------------------------------------------------------------------- 1. ingest


def bench_ingest(embedder: Any, texts: list[str], batch: int, repeats: int, workdir: Path) -> dict[str, Any]:
    say(f"\n1. Ingest: {len(texts)} distinct LoCoMo turns, store_many in batches of {batch}, "
        f"median of {repeats} repetitions, a fresh store each time")
    embedder.embed(texts[:16])  # load the model, warm up the runtime
    records = [{"content": t} for t in texts]
    raw, ingest, warm = [], [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        for i in range(0, len(texts), batch):
            embedder.embed(texts[i : i + batch])
        raw.append(len(texts) / (time.perf_counter() - t0))

        mem = fresh_memory(workdir, f"ingest-{r}", embedder)
        ingest.append(len(texts) / store_in_batches(mem, records, batch))
        layers = mem.stats(SCOPE)["by_layer"]
        mem.close()

        # Pre-warm by storing the same records once (the store embeds what it indexes, for
        # a turn its words without the speaker): the timed run below embeds nothing.
        cached = CachedEmbedder(embedder, None, memory_items=4 * len(texts) + 16)
        mem = fresh_memory(workdir, f"prewarm-{r}", cached)
        store_in_batches(mem, records, batch)
        mem.close()
        misses = cached.stats.misses
        mem = fresh_memory(workdir, f"warm-{r}", cached)
        warm.append(len(texts) / store_in_batches(mem, records, batch))
        assert cached.stats.misses == misses, "the warm run must not embed"
        mem.close()
        say(f"   run {r + 1}: raw {raw[-1]:.1f}/s, store_many {ingest[-1]:.1f}/s, pre-warmed {warm[-1]:.1f}/s")
    res = {
        "items": len(texts),
        "batch": batch,
        "repeats": repeats,
        "raw_embed_items_per_s": median(raw),
        "store_many_items_per_s": median(ingest),
        "store_many_prewarmed_items_per_s": median(warm),
        "ratio_ingest_over_raw": median(ingest) / median(raw),
        "storage_ms_per_item": 1000.0 / median(warm),
        "runs": {"raw": raw, "store_many": ingest, "prewarmed": warm},
        "layers": layers,
    }
    say(f"   raw embedding ({embedder.name}):            {res['raw_embed_items_per_s']:9.1f} items/s")
    say(f"   store_many, embedding included:            {res['store_many_items_per_s']:9.1f} items/s"
        f"   ratio ingest/raw = {res['ratio_ingest_over_raw']:.2f}")
    say(f"   store_many, pre-warmed cache (storage):    {res['store_many_prewarmed_items_per_s']:9.1f} items/s"
        f"   = {res['storage_ms_per_item']:.2f} ms/item")
    say(f"   layers chosen by routing: {dict(sorted(layers.items()))}")
    return res


# --------------------------------------------------------------------------- bulk vectors


def bulk_vectors(mode: str, items: list[tuple[str, int, float, bool]], base_vecs: np.ndarray, seed: int) -> np.ndarray:
    """Real vectors for unvaried turns; ``mode`` vectors for the variations. In ``corpus``
    mode every item is a corpus text and ``base_vecs`` holds the corpus vectors."""
    if mode == "corpus":
        return np.ascontiguousarray(base_vecs[[it[1] for it in items]], dtype=np.float32)
    out = np.empty((len(items), base_vecs.shape[1]), dtype=np.float32)
    real = [i for i, it in enumerate(items) if it[3]]
    rest = [i for i, it in enumerate(items) if not it[3]]
    if real:
        out[real] = base_vecs[[items[i][1] for i in real]]
    if not rest:
        return out
    if mode == "hashing":
        out[rest] = HashingEmbedder(base_vecs.shape[1]).embed([items[i][0] for i in rest])
    elif mode == "random":
        rng = np.random.default_rng(seed)
        out[rest] = normalize_rows(rng.standard_normal((len(rest), base_vecs.shape[1])).astype(np.float32))
    else:  # perturbed: cosine with the base turn's vector about 0.85
        rng = np.random.default_rng(seed)
        noise = normalize_rows(rng.standard_normal((len(rest), base_vecs.shape[1])).astype(np.float32))
        out[rest] = normalize_rows(base_vecs[[items[i][1] for i in rest]] + 0.62 * noise)
    return out


# --------------------------------------------------------------------------- 2. growth


def bench_growth(live: Any, turns, base_vecs, n: int, batch: int, bulk: str, workdir: Path) -> dict[str, Any]:
    say(f"\n2. Ingest scaling, routed records (no layer given), storage only: store_many batches of {batch} "
        f"while the store grows to {n}")
    items = variations(turns, n, seed=1)
    vecs = bulk_vectors(bulk, items, base_vecs, seed=1)
    table = {it[0]: v for it, v in zip(items, vecs)}
    emb = TableEmbedder(live, table)
    mem = fresh_memory(workdir, "growth", emb)
    rates: list[tuple[int, float]] = []
    t_all = time.perf_counter()
    for i in range(0, n, batch):
        recs = [{"content": t, "event_time": w} for t, _, w, _ in items[i : i + batch]]
        dt = store_in_batches(mem, recs, batch)
        rates.append((i + len(recs), len(recs) / dt))
    total = time.perf_counter() - t_all
    layers = mem.stats(SCOPE)["by_layer"]
    mem.close()
    step = max(1, len(rates) // 10)
    shown = rates[::step] + ([rates[-1]] if (len(rates) - 1) % step else [])
    say("   " + ", ".join(f"{k}: {r:.0f}/s" for k, r in shown))
    say(f"   {n} items in {total:.1f} s; layers {dict(sorted(layers.items()))}")
    return {"items": n, "batch": batch, "seconds": total, "items_per_s_by_size": rates, "layers": layers}


# --------------------------------------------------------------------------- memory and disk


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (``ru_maxrss``; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def hwm_rss_mb() -> float:
    """Peak resident set size of this process's address space (``VmHWM``). Unlike ``ru_maxrss``
    it starts afresh at exec, so a spawned child does not inherit its parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return peak_rss_mb()


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def store_files(path: Path) -> dict[str, int]:
    """Bytes of the SQLite file and its write-ahead log."""
    out = {}
    for name, suffix in (("db", ""), ("wal", "-wal")):
        f = Path(str(path) + suffix)
        out[name] = f.stat().st_size if f.exists() else 0
    return out


def dir_bytes(path: str | Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


class Progress:
    """A progress line on stderr every ``every`` items or ``seconds``, with rate and ETA."""

    def __init__(self, label: str, total: int, done: int = 0, every: int = 0, seconds: float = 60.0) -> None:
        self.label, self.total, self.start_done = label, total, done
        self.every = every or max(1, total // 20)
        self.seconds = seconds
        self.t0 = self.t_last = time.perf_counter()
        self.next_at = done + self.every

    def update(self, done: int, busy_s: float) -> None:
        now = time.perf_counter()
        if done < self.next_at and now - self.t_last < self.seconds and done < self.total:
            return
        self.t_last = now
        self.next_at = done + self.every
        n = done - self.start_done
        rate = n / busy_s if busy_s > 0 else float("nan")
        eta = (self.total - done) / rate if rate > 0 else float("nan")
        print(f"   ... {self.label}: {done}/{self.total} stored, {rate:.0f}/s, "
              f"{now - self.t0:.0f} s elapsed, ~{eta:.0f} s to go", file=sys.stderr, flush=True)


def thin_curve(curve: list[tuple[int, float]], points: int = 12) -> list[tuple[int, float]]:
    """Per-batch (stored, items/s) pairs merged into about ``points`` windows (harmonic mean)."""
    if len(curve) <= points:
        return list(curve)
    step = -(-len(curve) // points)
    out = []
    for i in range(0, len(curve), step):
        part = curve[i : i + step]
        out.append((part[-1][0], len(part) / sum(1.0 / r for _, r in part)))
    return out


# --------------------------------------------------------------------------- peers (own processes)


PEER_NAMES = ("chroma", "mem0")


def peer_worker(conn: Any, name: str, spec: str, workdir: str, options: dict[str, Any]) -> None:
    """Runs in its own process: one peer system, driven by messages from the benchmark."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    system = None
    try:
        from zenbrain.bench.peers import ChromaSystem, Mem0System

        live = make_embedder(spec)
        live.embed(["warm up the embedder"])
        folder = os.path.join(workdir, f"peer-{name}")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        if name == "chroma":
            system = ChromaSystem(live, workdir=folder, batch_size=options.get("chroma_batch", 1000))
        else:
            system = Mem0System(name="mem0", embedder=live, workdir=folder, vector_store=options.get("mem0_store", "qdrant"))
        conn.send(("ok", {"library_version": _library_version(name)}))
    except Exception as exc:  # noqa: BLE001 - reported to the benchmark, which goes on without this peer
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    stored = 0
    while True:
        msg = conn.recv()
        try:
            if msg[0] == "close":
                system.close()
                conn.send(("ok", None))
                return
            if msg[0] == "grow":
                _, texts_path, vecs_path, count, dim, size, slice_n = msg
                busy = 0.0
                curve: list[tuple[int, float]] = []
                prog = Progress(f"{name} {size}", size, stored)
                with open(texts_path, encoding="utf-8") as tf, open(vecs_path, "rb") as vf:
                    left = count
                    while left:
                        n = min(slice_n, left)
                        texts = [json.loads(next(tf)) for _ in range(n)]
                        vecs = np.fromfile(vf, dtype=np.float32, count=n * dim).reshape(n, dim)
                        step = options.get("peer_step", 1000)
                        for i in range(0, n, step):
                            t0 = time.perf_counter()
                            system.add_texts(texts[i : i + step], vecs[i : i + step])
                            dt = time.perf_counter() - t0
                            busy += dt
                            k = len(texts[i : i + step])
                            stored += k
                            curve.append((stored, k / dt))
                            prog.update(stored, busy)
                        left -= n
                conn.send(("ok", {"seconds": busy, "items": count, "curve": curve}))
            elif msg[0] == "query":
                _, warm, queries, k = msg
                for q in warm:
                    system.search(q, k)
                lat = []
                for q in queries:
                    t0 = time.perf_counter()
                    system.search(q, k)
                    lat.append((time.perf_counter() - t0) * 1000.0)
                conn.send(("ok", lat))
            elif msg[0] == "stats":
                conn.send(("ok", {"peak_rss_mb": hwm_rss_mb(), "rss_mb": current_rss_mb(),
                                  "disk_bytes": dir_bytes(os.path.join(workdir, f"peer-{name}")), "stored": stored}))
            else:
                conn.send(("error", f"unknown message {msg[0]!r}"))
        except Exception as exc:  # noqa: BLE001 - reported; the benchmark stops using this peer
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _library_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chromadb" if name == "chroma" else "mem0ai")
    except PackageNotFoundError:
        return "?"


class Peer:
    """A peer system in a child process (its own memory, measured apart from zenbrain's)."""

    def __init__(self, name: str, spec: str, workdir: Path, options: dict[str, Any]) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # a clean process: no zenbrain store, no copied pages
        self.name = name
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=peer_worker, args=(child, name, spec, str(workdir), options), daemon=True)
        self.proc.start()
        child.close()
        self.rows: list[dict[str, Any]] = []
        self.skipped: str | None = None
        self.have = 0
        self.info = self._reply()

    def _reply(self) -> Any:
        status, value = self.conn.recv()
        if status != "ok":
            raise RuntimeError(value)
        return value

    def call(self, *msg: Any) -> Any:
        self.conn.send(msg)
        return self._reply()

    def close(self) -> None:
        try:
            if self.proc.is_alive():
                self.call("close")
        except (RuntimeError, OSError, EOFError):
            pass
        self.proc.join(timeout=60)
        if self.proc.is_alive():
            self.proc.terminate()


def start_peers(names: list[str], spec: str, workdir: Path, options: dict[str, Any]) -> tuple[list[Peer], dict[str, str]]:
    peers, failed = [], {}
    for name in names:
        try:
            peers.append(Peer(name, spec, workdir, options))
        except (RuntimeError, OSError, EOFError) as exc:
            failed[name] = f"could not start: {exc}"
            say(f"   peer {name} could not start ({exc}); going on without it")
    return peers, failed


def parse_budgets(text: str, names: Sequence[str]) -> dict[str, float]:
    """``60`` (every peer) or ``chroma=60,mem0=10``: minutes -> seconds per peer."""
    text = text.strip()
    if "=" not in text:
        return {n: float(text) * 60.0 for n in names}
    out = {}
    for part in text.split(","):
        name, _, minutes = part.partition("=")
        if name.strip() not in names:
            raise ValueError(f"--peer-budget: unknown peer {name.strip()!r}")
        out[name.strip()] = float(minutes) * 60.0
    return out


def peer_projection(peer: Peer, size: int, n_queries: int) -> float | None:
    """Seconds the next size would take this peer, from its last measured rate and latency."""
    if not peer.rows:
        return None
    last = peer.rows[-1]
    grow = (size - peer.have) / max(last["ingest_items_per_s"], 1e-9)
    query = n_queries * last["recall_ms"]["p50"] / 1000.0 * size / max(peer.have, 1)
    return grow + query


# --------------------------------------------------------------------------- 3. recall at scale


def bench_scale(
    live: Any, turns, questions: list[str], base_vecs: np.ndarray, sizes: list[int], n_queries: int,
    batch: int, bulk: str, workdir: Path, *, lifecycle_max: int | None, analyze_above: int | None,
    peers: Sequence[Peer] = (), peer_budget_s: dict[str, float] | None = None, slice_n: int = 20000,
) -> list[dict[str, Any]]:
    n_max = max(sizes)
    say(f"\n3. Recall at scale: one store grown to {', '.join(map(str, sizes))} memories (episodic turns) through "
        f"store_many in batches of {batch}; {min(len(turns), n_max)} with real {live.name} vectors, the rest with "
        f"'{bulk}' vectors")
    if lifecycle_max is None:
        say("   decay() and sleep() are not timed (--no-lifecycle)")
    elif any(s > lifecycle_max for s in sizes):
        say(f"   decay() and sleep() are timed only up to {lifecycle_max} memories (--lifecycle-max)")
    if analyze_above is not None and any(s > analyze_above for s in sizes):
        say(f"   SQLite ANALYZE runs once on the store when it holds >= {analyze_above} memories, before it grows "
            "further (--analyze-above): without planner statistics store_many slows down with the store's size")
    if peers:
        say(f"   peers, each in its own process, get the same texts, vectors and queries after zenbrain at each size: "
            f"{', '.join(p.name for p in peers)}")
    items = corpus_items(turns, n_max) if bulk == "corpus" else variations(turns, n_max, seed=0)
    need = (n_queries + min(50, n_queries) + 5) * len(sizes)  # warm-up 3, after reopening 2
    qs = list(questions)
    k = 0
    while len(qs) < need:  # more distinct queries than LoCoMo has: reworded copies
        qs.append(f"{questions[k % len(questions)]} Tell me briefly.{' ' * (k // len(questions))}")
        k += 1
    table: dict[str, np.ndarray] = {}
    emb = TableEmbedder(live, table)
    t_end = max(it[2] for it in items) + 3600.0
    clock = SimulatedClock(t_end)
    live.embed(["load the model before the memory baseline"])
    baseline_rss = current_rss_mb()
    mem = fresh_memory(workdir, "scale", emb, clock)
    db_path = workdir / "scale.db"
    out: list[dict[str, Any]] = []
    have = 0
    q_next = 0
    analyzed: dict[str, Any] | None = None
    for size in sorted(sizes):
        chunk = items[have:size]
        peer_files = None
        live_peers = [p for p in peers if p.skipped is None]
        vec_s = ingest_s = 0.0
        curve: list[tuple[int, float]] = []
        prog = Progress(f"zenbrain {size}", size, have)
        live_at_ingest = emb.live_calls
        with contextlib.ExitStack() as stack:
            if live_peers:  # the same texts and vectors, for the peers' processes
                peer_files = (workdir / f"peer-texts-{size}.jsonl", workdir / f"peer-vectors-{size}.f32")
                tf = stack.enter_context(open(peer_files[0], "w", encoding="utf-8"))
                vf = stack.enter_context(open(peer_files[1], "wb"))
            for s0 in range(0, len(chunk), slice_n):  # vectors made a slice at a time: little memory
                part = chunk[s0 : s0 + slice_n]
                t0 = time.perf_counter()
                vecs = bulk_vectors(bulk, part, base_vecs, seed=size * 1000 + s0 // slice_n)
                vec_s += time.perf_counter() - t0
                if peer_files:
                    tf.writelines(json.dumps(it[0]) + "\n" for it in part)
                    vf.write(np.ascontiguousarray(vecs, dtype=np.float32).tobytes())
                emb.load({it[0]: v for it, v in zip(part, vecs)})
                recs = [{"content": t, "kind": "episode", "layer": "episodic", "event_time": w} for t, _, w, _ in part]
                for i in range(0, len(recs), batch):
                    t0 = time.perf_counter()
                    mem.store_many(recs[i : i + batch], SCOPE)
                    dt = time.perf_counter() - t0
                    ingest_s += dt
                    n_done = have + s0 + i + len(recs[i : i + batch])
                    curve.append((n_done, len(recs[i : i + batch]) / dt))
                    prog.update(n_done, ingest_s)
                    if analyze_above is not None and analyzed is None and analyze_above <= n_done < size:
                        analyzed = run_analyze(mem, n_done)
        emb.load({})
        have = size
        assert emb.live_calls == live_at_ingest, "stored texts must come from the vector table"

        warm = qs[q_next : q_next + 3]
        q_next += 3
        t0 = time.perf_counter()
        for q in warm:  # first use loads/syncs the vector index
            mem.recall(q, SCOPE, k=10)
        first_s = time.perf_counter() - t0
        queries = qs[q_next : q_next + n_queries]
        q_next += n_queries
        live_before = emb.live_calls
        embed_ms = []
        for q in qs[q_next : q_next + min(50, n_queries)]:  # the embedder alone, on other questions
            t0 = time.perf_counter()
            live.embed([q])
            embed_ms.append((time.perf_counter() - t0) * 1000.0)
        q_next += min(50, n_queries)
        lat1 = timed_recalls(mem, queries, f"{size}: pass 1 (queries embedded)")
        embedded = emb.live_calls - live_before
        # An hour later on the simulated clock: the memories pass 1 reached are reviewed
        # again as they were then (a repetition within the hour is massed and skips the
        # spaced review's work), so pass 2 differs from pass 1 by the query's embedding.
        clock.advance(hours=1)
        lat2 = timed_recalls(mem, queries, f"{size}: pass 2 (queries cached)")
        assert emb.live_calls - live_before == embedded, "pass 2 must hit the query cache"

        decay_s = sleep_s = None
        stages: dict[str, Any] = {}
        if lifecycle_max is not None and size <= lifecycle_max:
            t0 = time.perf_counter()
            rep = mem.decay(SCOPE)
            decay_s = time.perf_counter() - t0
            print(f"   ... {size}: decay {decay_s:.2f} s; sleeping", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            rep2 = mem.sleep(SCOPE)
            sleep_s = time.perf_counter() - t0
            stages = {"decay": _summary(rep.as_dict()), "sleep": _summary(rep2.as_dict())}

        # Reopening: close (the search indexes are saved beside the file), open again, and
        # the first recall of a new query (embedded) on the reopened store.
        t0 = time.perf_counter()
        mem.close()
        close_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem = open_memory(db_path, embedder=emb, clock=clock)
        open_s = time.perf_counter() - t0
        reopen_q = qs[q_next]
        q_next += 1
        t0 = time.perf_counter()
        mem.recall(reopen_q, SCOPE, k=10)
        reopen_first_ms = (time.perf_counter() - t0) * 1000.0
        t0 = time.perf_counter()
        mem.recall(qs[q_next], SCOPE, k=10)
        reopen_second_ms = (time.perf_counter() - t0) * 1000.0
        q_next += 1
        reopen = {"close_s": close_s, "open_s": open_s, "first_recall_ms": reopen_first_ms,
                  "second_recall_ms": reopen_second_ms,
                  "index_rebuilds": list(getattr(mem.storage, "_search", None).rebuilds)
                  if getattr(mem.storage, "_search", None) is not None else []}
        say(f"   {size:>7} memories: close {close_s:.2f} s, open {open_s:.2f} s, first recall after reopening "
            f"{reopen_first_ms:.0f} ms (query embedded), the next {reopen_second_ms:.0f} ms; "
            f"index rebuilds: {reopen['index_rebuilds'] or 'none'}")
        after_night = None
        if decay_s is not None:
            # The same queries on the store a night has changed (decay and sleep wrote their
            # records, archived, linked): a store in use is mostly in this state, not fresh.
            timed_recalls(mem, queries, f"{size}: after the night, queries embedded again")
            clock.advance(hours=1)  # as before pass 2
            lat5 = timed_recalls(mem, queries, f"{size}: after the night, queries cached")
            after_night = {"p50": pct(lat5, 50), "p95": pct(lat5, 95), "mean": float(np.mean(lat5))}
            say(f"   {size:>7} memories: after decay and sleep, recall p50/p95 {after_night['p50']:.1f}/"
                f"{after_night['p95']:.1f} ms with the queries cached")

        control = None
        if analyze_above is not None and analyzed is None and analyze_above <= size < n_max:
            # Control: the same cached queries on the same store, just before and just after ANALYZE.
            lat3 = timed_recalls(mem, queries, f"{size}: pass 3 (queries cached, before ANALYZE)")
            analyzed = run_analyze(mem, size)
            lat4 = timed_recalls(mem, queries, f"{size}: pass 4 (queries cached, after ANALYZE)")
            control = {
                "before": {"p50": pct(lat3, 50), "p95": pct(lat3, 95), "mean": float(np.mean(lat3))},
                "after": {"p50": pct(lat4, 50), "p95": pct(lat4, 95), "mean": float(np.mean(lat4))},
            }
            say(f"   ANALYZE at {size} memories: {analyzed['seconds']:.1f} s; recall with the queries cached "
                f"p50/p95 {control['before']['p50']:.1f}/{control['before']['p95']:.1f} ms just before it, "
                f"{control['after']['p50']:.1f}/{control['after']['p95']:.1f} ms after")

        st = mem.stats(SCOPE)
        files = store_files(db_path)
        index_bytes = dir_bytes(str(db_path) + ".idx") if Path(str(db_path) + ".idx").exists() else 0
        files["index"] = index_bytes
        disk = files["db"] + files["wal"] + index_bytes
        row = {
            "size": size,
            "memories": st["memories"],
            "archived": st["archived"],
            "edges": st["edges"],
            "file_mb": disk / 1e6,
            "file_bytes": files,
            "disk_bytes_per_memory": disk / max(st["memories"], 1),
            "peak_rss_mb": peak_rss_mb(),
            "rss_mb": current_rss_mb(),
            "rss_before_store_mb": baseline_rss,
            "bulk_vector_seconds": vec_s,
            "ingest_seconds": ingest_s,
            "ingest_items_per_s": len(chunk) / ingest_s if ingest_s > 0 else None,
            "ingest_batch": batch,
            "ingest_items_per_s_by_batch": curve,
            "first_recalls_seconds": first_s,
            "queries": len(queries),
            "query_embeddings_in_pass1": embedded,
            "recall_ms_query_embedded": {"p50": pct(lat1, 50), "p95": pct(lat1, 95), "mean": float(np.mean(lat1))},
            "recall_ms_query_cached": {"p50": pct(lat2, 50), "p95": pct(lat2, 95), "mean": float(np.mean(lat2))},
            "recall_ms_analyze_control": control,
            "recall_ms_after_night_cached": after_night,
            "query_embedding_ms": {"p50": pct(embed_ms, 50), "p95": pct(embed_ms, 95), "n": len(embed_ms)},
            "planner_statistics": analyzed is not None and analyzed["at_size"] < size,
            "analyze": analyzed,
            "reopen": reopen,
            "decay_seconds": decay_s,
            "sleep_seconds": sleep_s,
            "lifecycle": stages,
            "load_average": load_average(),
        }
        out.append(row)
        shown = thin_curve(curve, 8)
        say(f"   {size:>7} memories: grew by {len(chunk)} in {ingest_s:.1f} s ({row['ingest_items_per_s']:.0f}/s storage only; "
            f"vectors {vec_s:.1f} s); recall p50/p95 {row['recall_ms_query_embedded']['p50']:.1f}/"
            f"{row['recall_ms_query_embedded']['p95']:.1f} ms with query embedding, "
            f"{row['recall_ms_query_cached']['p50']:.1f}/{row['recall_ms_query_cached']['p95']:.1f} ms cached "
            f"(query embedding alone {row['query_embedding_ms']['p50']:.1f}/{row['query_embedding_ms']['p95']:.1f} ms); "
            + (f"decay {decay_s:.2f} s, sleep {sleep_s:.2f} s; " if decay_s is not None else "decay/sleep not timed; ")
            + f"{row['file_mb']:.0f} MB on disk ({row['disk_bytes_per_memory']:.0f} B/memory), "
              f"RSS {row['rss_mb']:.0f} MB (peak so far {row['peak_rss_mb']:.0f} MB); load average {row['load_average']}")
        say("      store_many items/s while growing: " + ", ".join(f"{n}: {r:.0f}" for n, r in shown))

        for peer in live_peers:
            budget = (peer_budget_s or {}).get(peer.name, float("inf"))
            run_peer(peer, size, len(chunk), peer_files, live.dim, warm, queries, row, budget, slice_n)
        if peer_files:
            for f in peer_files:
                f.unlink(missing_ok=True)
    mem.close()
    return out


def run_peer(peer: Peer, size: int, count: int, files, dim: int, warm: list[str], queries: list[str],
             zen: dict[str, Any], budget_s: float, slice_n: int) -> None:
    est = peer_projection(peer, size, len(queries))
    if est is not None and est > budget_s:
        last = peer.rows[-1]
        peer.skipped = (f"skipped at {size} memories and above: at {last['ingest_items_per_s']:.0f} items/s "
                        f"(measured while growing to {peer.have}) the {size - peer.have} more would take about "
                        f"{est / 60:.0f} min with its queries, over the --peer-budget of {budget_s / 60:.0f} min")
        say(f"   {peer.name}: {peer.skipped}")
        return
    try:
        grow = peer.call("grow", str(files[0]), str(files[1]), count, dim, size, slice_n)
        peer.have = size
        lat = peer.call("query", warm, queries, 10)
        st = peer.call("stats")
    except (RuntimeError, OSError, EOFError) as exc:
        peer.skipped = f"failed at {size} memories: {exc}"
        say(f"   {peer.name}: {peer.skipped}")
        return
    rate = grow["items"] / grow["seconds"] if grow["seconds"] > 0 else float("nan")
    row = {
        "size": size,
        "ingest_seconds": grow["seconds"],
        "ingest_items_per_s": rate,
        "ingest_items_per_s_by_batch": grow["curve"],
        "recall_ms": {"p50": pct(lat, 50), "p95": pct(lat, 95), "mean": float(np.mean(lat))},
        "queries": len(lat),
        "peak_rss_mb": st["peak_rss_mb"],
        "rss_mb": st["rss_mb"],
        "disk_bytes": st["disk_bytes"],
        "disk_bytes_per_memory": st["disk_bytes"] / max(st["stored"], 1),
    }
    z_lat = zen["recall_ms_query_embedded"]
    row["ratio_zenbrain_over_peer"] = {
        "ingest_items_per_s": zen["ingest_items_per_s"] / rate if rate else None,
        "recall_p50": z_lat["p50"] / row["recall_ms"]["p50"],
        "recall_p95": z_lat["p95"] / row["recall_ms"]["p95"],
        "rss": zen["rss_mb"] / row["rss_mb"],
        "peak_rss": zen["peak_rss_mb"] / row["peak_rss_mb"],
        "disk_bytes_per_memory": zen["disk_bytes_per_memory"] / max(row["disk_bytes_per_memory"], 1e-9),
    }
    peer.rows.append(row)
    r = row["ratio_zenbrain_over_peer"]
    say(f"   {peer.name:>8} at {size}: grew by {count} in {grow['seconds']:.1f} s ({rate:.0f}/s); search p50/p95 "
        f"{row['recall_ms']['p50']:.1f}/{row['recall_ms']['p95']:.1f} ms with query embedding; "
        f"{st['disk_bytes'] / 1e6:.0f} MB on disk ({row['disk_bytes_per_memory']:.0f} B/memory), RSS "
        f"{st['rss_mb']:.0f} MB (peak {st['peak_rss_mb']:.0f} MB)")
    say(f"   {'':>8} zenbrain/{peer.name}: ingest items/s x{r['ingest_items_per_s']:.2f}, recall p50 x{r['recall_p50']:.2f}, "
        f"p95 x{r['recall_p95']:.2f} (latency: above 1 = zenbrain slower), RSS x{r['rss']:.2f}, "
        f"bytes/memory x{r['disk_bytes_per_memory']:.2f}")


def run_analyze(mem: Any, stored: int) -> dict[str, Any]:
    """SQLite's ANALYZE on the store (planner statistics; a maintenance step, not a zenbrain call)."""
    t0 = time.perf_counter()
    mem.storage.raw_connection().execute("ANALYZE")
    out = {"at_size": stored, "seconds": time.perf_counter() - t0}
    print(f"   ... ANALYZE at {stored} memories: {out['seconds']:.1f} s", file=sys.stderr, flush=True)
    return out


def timed_recalls(mem: Any, queries: Sequence[str], label: str) -> list[float]:
    """Milliseconds of ``recall(q, k=10)`` for each query, with a progress line now and then."""
    out: list[float] = []
    t_all = time.perf_counter()
    for n, q in enumerate(queries, start=1):
        t0 = time.perf_counter()
        mem.recall(q, SCOPE, k=10)
        out.append((time.perf_counter() - t0) * 1000.0)
        if n % 50 == 0 or n == len(queries):
            print(f"   ... {label}: {n}/{len(queries)} in {time.perf_counter() - t_all:.0f} s", file=sys.stderr, flush=True)
    return out


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    """Per stage, the numeric entries only (counts), to keep the JSON small."""
    out = {}
    for stage, detail in report.get("stages", {}).items():
        if isinstance(detail, dict):
            out[stage] = {k: v for k, v in detail.items() if isinstance(v, (int, float, bool))}
    return out


# --------------------------------------------------------------------------- main


def source_version() -> str:
    """Where zenbrain was imported from, and its git commit when it is a checkout."""
    import subprocess

    import zenbrain

    src = Path(zenbrain.__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    if not commit:
        return str(src)
    return f"{src} (commit {commit}{', with uncommitted changes' if dirty else ''})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="store sizes for recall latency (default 10000,100000)")
    ap.add_argument("--queries", type=int, default=200, help="distinct queries per size (default 200)")
    ap.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    ap.add_argument("--embedder", default=os.environ.get("ZENBRAIN_EMBEDDER", "minilm"), help="embedder spec (default minilm)")
    ap.add_argument("--data", default=None, help="LoCoMo file or folder (default $ZENBRAIN_DATA or ../shared/data)")
    ap.add_argument("--ingest-n", type=int, default=1000, help="texts for the ingest comparison (default 1000)")
    ap.add_argument("--repeats", type=int, default=3, help="repetitions of the ingest comparison (default 3)")
    ap.add_argument("--batch", type=int, default=250, help="records per store_many call (default 250)")
    ap.add_argument("--growth", type=int, default=5000, help="routed-ingest scaling up to N items; 0 skips (default 5000)")
    ap.add_argument("--bulk", choices=("hashing", "random", "perturbed"), default="hashing",
                    help="vectors of the bulk variations (default hashing)")
    ap.add_argument("--corpus", nargs="?", const="", default=None, metavar="DIR",
                    help="recall at scale over the real-text corpus of scripts/real_corpus.py (default dir: its default)"
                    " instead of varied LoCoMo turns")
    ap.add_argument("--no-lifecycle", action="store_true", help="skip decay() and sleep()")
    ap.add_argument("--lifecycle-max", type=int, default=100000, metavar="N",
                    help="time decay() and sleep() only at sizes up to N (default 100000)")
    ap.add_argument("--scale-batch", type=int, default=1000, help="records per store_many call at scale (default 1000)")
    ap.add_argument("--analyze-above", default="100000", metavar="N|none",
                    help="run SQLite ANALYZE once when the store holds N memories and grows further (default 100000)")
    ap.add_argument("--peers", default="chroma,mem0", help="peers measured beside zenbrain: chroma,mem0 or none")
    ap.add_argument("--peer-budget", default="chroma=60,mem0=10", metavar="MIN|NAME=MIN,...",
                    help="skip a peer at a size it would need more than MIN minutes for (ingest and queries), "
                         "projected from its rate and latency at the size before (default chroma=60,mem0=10)")
    ap.add_argument("--mem0-store", choices=("qdrant", "faiss"), default="qdrant", help="Mem0's vector store (default qdrant)")
    ap.add_argument("--workdir", default=None, help="where the stores go (default: a temp dir, removed)")
    ap.add_argument("--parts", default="ingest,growth,scale", help="which parts to run (default ingest,growth,scale)")
    ap.add_argument("--summary", metavar="JSON", help="print the summary of a saved --json file and exit")
    ap.add_argument("--backends", default="sqlite,postgres,chroma",
                    help="--parts backends: which stores, in this order (default sqlite,postgres,chroma)")
    ap.add_argument("--layout", default="many,one", help="--parts backends: many (users of --per-user), one, or both")
    ap.add_argument("--per-user", type=int, default=1000, help="--parts backends: memories per user in 'many' (default 1000)")
    ap.add_argument("--forgets", type=int, default=5, help="--parts backends: memories forgotten after recall (default 5)")
    ap.add_argument("--pg-url", default=None, help="--parts backends: a PostgreSQL server (default: a private pgserver)")
    ap.add_argument("--progress", type=int, default=0, help="--parts backends: a progress line every N batches")
    args = ap.parse_args(argv)
    if args.summary:
        with open(args.summary, encoding="utf-8") as fh:
            print_summary(json.load(fh))
        return 0
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if "backends" in {p.strip() for p in args.parts.split(",")}:
        return run_backends(args, sizes)
    peer_names = [] if args.peers.strip().lower() in ("", "none") else [p.strip() for p in args.peers.split(",") if p.strip()]
    for name in peer_names:
        if name not in PEER_NAMES:
            ap.error(f"unknown peer {name!r}; peers are {', '.join(PEER_NAMES)} or none")
    analyze_above = None if args.analyze_above.strip().lower() in ("none", "never", "") else int(args.analyze_above)
    try:
        budgets = parse_budgets(args.peer_budget, PEER_NAMES)
    except ValueError as exc:
        ap.error(str(exc))

    t_start = time.perf_counter()
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="zenbrain-speed-"))
    workdir.mkdir(parents=True, exist_ok=True)
    turns, questions = locomo_material(args.data)
    live = make_embedder(args.embedder)
    env = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "embedder": live.name,
        "zenbrain": source_version(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_average_start": load_average(),
    }
    say(f"zenbrain speed benchmark: {env['cpus']} CPUs, Python {env['python']}, numpy {env['numpy']}, "
        f"load average {env['load_average_start']}")
    say(f"embedder: {live.name} (spec {args.embedder}); LoCoMo: {len(turns)} distinct turns, {len(questions)} questions; "
        f"zenbrain from {env['zenbrain']}; OMP_NUM_THREADS={env['omp_num_threads']}")
    results: dict[str, Any] = {"environment": env, "args": vars(args)}
    peers: list[Peer] = []
    try:
        parts = {p.strip() for p in args.parts.split(",") if p.strip()}
        if "ingest" in parts:
            texts = [t for t, _ in turns][: args.ingest_n]
            results["ingest"] = bench_ingest(live, texts, args.batch, args.repeats, workdir)

        # Real vectors for every distinct turn, cached on disk between runs.
        n_real = min(len(turns), max(sizes + [args.growth]))
        cached = CachedEmbedder(live, cache_dir() / CACHE_FILE)
        t0 = time.perf_counter()
        base_vecs = cached.embed([t for t, _ in turns[:n_real]])
        cached.close()
        say(f"\nreal vectors for {n_real} distinct turns: {cached.stats.misses} embedded, {cached.stats.hits} from "
            f"the cache {cache_dir() / CACHE_FILE} ({time.perf_counter() - t0:.1f} s)")
        turns = turns[:n_real]

        scale_turns, scale_vecs, bulk = turns, base_vecs, args.bulk
        if args.corpus is not None:
            scale_turns, scale_vecs = load_real_corpus(args.corpus, max(sizes), live.name)
            bulk = "corpus"
            say(f"corpus: {len(scale_turns)} real texts with {live.name} vectors from scripts/real_corpus.py")
        if args.growth > 0 and "growth" in parts:
            results["growth"] = bench_growth(live, turns, base_vecs, args.growth, args.batch * 4, args.bulk, workdir)
        if "scale" not in parts:
            return _finish(results, args, t_start)
        peer_failed: dict[str, str] = {}
        if peer_names:
            say(f"\nstarting peers {', '.join(peer_names)} (each in its own process)")
            peers, peer_failed = start_peers(
                peer_names, args.embedder, workdir,
                {"mem0_store": args.mem0_store, "chroma_batch": args.scale_batch, "peer_step": args.scale_batch},
            )
        results["scale"] = bench_scale(
            live, scale_turns, questions, scale_vecs, sizes, args.queries, args.scale_batch, bulk, workdir,
            lifecycle_max=None if args.no_lifecycle else args.lifecycle_max, analyze_above=analyze_above,
            peers=peers, peer_budget_s=budgets,
        )
        results["bulk"] = {
            "vectors": bulk,
            "real_vectors": max(sizes) if bulk == "corpus" else n_real,
            "note": f"every memory is real text with its real {live.name} vector (scripts/real_corpus.py)"
            if bulk == "corpus" else
            f"the first {n_real} memories carry real {live.name} vectors; the others carry '{bulk}' vectors",
        }
        results["peers"] = {
            name: {"rows": [], "skipped": why, "library_version": None} for name, why in peer_failed.items()
        }
        for p in peers:
            results["peers"][p.name] = {"rows": p.rows, "skipped": p.skipped, "library_version": p.info.get("library_version")}
    finally:
        for p in peers:
            p.close()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return _finish(results, args, t_start)


def run_backends(args: argparse.Namespace, sizes: list[int]) -> int:
    """Part 5: SQLite, PostgreSQL and ChromaDB side by side (``scripts/bench_backends.py``);
    the JSON file is rewritten after each result, so a long run keeps what it measured."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_backends

    def split(text: str) -> list[str]:
        return [p.strip() for p in text.split(",") if p.strip()]
    cfg = bench_backends.Settings(
        sizes=sizes, layouts=split(args.layout), backends=split(args.backends), per_user=args.per_user,
        queries=args.queries, forgets=args.forgets, embedder=args.embedder, data=args.data, pg_url=args.pg_url,
        corpus=Path(args.corpus) if args.corpus else None, progress=args.progress, workdir=Path(args.workdir) if args.workdir else None)
    env = {"cpus": os.cpu_count(), "zenbrain": source_version(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
           "load_average_start": load_average(), "command": " ".join(sys.argv)}
    say(f"zenbrain backends: {env['cpus']} CPUs, load average {env['load_average_start']}; zenbrain from "
        f"{env['zenbrain']}; OMP_NUM_THREADS={env['omp_num_threads']}")

    def save(results: list[dict[str, Any]]) -> None:
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps({"environment": env, "backends": results}, indent=1))
    results = bench_backends.run(cfg, on_result=save)
    env["load_average_end"] = load_average()
    save(results)
    say(f"load average at end: {env['load_average_end']}")
    return 0


def _finish(results: dict[str, Any], args: argparse.Namespace, t_start: float) -> int:
    env = results["environment"]
    env["load_average_end"] = load_average()
    env["seconds"] = time.perf_counter() - t_start
    print_summary(results)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1, default=float)
        say(f"\nwrote {args.json}")
    return 0


def print_summary(results: dict[str, Any]) -> None:
    env = results["environment"]
    say("\n" + "=" * 100)
    say(f"Summary ({env['cpus']} CPUs, load average {env['load_average_start']} -> {env['load_average_end']}, "
        f"total {env['seconds']:.0f} s)")
    ing = results.get("ingest")
    if ing:
        say(f"ingest, {ing['items']} LoCoMo turns, batches of {ing['batch']}, median of {ing['repeats']}:")
        say(f"  raw {env['embedder']} embedding     {ing['raw_embed_items_per_s']:8.1f} items/s")
        say(f"  store_many (embedding included)  {ing['store_many_items_per_s']:8.1f} items/s  "
            f"(ingest/raw = {ing['ratio_ingest_over_raw']:.2f})")
        say(f"  store_many, pre-warmed cache     {ing['store_many_prewarmed_items_per_s']:8.1f} items/s  "
            f"(storage alone, {ing['storage_ms_per_item']:.2f} ms/item)")
    gr = results.get("growth")
    if gr:
        first, last = gr["items_per_s_by_size"][0], gr["items_per_s_by_size"][-1]
        say(f"routed ingest, storage only, while growing to {gr['items']}: {first[1]:.0f}/s at {first[0]} -> "
            f"{last[1]:.0f}/s at {last[0]} ({gr['seconds']:.0f} s in all)")
    sc = results.get("scale") or []
    if sc:
        say(f"recall (k=10, touch=True), {results['bulk']['note']}:")
        say(f"  {'size':>7}  {'ingest/s':>8}  {'p50 emb':>8}  {'p95 emb':>8}  {'p50 cached':>10}  {'p95 cached':>10}  "
            f"{'embed p50':>9}  {'decay_s':>7}  {'sleep_s':>7}  {'file_MB':>7}  {'B/memory':>8}  {'RSS_MB':>6}  {'peakRSS_MB':>10}")
        for r in sc:
            a, b = r["recall_ms_query_embedded"], r["recall_ms_query_cached"]
            d = f"{r['decay_seconds']:.2f}" if r["decay_seconds"] is not None else "-"
            s = f"{r['sleep_seconds']:.2f}" if r["sleep_seconds"] is not None else "-"
            say(f"  {r['size']:>7}  {r['ingest_items_per_s']:>8.0f}  {a['p50']:>8.1f}  {a['p95']:>8.1f}  {b['p50']:>10.1f}  "
                f"{b['p95']:>10.1f}  {r['query_embedding_ms']['p50']:>9.1f}  {d:>7}  {s:>7}  {r['file_mb']:>7.0f}  "
                f"{r['disk_bytes_per_memory']:>8.0f}  {r['rss_mb']:>6.0f}  {r['peak_rss_mb']:>10.0f}")
        say("  (latencies in ms over the distinct queries; 'emb' includes embedding the query, 'cached' repeats them\n"
            "   an hour later (simulated clock), which also finds SQLite pages warm; 'embed p50' is the embedder\n"
            "   alone on one query; ingest/s is\n"
            "   store_many with the vectors precomputed (storage only) while the store grew to that size; file_MB and\n"
            "   B/memory count the SQLite file and its WAL; RSS is this process's resident memory after the size,\n"
            "   peakRSS its ru_maxrss so far (sleep() included); both also hold the generated texts and the\n"
            f"   embedder: {sc[0]['rss_before_store_mb']:.0f} MB before the store was opened)")
        nights = [r for r in sc if r.get("recall_ms_after_night_cached")]
        if nights:
            say("  after decay() and sleep(), reopened, queries cached, p50/p95 ms: " + ", ".join(
                f"{r['size']}: {r['recall_ms_after_night_cached']['p50']:.1f}/{r['recall_ms_after_night_cached']['p95']:.1f}"
                for r in nights))
        lc = [r for r in sc if r["decay_seconds"] is None]
        if lc and any(r["decay_seconds"] is not None for r in sc):
            say(f"  decay() and sleep() not timed at {', '.join(str(r['size']) for r in lc)} (--lifecycle-max)")
        stats = [r for r in sc if r.get("planner_statistics")]
        if stats:
            say(f"  SQLite ANALYZE was run on the store when it held {stats[0]['analyze']['at_size']} memories; sizes "
                f"measured with planner statistics: {', '.join(str(r['size']) for r in stats)}")
        for r in sc:
            ctl = r.get("recall_ms_analyze_control")
            if ctl:
                b, c = ctl["before"], ctl["after"]
                say(f"  control at {r['size']}: recall with cached queries p50/p95 {b['p50']:.1f}/{b['p95']:.1f} ms "
                    f"just before ANALYZE, {c['p50']:.1f}/{c['p95']:.1f} ms after")
            elif r.get("recall_ms_query_cached_after_analyze"):  # written by an earlier version of this script
                b, c = r["recall_ms_query_cached"], r["recall_ms_query_cached_after_analyze"]
                say(f"  control at {r['size']}: recall with cached queries p50/p95 {b['p50']:.1f}/{b['p95']:.1f} ms "
                    f"before ANALYZE, {c['p50']:.1f}/{c['p95']:.1f} ms after")
    for name, peer in (results.get("peers") or {}).items():
        say(f"{name} ({peer.get('library_version') or '?'}), own process, same texts, vectors and queries "
            "(search k=10, query embedded by the same embedder):")
        if peer["rows"]:
            say(f"  {'size':>7}  {'ingest/s':>8}  {'p50':>8}  {'p95':>8}  {'disk_MB':>7}  {'B/memory':>8}  {'RSS_MB':>6}  "
                f"{'peakRSS_MB':>10}  {'zen/peer ingest/s':>17}  {'p50':>6}  {'p95':>6}  {'RSS':>5}  {'B/memory':>8}")
        zen = {r["size"]: r for r in sc}
        for r in peer["rows"]:
            q = r["ratio_zenbrain_over_peer"]
            z = zen.get(r["size"], {})
            rss = z.get("rss_mb", float("nan")) / r["rss_mb"] if r.get("rss_mb") else float("nan")
            say(f"  {r['size']:>7}  {r['ingest_items_per_s']:>8.0f}  {r['recall_ms']['p50']:>8.1f}  {r['recall_ms']['p95']:>8.1f}  "
                f"{r['disk_bytes'] / 1e6:>7.0f}  {r['disk_bytes_per_memory']:>8.0f}  {r.get('rss_mb', float('nan')):>6.0f}  "
                f"{r['peak_rss_mb']:>10.0f}  {q['ingest_items_per_s']:>17.2f}  {q['recall_p50']:>6.2f}  {q['recall_p95']:>6.2f}  "
                f"{rss:>5.2f}  {q['disk_bytes_per_memory']:>8.2f}")
        if peer.get("skipped"):
            say(f"  {name} {peer['skipped']}")
    if results.get("peers"):
        say("  (the last five columns are zenbrain's figure divided by the peer's: ingest/s above 1 means zenbrain\n"
            "   ingests faster; p50/p95 (search latency with the query embedded) above 1 means zenbrain answers slower;\n"
            "   RSS and B/memory above 1 mean zenbrain holds more. zenbrain's recall runs its whole pipeline (dense and\n"
            "   BM25 candidates, fusion, mechanisms, side effects); the peers return their nearest neighbours)")

if __name__ == "__main__":
    raise SystemExit(main())
