"""A store outlives its process: memories and cached embeddings are read back after a restart."""

from __future__ import annotations

import os

import core_helpers
from core_helpers import CountingEmbedder, open_mem

from zenbrain import Scope
from zenbrain.config import Config

TEXTS = ["the ferry leaves at seven", "the museum is closed on mondays", "bring an umbrella"]


def test_memory_stored_by_another_process_is_recalled_after_restart(db_path, workers):
    pid, (cats_id, paris_id) = workers.pool.apply(core_helpers.persist_task, (db_path, TEXTS))
    assert pid != os.getpid()
    scope = Scope("alice", "agent")
    # Dense-only recall: the vector index is rebuilt from the file, not carried over.
    with open_mem(db_path, config=Config().without("bm25_hybrid")) as mem:
        hits = mem.recall("lighthouse keeper cats", scope, k=1)
        assert [h.id for h in hits] == [cats_id]
        assert mem.get(paris_id, scope).content == "Paris is the capital of France"
        assert {cats_id, paris_id} <= {i.id for i in mem.list_memories(scope)}
    with open_mem(db_path) as mem:  # hybrid recall too
        assert mem.recall("capital of France", scope, k=1)[0].id == paris_id


def test_embedding_cache_survives_a_restart(db_path, workers):
    workers.pool.apply(core_helpers.persist_task, (db_path, TEXTS))
    counting = CountingEmbedder()
    with open_mem(db_path, embedder=counting) as mem:
        # Same texts, even for another user: nothing is embedded again.
        mem.store(TEXTS[0], Scope("bob", "agent"))
        mem.store_many([{"content": t} for t in TEXTS], Scope("alice", "agent"))
        mem.store("Paris is the capital of France", Scope("carol", "agent"))
        assert counting.calls == 0
        # Only the new text of a mixed batch is embedded, once even if repeated.
        mem.store_many(
            [{"content": TEXTS[1]}, {"content": "a new sentence"}, {"content": "a new sentence"}], Scope("alice", "agent")
        )
        assert counting.texts == ["a new sentence"]
    counting2 = CountingEmbedder()
    with open_mem(db_path, embedder=counting2) as mem:
        mem.store("a new sentence", Scope("carol", "agent"))
        assert counting2.calls == 0
        assert mem.stats()["cached_embeddings"] == len(TEXTS) + 3


def test_reopened_store_keeps_every_field(db_path, clock):
    scope = Scope("alice", "agent", "s1", "work")
    with open_mem(db_path, clock=clock) as mem:
        item = mem.store(
            "quarterly report is due on friday",
            scope,
            kind="fact",
            metadata={"source": "email", "tags": ["a", "b"], "n": 3},
            importance=0.8,
            event_time=clock.now() - 100,
        )
    with open_mem(db_path, clock=clock) as mem:
        again = mem.get(item.id, scope)
    assert again == item
