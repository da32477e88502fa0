"""The embedding cache: no text embedded twice, across instances and processes."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import numpy as np
import pytest

from zenbrain.errors import ProviderError
from zenbrain.providers.base import Embedder
from zenbrain.providers.cache import CachedEmbedder, EmbeddingCache, LRUCache, text_key
from zenbrain.providers.hashing import HashingEmbedder

from .conftest import CountingEmbedder


def test_hits_skip_the_inner_embedder(tmp_path, counting):
    cached = CachedEmbedder(counting, tmp_path / "c.db")
    assert isinstance(cached, Embedder)
    assert cached.name == counting.name and cached.dim == counting.dim
    first = cached.embed(["alpha", "beta", "gamma"])
    assert counting.calls == [["alpha", "beta", "gamma"]]
    second = cached.embed(["beta", "delta", "alpha", "epsilon"])
    assert counting.calls[-1] == ["delta", "epsilon"]  # only misses, in one call
    np.testing.assert_array_equal(second[[0, 2]], first[[1, 0]])
    np.testing.assert_allclose(second, HashingEmbedder(64).embed(["beta", "delta", "alpha", "epsilon"]), atol=1e-7)
    cached.embed(["gamma", "alpha"])
    assert len(counting.calls) == 2
    assert cached.stats.misses == 5 and cached.stats.inner_calls == 2 and cached.stats.hits == 4


def test_duplicates_within_one_call_are_embedded_once(counting):
    cached = CachedEmbedder(counting, None)
    out = cached.embed(["same", "other", "same", "same"])
    assert counting.calls == [["same", "other"]]
    assert out.shape == (4, 64)
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[0], out[3])


def test_persists_across_instances(tmp_path, counting):
    path = tmp_path / "cache.db"
    a = CachedEmbedder(counting, path)
    va = a.embed(["kept across restarts", "second text"])
    a.close()
    b = CachedEmbedder(counting, path)
    vb = b.embed(["second text", "kept across restarts"])
    assert len(counting.calls) == 1
    assert b.stats.disk_hits == 2 and b.stats.memory_hits == 0
    np.testing.assert_array_equal(vb, va[::-1])
    assert vb.dtype == np.float32
    b.close()


def test_memory_lru_serves_repeated_queries_without_sqlite(tmp_path, counting):
    cached = CachedEmbedder(counting, tmp_path / "c.db", memory_items=2)
    cached.embed(["q1"])
    cached.embed(["q1"])
    assert cached.stats.memory_hits == 1 and cached.stats.disk_hits == 0
    cached.embed(["q2", "q3"])  # evicts q1 from the LRU
    cached.embed(["q1"])
    assert cached.stats.disk_hits == 1
    assert len(counting.calls) == 2


def test_keys_are_per_embedder_name(tmp_path):
    store = EmbeddingCache(tmp_path / "c.db")
    small, big = CountingEmbedder(32), CountingEmbedder(48)
    CachedEmbedder(small, store).embed(["shared text"])
    out = CachedEmbedder(big, store).embed(["shared text"])
    assert out.shape == (1, 48) and len(big.calls) == 1
    assert store.count() == 2 and store.count(small.name) == 1
    assert store.models() == sorted([small.name, big.name])
    assert store.clear(small.name) == 1 and store.count() == 1
    store.close()


def test_rows_of_the_wrong_width_are_misses(tmp_path, counting):
    store = EmbeddingCache(tmp_path / "c.db")
    store.put_many(counting.name, [(text_key("odd"), np.ones(10, dtype=np.float32))])
    out = CachedEmbedder(counting, store).embed(["odd"])
    assert out.shape == (1, 64) and len(counting.calls) == 1


def test_empty_input(counting, tmp_path):
    cached = CachedEmbedder(counting, tmp_path / "c.db")
    assert cached.embed([]).shape == (0, 64)
    assert counting.calls == []


def test_inner_returning_wrong_shape_is_provider_error(tmp_path):
    class Broken:
        name, dim = "broken", 8

        def embed(self, texts):
            return np.zeros((len(texts) + 1, 8), dtype=np.float32)

    with pytest.raises(ProviderError, match="shape"):
        CachedEmbedder(Broken(), tmp_path / "c.db").embed(["a"])


def test_database_uses_wal(tmp_path, counting):
    path = tmp_path / "c.db"
    CachedEmbedder(counting, path).embed(["x"])
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_lru_cache_bounds():
    lru = LRUCache(2)
    for k in (b"a", b"b", b"c"):
        lru.put(k, np.zeros(1))
    assert len(lru) == 2 and lru.get(b"a") is None and lru.get(b"c") is not None
    off = LRUCache(0)
    off.put(b"a", np.zeros(1))
    assert len(off) == 0


def _worker(path: str, texts: list[str], barrier, out_queue) -> None:
    inner = CountingEmbedder(64)
    cached = CachedEmbedder(inner, path)
    barrier.wait()
    for i in range(0, len(texts), 7):  # many small transactions, interleaved with the other process
        cached.embed(texts[i : i + 7])
    out_queue.put(inner.texts_embedded)
    cached.close()


def test_two_processes_share_one_cache_file(tmp_path):
    path = str(tmp_path / "shared.db")
    texts_a = [f"text number {i}" for i in range(120)]
    texts_b = [f"text number {i}" for i in range(60, 180)]
    # fork is fast; spawn (the only choice elsewhere) re-imports numpy and zenbrain per child.
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(path, t, barrier, queue)) for t in (texts_a, texts_b)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    embedded = [queue.get(timeout=5), queue.get(timeout=5)]
    assert sum(embedded) >= 180  # each text at least once, overlaps at most twice
    store = EmbeddingCache(path)
    assert store.count() == 180
    union = [f"text number {i}" for i in range(180)]
    counting = CountingEmbedder(64)
    got = CachedEmbedder(counting, store).embed(union)
    assert counting.calls == []  # everything came from the file
    np.testing.assert_allclose(got, HashingEmbedder(64).embed(union), atol=1e-7)


def _child_embeds(cached: CachedEmbedder) -> None:
    cached.embed(["from the child"])
    cached.close()


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_cached_embedder_survives_fork(tmp_path, counting):
    cached = CachedEmbedder(counting, tmp_path / "c.db")
    cached.embed(["from the parent"])  # the parent's connection is open now
    child = mp.get_context("fork").Process(target=_child_embeds, args=(cached,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    cached.embed(["from the parent"])
    assert cached.store is not None and cached.store.count() == 2
