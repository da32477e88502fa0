"""The names of the systems the benchmark commands run (kept apart from the systems
themselves, so that building the command-line parser imports nothing heavy)."""

from __future__ import annotations

BENCH_SYSTEMS = ("zenbrain", "bm25", "dense", "hybrid", "no-memory")  # zenbrain and the baselines
PEER_SYSTEMS = ("mem0", "mem0-faiss", "chroma")  # other memory libraries (the 'peers' extra)
DEMO_SYSTEMS = ("zenbrain", "bm25", "dense")
EMBEDDING_SYSTEMS = ("zenbrain", "dense", "hybrid", "chroma")  # those that embed with --embedder
