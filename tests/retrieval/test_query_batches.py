"""Queries recalled together are embedded in one batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from zenbrain import Scope, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.engine import QUERY_BATCH
from zenbrain.errors import ValidationError
from zenbrain.providers.hashing import HashingEmbedder

A = Scope("a")
TEXTS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake last year",
    "Caroline is researching adoption agencies",
    "Melanie signed up for a pottery class",
]
QUESTIONS = ["What is Caroline researching?", "When did Caroline go to the support group?", "What did Melanie paint?"]


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
    mem = open_memory(str(tmp_path / "m.db"), embedder=emb, clock=SimulatedClock(1_700_000_000.0))
    mem.store_many([{"content": t} for t in TEXTS], A)
    yield mem, emb
    mem.close()


def test_recall_many_embeds_its_queries_in_one_batch(counted, tmp_path):
    mem, emb = counted
    got = mem.recall_many(QUESTIONS, A, k=2, touch=False)
    assert emb.query_calls == [len(QUESTIONS)]
    one = open_memory(str(tmp_path / "one.db"), embedder=HashingEmbedder(384), clock=SimulatedClock(1_700_000_000.0))
    one.store_many([{"content": t} for t in TEXTS], A)
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
