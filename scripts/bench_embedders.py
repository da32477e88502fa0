"""Throughput, agreement and cache speed-up of zenbrain's embedders on LoCoMo turns.

    .venv/bin/python scripts/bench_embedders.py [--n 1000] [--recall] [--cold] [--json out.json]

For each available embedder: sentences/s embedding N real conversation turns in
one call (median of 3 rounds that alternate between embedders, after a
warm-up), one-query latency (median of 50), cosine
agreement with sentence-transformers (the reference implementation of
all-MiniLM-L6-v2). ``--recall`` adds turn-level evidence Recall@5 on the LoCoMo
questions (dense retrieval only, within each conversation). ``--cold`` measures,
in fresh subprocesses, the time from interpreter start to the first vector.
Finally the SQLite cache: the same texts embedded again through a
CachedEmbedder, from disk (a new instance on the same file) and from memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from zenbrain.errors import ProviderError
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import make_embedder

DEFAULT_DATA = "/work/shared/data/locomo_dev.json"
REFERENCE = "minilm"
CANDIDATES = ["hashing:384", "minilm", "minilm-onnx:fp32", "minilm-onnx"]


def load_conversations(path: str) -> list[dict]:
    with open(path) as fh:
        data = json.load(fh)
    convs = []
    for sample in data:
        conv = sample["conversation"]
        turns = [
            t
            for key, value in conv.items()
            if key.startswith("session_") and isinstance(value, list)
            for t in value
            if t.get("text")
        ]
        convs.append({"turns": turns, "qa": [q for q in sample.get("qa", []) if q.get("evidence")]})
    return convs


def one_query_ms(emb, texts: list[str], n: int = 50) -> float:
    times = []
    for t in texts[:n]:
        t0 = time.perf_counter()
        emb.embed([t])
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def evidence_recall(emb, convs: list[dict], k: int = 5) -> np.ndarray:
    """Per-question share of evidence turns in the top k (dense cosine within the conversation)."""
    scores = []
    for conv in convs:
        ids = [t["dia_id"] for t in conv["turns"]]
        T = emb.embed([t["text"] for t in conv["turns"]])
        Q = emb.embed([q["question"] for q in conv["qa"]])
        top = np.argsort(-(Q @ T.T), axis=1)[:, :k]
        for q, row in zip(conv["qa"], top):
            ev = set(q["evidence"])
            scores.append(len(ev & {ids[i] for i in row}) / len(ev))
    return np.asarray(scores)


def build(spec: str, threads: int | None):
    """``make_embedder(spec)``, with the thread count applied to the local MiniLM embedders."""
    emb = make_embedder(spec)
    if threads is not None and hasattr(emb, "num_threads"):
        emb.num_threads = threads
    return emb


def cold_start(spec: str) -> float:
    code = (
        "import time; t=time.perf_counter();"
        "from zenbrain.providers.factory import make_embedder;"
        f"make_embedder({spec!r}).embed(['hello there']);"
        "print(time.perf_counter()-t)"
    )
    times = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--n", type=int, default=1000, help="number of turns to embed")
    ap.add_argument("--embedders", nargs="*", default=CANDIDATES)
    ap.add_argument("--recall", action="store_true", help="also compute LoCoMo evidence Recall@5")
    ap.add_argument("--cold", action="store_true", help="also time interpreter start to first vector")
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads for torch and onnxruntime")
    ap.add_argument("--cache-inner", default="minilm-onnx", help="embedder behind the cache benchmark")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()

    convs = load_conversations(args.data)
    texts = [t["text"] for c in convs for t in c["turns"]][: args.n]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(texts)} LoCoMo turns, mean {np.mean([len(t) for t in texts]):.0f} chars; "
        f"{os.cpu_count()} CPUs, load average {load:.1f}, threads {args.threads or 'default'}"
    )

    results: dict[str, dict] = {}
    vectors: dict[str, np.ndarray] = {}
    embedders = {}
    for spec in args.embedders:
        try:
            emb = build(spec, args.threads)
            t0 = time.perf_counter()
            emb.embed(texts[:64])  # load (export on first use for ONNX) and warm up
            load_s = time.perf_counter() - t0
        except ProviderError as exc:
            print(f"{spec:18s} unavailable: {exc}")
            continue
        embedders[spec] = emb
        results[spec] = {"name": emb.name, "first_call_s": round(load_s, 2)}
    # Rounds alternate between embedders, so load from other processes hits all of them alike.
    times: dict[str, list[float]] = {spec: [] for spec in embedders}
    for _ in range(3):
        for spec, emb in embedders.items():
            t0 = time.perf_counter()
            vectors[spec] = emb.embed(texts)
            times[spec].append(time.perf_counter() - t0)
    for spec, emb in embedders.items():
        results[spec]["sentences_per_s"] = round(len(texts) / statistics.median(times[spec]), 1)
        results[spec]["one_query_ms"] = round(one_query_ms(emb, texts), 2)

    if REFERENCE in vectors:
        ref = vectors[REFERENCE]
        for spec, v in vectors.items():
            cos = (v * ref).sum(axis=1)
            results[spec].update(
                cos_mean=round(float(cos.mean()), 4),
                cos_p1=round(float(np.percentile(cos, 1)), 4),
                cos_min=round(float(cos.min()), 4),
            )
    if args.recall:
        per_q = {spec: evidence_recall(emb, convs) for spec, emb in embedders.items()}
        for spec, sc in per_q.items():
            results[spec]["locomo_evidence_R@5"] = round(float(sc.mean()), 4)
            if REFERENCE in per_q:  # paired difference to sentence-transformers and its standard error
                d = sc - per_q[REFERENCE]
                results[spec]["R@5_diff_vs_st"] = f"{d.mean():+.4f}±{d.std(ddof=1) / np.sqrt(len(d)):.4f}"
    if args.cold:
        for spec in embedders:
            results[spec]["cold_start_s"] = round(cold_start(spec), 2)

    keys = ["sentences_per_s", "one_query_ms", "cos_mean", "cos_p1", "cos_min", "locomo_evidence_R@5", "R@5_diff_vs_st", "cold_start_s"]
    shown = [k for k in keys if any(k in r for r in results.values())]
    print(f"\n{'embedder':18s} " + " ".join(f"{k:>19s}" for k in shown))
    for spec, r in results.items():
        print(f"{spec:18s} " + " ".join(f"{r.get(k, '-')!s:>19s}" for k in shown))

    # Cache speed-up -----------------------------------------------------------------
    inner_spec = args.cache_inner
    inner = embedders.get(inner_spec)
    if inner is not None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cache.db"
            cached = CachedEmbedder(inner, path)
            t0 = time.perf_counter()
            cached.embed(texts)
            cold = time.perf_counter() - t0
            cached.close()
            disk_times, mem_times = [], []
            for _ in range(3):
                fresh = CachedEmbedder(inner, path)
                t0 = time.perf_counter()
                fresh.embed(texts)
                disk_times.append(time.perf_counter() - t0)
                assert fresh.stats.inner_calls == 0
                t0 = time.perf_counter()
                fresh.embed(texts)
                mem_times.append(time.perf_counter() - t0)
                fresh.close()
            disk, mem = statistics.median(disk_times), statistics.median(mem_times)
        results["cache"] = {
            "inner": inner_spec,
            "miss_sentences_per_s": round(len(texts) / cold, 1),
            "disk_hit_sentences_per_s": round(len(texts) / disk, 1),
            "memory_hit_sentences_per_s": round(len(texts) / mem, 1),
            "disk_speedup": round(cold / disk, 1),
            "memory_speedup": round(cold / mem, 1),
        }
        c = results["cache"]
        print(
            f"\ncache over {inner_spec}: misses {c['miss_sentences_per_s']}/s, "
            f"disk hits {c['disk_hit_sentences_per_s']}/s ({c['disk_speedup']}x), "
            f"memory hits {c['memory_hit_sentences_per_s']}/s ({c['memory_speedup']}x)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
