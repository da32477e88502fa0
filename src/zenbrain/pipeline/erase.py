"""Erasure: a memory, with everything derived from it, or a scope's whole partition."""

from __future__ import annotations

import numpy as np

from ..engine import Engine
from ..model import Scope
from ..state import KV_DEBATES, META_EVIDENCE_IDS
from ..storage.base import Filter
from . import turns
from .access import get_own, partition_of


def forget(engine: Engine, scope: Scope, memory_id: str) -> None:
    """Erase a memory: its row, text, vector (unless shared), lexical entry, edges, history
    and snapshots, the memories derived from it, and the debate entries naming it."""
    part = partition_of(scope)
    item = get_own(engine, scope, memory_id)
    derived = [
        d.id
        for d in engine.store.query(part, Filter(include_archived=True, session_id=scope.session_id, contexts=None))
        if item.id in (d.metadata.get(META_EVIDENCE_IDS) or [])
    ]
    erased = {item.id, *derived}
    debates = engine.store.kv_get(part, KV_DEBATES) or []
    kept = [d for d in debates if not erased & {d.get("new_id"), *d.get("winners", []), *d.get("losers", [])}]
    # The turns after an erased one were indexed with its words: re-indexed without them.
    successors = turns.successor_updates(engine, part, engine.store.get(part, sorted(erased)), erased)
    fresh = turns.embed(engine, successors).fresh if successors else {}
    with engine.store.transaction() as tx:
        for mid in erased:
            tx.delete_memory(part, mid)
        if successors:
            if fresh:
                tx.put_embeddings(engine.embedder.name, list(fresh), np.stack(list(fresh.values())))
            tx.put_memories(successors)
        if len(kept) != len(debates):
            tx.kv_put(part, {KV_DEBATES: kept})


def forget_scope(engine: Engine, scope: Scope) -> int:
    """Erase every memory of the scope's user and agent (all sessions and contexts) and
    every record the mechanisms keep for them."""
    part = partition_of(scope)
    ids = [i.id for i in engine.store.query(part, Filter(include_archived=True, all_sessions=True, contexts=None))]
    with engine.store.transaction() as tx:
        for mid in ids:
            tx.delete_memory(part, mid)
        tx.kv_clear(part)  # goals, intentions, topic vectors, debate logs, mechanism state
    return len(ids)
