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
3. Recall at scale (``--sizes``). One store grows through the sizes. Its memories are
   LoCoMo turns cycled with variations (other speaker names, added words, later times),
   stored as episodic turns, the way the LoCoMo benchmark stores them. Real embedder
   vectors are used for the distinct LoCoMo turns (a few thousand, cached on disk between
   runs); the bulk of the variations gets vectors from ``--bulk`` (hashing: the
   HashingEmbedder of the varied text; random: random unit vectors; perturbed: the real
   vector of the base turn plus noise). Queries are distinct LoCoMo questions embedded by
   the real embedder at query time: pass 1 includes that query embedding, pass 2 repeats
   the same queries, served from the coordinator's query LRU. ``recall`` runs as in use
   (k=10, touch=True). Then ``decay()`` and ``sleep()`` are timed once per size (they may
   change the store; the next size grows the changed store, like a store that sleeps).

    .venv/bin/python scripts/bench_speed.py                       # sizes 10000,100000
    .venv/bin/python scripts/bench_speed.py --sizes 2000 --queries 50 --ingest-n 300 --json out.json

Data: LoCoMo from ``--data`` or ``$ZENBRAIN_DATA`` (default ../shared/data).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
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
from zenbrain.cli import CACHE_FILE, cache_dir
from zenbrain.clock import SimulatedClock
from zenbrain.model import Scope
from zenbrain.providers.base import normalize_rows
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import make_embedder
from zenbrain.providers.hashing import HashingEmbedder

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
        self.live = live
        self.table = table
        self.name = live.name
        self.dim = live.dim
        self.live_calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        miss = [i for i, t in enumerate(texts) if t not in self.table]
        for i, t in enumerate(texts):
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

        cached = CachedEmbedder(embedder, None, memory_items=len(texts) + 16)
        cached.embed(texts)  # pre-warm: the timed run below embeds nothing
        mem = fresh_memory(workdir, f"warm-{r}", cached)
        warm.append(len(texts) / store_in_batches(mem, records, batch))
        assert cached.stats.misses == len(set(texts)), "the warm run must not embed"
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
    """Real vectors for unvaried turns; ``mode`` vectors for the variations."""
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


# --------------------------------------------------------------------------- 3. recall at scale


