"""How recall embeds its queries: beside its keyword search, when the embedder works outside
the GIL; and queries recalled together, in one batch."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from forking import child_exit_code

from zenbrain import Scope, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.engine import QUERY_BATCH
from zenbrain.errors import ValidationError
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.hashing import HashingEmbedder

A = Scope("a")
TEXTS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake last year",
    "Caroline is researching adoption agencies",
    "Melanie signed up for a pottery class",
    "the charity race raised money for mental health",
]
QUESTIONS = ["What is Caroline researching?", "When did Caroline go to the support group?", "What did Melanie paint?"]


class GatedEmbedder(HashingEmbedder):
    """Hashing vectors; a query is embedded only once the keyword search has begun (or
    after ``wait`` seconds), and it notes on which thread and whether the search came first."""

    releases_gil = True

    def __init__(self, wait: float = 2.0) -> None:
        super().__init__(384)
        self.wait = wait
        self.searching = threading.Event()
        self.overlapped: list[bool] = []
        self.threads: list[str] = []

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        if list(texts) != [t for t in texts if t in QUESTIONS]:  # names recall embeds later
            return self.embed(texts)
        self.threads.append(threading.current_thread().name)
        self.overlapped.append(self.searching.wait(self.wait))
        self.searching.clear()
        return self.embed(texts)


def _memory(embedder, tmp_path, name):
    mem = open_memory(str(tmp_path / name), embedder=embedder, clock=SimulatedClock(1_700_000_000.0))
    mem.store_many([{"content": t} for t in TEXTS], A)
    return mem


def _gate_the_keyword_search(mem, embedder: GatedEmbedder) -> None:
    store = mem.engine.store
    search = store.lexical_search

    def lexical_search(*args, **kwargs):
        embedder.searching.set()
        return search(*args, **kwargs)

    store.lexical_search = lexical_search


def test_the_query_is_embedded_while_the_keyword_search_runs(tmp_path):
    gated = GatedEmbedder()
    mem = _memory(gated, tmp_path, "gated.db")
    _gate_the_keyword_search(mem, gated)
    plain = _memory(HashingEmbedder(384), tmp_path, "plain.db")
    try:
        for q in QUESTIONS:
            got = mem.recall(q, A, k=3, touch=False)
            want = plain.recall(q, A, k=3, touch=False)
            # (hits of score 0 tie, ordered by their ids, which differ between the stores)
            assert [(h.item.content, round(h.score, 9)) for h in got if h.score > 0] == \
                [(h.item.content, round(h.score, 9)) for h in want if h.score > 0]
        assert gated.overlapped == [True] * len(QUESTIONS)
        assert all(t.startswith("zenbrain-query") for t in gated.threads)
        # A repeated query comes from the recall's cache: nothing is embedded.
        mem.recall(QUESTIONS[0], A, k=3, touch=False)
        assert len(gated.threads) == len(QUESTIONS)
    finally:
        mem.close()
        plain.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("zenbrain-query")]


def test_a_pure_python_embedder_embeds_on_the_calling_thread(tmp_path):
    gated = GatedEmbedder(wait=0.05)
    gated.releases_gil = False  # type: ignore[misc]
    mem = _memory(gated, tmp_path, "inline.db")
    _gate_the_keyword_search(mem, gated)
    try:
        mem.recall(QUESTIONS[0], A, k=3, touch=False)
    finally:
        mem.close()
    assert gated.threads == [threading.current_thread().name]
    assert gated.overlapped == [False]  # embedded before the keyword search began


@pytest.mark.parametrize("inner_releases", [True, False])
def test_a_cached_embedder_says_what_its_inner_one_does(inner_releases):
    inner = HashingEmbedder(384)
    if inner_releases:
        inner.releases_gil = True  # type: ignore[attr-defined]
    assert CachedEmbedder(inner).releases_gil is inner_releases


def test_an_embedding_error_reaches_the_caller(tmp_path):
    class Failing(GatedEmbedder):
        def embed_query(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("the model is gone")

    mem = _memory(Failing(), tmp_path, "failing.db")
    try:
        with pytest.raises(RuntimeError, match="the model is gone"):
            mem.recall(QUESTIONS[0], A, k=3)
    finally:
        mem.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_process_embeds_on_a_thread_of_its_own(tmp_path):
    gated = GatedEmbedder(wait=0.0)
    mem = _memory(gated, tmp_path, "fork.db")
    try:
        mem.engine.query_vector_soon(QUESTIONS[0])()  # the parent's background thread runs
        pid = os.fork()
        if pid == 0:  # the child: the inherited pool has no thread
            try:
                v = mem.engine.query_vector_soon(QUESTIONS[1])()
                os._exit(0 if v.shape == (384,) else 1)
            finally:  # never back into the parent's pytest
                os._exit(2)
        assert child_exit_code(pid, "the child waited forever for a thread it does not have") == 0
    finally:
        mem.close()


# ---------------------------------------------------------------------------- batches


class CountingEmbedder(HashingEmbedder):
    """Hashing vectors; notes the size of every call that embeds a query."""

    def __init__(self) -> None:
        super().__init__(384)
        self.query_calls: list[int] = []

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        if any(t in QUESTIONS or t.startswith("question") for t in texts):
            self.query_calls.append(len(texts))
        return self.embed(texts)


@pytest.fixture
def counted(tmp_path):
    emb = CountingEmbedder()
    mem = _memory(emb, tmp_path, "counted.db")
    yield mem, emb
    mem.close()


def test_recall_many_embeds_its_queries_in_one_batch(counted, tmp_path):
    mem, emb = counted
    got = mem.recall_many(QUESTIONS, A, k=2, touch=False)
    assert emb.query_calls == [len(QUESTIONS)]
    one = _memory(HashingEmbedder(384), tmp_path, "one.db")
    want = [one.recall(q, A, k=2, touch=False) for q in QUESTIONS]
    one.close()
    assert [[h.item.content for h in r] for r in got] == [[h.item.content for h in r] for r in want]


def test_a_long_batch_is_embedded_a_chunk_at_a_time(counted):
    mem, emb = counted
    queries = [f"question {i} about pottery" for i in range(QUERY_BATCH + 10)]
    assert len(mem.recall_many(queries, A, k=1, touch=False)) == len(queries)
    assert emb.query_calls == [QUERY_BATCH, 10]


@pytest.mark.parametrize("bad", [["fine", ""], ["fine", 7], ["fine", "lone \ud800 surrogate"], "one string"])
def test_a_bad_query_stops_the_batch_before_anything_is_embedded(counted, bad):
    mem, emb = counted
    before = mem.stats(A)
    with pytest.raises(ValidationError):
        mem.recall_many(bad, A)
    with pytest.raises(ValidationError):
        mem.prepare_queries(bad)
    assert emb.query_calls == []
    assert mem.stats(A) == before


def test_prepared_queries_are_not_embedded_again(counted):
    mem, emb = counted
    mem.prepare_queries(QUESTIONS)
    for q in QUESTIONS:
        mem.recall(q, A, k=1)
    assert emb.query_calls == [len(QUESTIONS)]
    with pytest.raises(ValidationError, match=f"at most {QUERY_BATCH}"):
        mem.prepare_queries([f"question {i}" for i in range(QUERY_BATCH + 1)])
