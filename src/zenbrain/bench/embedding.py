"""The benchmarks' embedder: cached on disk, with a progress bar, warmed up in one batch.

Single-text query embedding costs tens of milliseconds with MiniLM on a CPU; batched it
costs a few. So every turn and question is embedded once before a run (``prewarm``,
``prewarm_items``), and the run itself reads the vectors from the cache.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from ..cli_support import CACHE_FILE, cache_dir, embedder_spec, status

__all__ = ["ProgressEmbedder", "bench_embedder", "prewarm", "prewarm_items"]


class ProgressEmbedder:
    """Wraps an embedder and shows a progress bar for large batches (small ones stay quiet)."""

    def __init__(self, inner: Any, *, enabled: bool = True, chunk: int = 64, min_batch: int = 32) -> None:
        self.inner = inner
        self.enabled = enabled
        self.chunk = chunk
        self.min_batch = min_batch

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def __getattr__(self, attr: str) -> Any:  # e.g. ``_dim`` of HTTP embedders
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np
        from tqdm.auto import tqdm

        texts = list(texts)
        if not self.enabled or len(texts) < self.min_batch:
            return self.inner.embed(texts)
        parts = []
        with tqdm(total=len(texts), desc=f"embedding ({self.inner.name})", unit="text", leave=False) as bar:
            for i in range(0, len(texts), self.chunk):
                parts.append(np.asarray(self.inner.embed(texts[i : i + self.chunk]), dtype=np.float32))
                bar.update(len(texts[i : i + self.chunk]))
        return np.concatenate(parts, axis=0)


def bench_embedder(args: argparse.Namespace, *, progress: bool) -> Any:  # -> CachedEmbedder
    """The benchmark's embedder, wrapped in a CachedEmbedder on disk unless ``--no-cache``."""
    from ..providers.cache import CachedEmbedder
    from ..providers.factory import make_embedder

    spec = embedder_spec(args)
    inner = ProgressEmbedder(make_embedder(spec), enabled=progress)
    if args.no_cache:
        return CachedEmbedder(inner, None, memory_items=1 << 16)
    return CachedEmbedder(inner, cache_dir() / CACHE_FILE, memory_items=1 << 16)


def cache_note(args: argparse.Namespace) -> str:
    """Where the embedding cache is, for the status line."""
    return "off" if args.no_cache else str(cache_dir() / CACHE_FILE)


def _report(texts: int, fresh: int, seconds: float, note: str) -> dict[str, Any]:
    status(f"embeddings: {texts} distinct texts, {fresh} embedded in {seconds:.1f} s"
           + (f" ({fresh / seconds:.0f}/s)" if fresh and seconds > 0 else "")
           + f", {texts - fresh} from the cache")
    return {
        "seconds": seconds,
        "texts": texts,
        "texts_embedded": fresh,
        "texts_from_cache": texts - fresh,
        "note": note,
    }


def prewarm(embedder: Any, conversations: Sequence[Any], categories: Sequence[int] | None = None) -> dict[str, Any]:
    """Embed every turn and question of LoCoMo ``conversations`` once, in one batch.

    Returns what was done: seconds spent, texts embedded, texts found in the cache.
    """
    from ..providers.base import embed_queries

    cats = set(categories) if categories else None
    texts = list(dict.fromkeys(t for t in (d.text for c in conversations for d in c.docs) if t.strip()))
    questions = [q.question for c in conversations for q in c.questions
                 if q.evidence and (cats is None or q.category in cats)]
    questions = list(dict.fromkeys(t for t in questions if t.strip()))
    before = embedder.stats.misses
    t0 = time.perf_counter()
    if hasattr(embedder.inner, "embed_query"):  # questions embedded as queries (e5)
        embedder.embed(texts)
        embed_queries(embedder, questions)
        texts += questions
    else:
        texts = list(dict.fromkeys([*texts, *questions]))
        embedder.embed(texts)
    seconds = time.perf_counter() - t0
    return _report(len(texts), embedder.stats.misses - before, seconds,
                   "turns and questions were embedded in one batch before the run; search latencies exclude it")


def prewarm_items(embedder: Any, items: Sequence[Any], *, progress: bool, chunk: int = 2048) -> dict[str, Any]:
    """Embed every turn and question of LongMemEval ``items`` once (in chunks)."""
    from tqdm.auto import tqdm

    texts = list(dict.fromkeys(t for it in items for t in [*(d.text for d in it.docs), it.question] if t.strip()))
    before = embedder.stats.misses
    t0 = time.perf_counter()
    with tqdm(total=len(texts), desc="prewarm embeddings", unit="text", disable=not progress or len(texts) < chunk) as bar:
        for i in range(0, len(texts), chunk):
            embedder.embed(texts[i : i + chunk])
            bar.update(len(texts[i : i + chunk]))
    seconds = time.perf_counter() - t0
    return _report(len(texts), embedder.stats.misses - before, seconds,
                   "turns and questions were embedded before the run; search latencies exclude it")