def bench_scale(
    live: Any, turns, questions: list[str], base_vecs: np.ndarray, sizes: list[int], n_queries: int,
    batch: int, bulk: str, workdir: Path, do_lifecycle: bool,
) -> list[dict[str, Any]]:
    n_max = max(sizes)
    say(f"\n3. Recall at scale: one store grown to {', '.join(map(str, sizes))} memories (episodic turns); "
        f"{min(len(turns), n_max)} with real {live.name} vectors, the rest with '{bulk}' vectors")
    items = variations(turns, n_max, seed=0)
    need = (n_queries + min(50, n_queries) + 3) * len(sizes)
    qs = list(questions)
    k = 0
    while len(qs) < need:  # more distinct queries than LoCoMo has: reworded copies
        qs.append(f"{questions[k % len(questions)]} Tell me briefly.{' ' * (k // len(questions))}")
        k += 1
    table: dict[str, np.ndarray] = {}
    emb = TableEmbedder(live, table)
    t_end = max(it[2] for it in items) + 3600.0
    clock = SimulatedClock(t_end)
    mem = fresh_memory(workdir, "scale", emb, clock)
    out: list[dict[str, Any]] = []
    have = 0
    q_next = 0
    for size in sorted(sizes):
        chunk = items[have:size]
        t0 = time.perf_counter()
        vecs = bulk_vectors(bulk, chunk, base_vecs, seed=size)
        vec_s = time.perf_counter() - t0
        table.clear()
        table.update({it[0]: v for it, v in zip(chunk, vecs)})
        recs = [{"content": t, "kind": "episode", "layer": "episodic", "event_time": w} for t, _, w, _ in chunk]
        t0 = time.perf_counter()
        every = max(batch, (len(recs) // 10) // batch * batch)
        for i in range(0, len(recs), batch):
            mem.store_many(recs[i : i + batch], SCOPE)
            stored = i + len(recs[i : i + batch])
            if stored % every == 0 or stored == len(recs):
                print(f"   ... {have + stored}/{size} stored, {stored / (time.perf_counter() - t0):.0f}/s",
                      file=sys.stderr, flush=True)
        ingest_s = time.perf_counter() - t0
        table.clear()
        have = size

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
        lat2 = timed_recalls(mem, queries, f"{size}: pass 2 (queries cached)")
        assert emb.live_calls - live_before == embedded, "pass 2 must hit the query cache"

        decay_s = sleep_s = None
        stages: dict[str, Any] = {}
        if do_lifecycle:
            t0 = time.perf_counter()
            rep = mem.decay(SCOPE)
            decay_s = time.perf_counter() - t0
            print(f"   ... {size}: decay {decay_s:.2f} s; sleeping", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            rep2 = mem.sleep(SCOPE)
            sleep_s = time.perf_counter() - t0
            stages = {"decay": _summary(rep.as_dict()), "sleep": _summary(rep2.as_dict())}
        st = mem.stats(SCOPE)
        row = {
            "size": size,
            "memories": st["memories"],
            "archived": st["archived"],
            "edges": st["edges"],
            "file_mb": st["file_bytes"] / 1e6,
            "bulk_vector_seconds": vec_s,
            "ingest_seconds": ingest_s,
            "ingest_items_per_s": len(chunk) / ingest_s if ingest_s > 0 else None,
            "first_recalls_seconds": first_s,
            "queries": len(queries),
            "query_embeddings_in_pass1": embedded,
            "recall_ms_query_embedded": {"p50": pct(lat1, 50), "p95": pct(lat1, 95), "mean": float(np.mean(lat1))},
            "recall_ms_query_cached": {"p50": pct(lat2, 50), "p95": pct(lat2, 95), "mean": float(np.mean(lat2))},
            "query_embedding_ms": {"p50": pct(embed_ms, 50), "p95": pct(embed_ms, 95), "n": len(embed_ms)},
            "decay_seconds": decay_s,
            "sleep_seconds": sleep_s,
            "lifecycle": stages,
        }
        out.append(row)
        say(f"   {size:>7} memories: grew by {len(chunk)} in {ingest_s:.1f} s ({row['ingest_items_per_s']:.0f}/s storage only; "
            f"vectors {vec_s:.1f} s); recall p50/p95 {row['recall_ms_query_embedded']['p50']:.1f}/"
            f"{row['recall_ms_query_embedded']['p95']:.1f} ms with query embedding, "
            f"{row['recall_ms_query_cached']['p50']:.1f}/{row['recall_ms_query_cached']['p95']:.1f} ms cached "
            f"(query embedding alone {row['query_embedding_ms']['p50']:.1f}/{row['query_embedding_ms']['p95']:.1f} ms); "
            + (f"decay {decay_s:.2f} s, sleep {sleep_s:.2f} s; " if do_lifecycle else "")
            + f"{row['file_mb']:.0f} MB")
    mem.close()
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
    ap.add_argument("--no-lifecycle", action="store_true", help="skip decay() and sleep()")
    ap.add_argument("--workdir", default=None, help="where the stores go (default: a temp dir, removed)")
    ap.add_argument("--parts", default="ingest,growth,scale", help="which parts to run (default ingest,growth,scale)")
    args = ap.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})

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
        "load_average_start": load_average(),
    }
    say(f"zenbrain speed benchmark: {env['cpus']} CPUs, Python {env['python']}, numpy {env['numpy']}, "
        f"load average {env['load_average_start']}")
    say(f"embedder: {live.name} (spec {args.embedder}); LoCoMo: {len(turns)} distinct turns, {len(questions)} questions")
    results: dict[str, Any] = {"environment": env, "args": vars(args)}
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

        if args.growth > 0 and "growth" in parts:
            results["growth"] = bench_growth(live, turns, base_vecs, args.growth, args.batch * 4, args.bulk, workdir)
        if "scale" not in parts:
            return _finish(results, args, t_start)
        results["scale"] = bench_scale(
            live, turns, questions, base_vecs, sizes, args.queries, 1000, args.bulk, workdir, not args.no_lifecycle
        )
        results["bulk"] = {
            "vectors": args.bulk,
            "real_vectors": n_real,
            "note": f"the first {n_real} memories carry real {live.name} vectors; the others carry '{args.bulk}' vectors",
        }
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return _finish(results, args, t_start)


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
            f"{'embed p50':>9}  {'decay_s':>7}  {'sleep_s':>7}  {'file_MB':>7}")
        for r in sc:
            a, b = r["recall_ms_query_embedded"], r["recall_ms_query_cached"]
            d = f"{r['decay_seconds']:.2f}" if r["decay_seconds"] is not None else "-"
            s = f"{r['sleep_seconds']:.2f}" if r["sleep_seconds"] is not None else "-"
            say(f"  {r['size']:>7}  {r['ingest_items_per_s']:>8.0f}  {a['p50']:>8.1f}  {a['p95']:>8.1f}  {b['p50']:>10.1f}  "
                f"{b['p95']:>10.1f}  {r['query_embedding_ms']['p50']:>9.1f}  {d:>7}  {s:>7}  {r['file_mb']:>7.0f}")
        say("  (latencies in ms over the distinct queries; 'emb' includes embedding the query, 'cached' repeats them,\n"
            "   which also finds SQLite pages warm; 'embed p50' is the embedder alone on one query)")


if __name__ == "__main__":
    raise SystemExit(main())
