"""Erasure: a memory, with everything derived from it, or a scope's whole partition.

What erasure touches is decided by the library's own records only, never by a field a
user can write: the memories derived from a memory are the schemas consolidation
abstracted from it, found through their ``evidence_of`` edges (a reserved relation no
caller can make or remove) and the episode's ``consolidated_into`` state (written only by
consolidation). ``metadata["evidence_ids"]`` is a copy for readers; erasure ignores it.

Every erasure returns an ``ErasureReceipt``. It reports success only when the erased
text is gone from the files too: if a reader of an older snapshot keeps the store from
scrubbing it (see ``storage.sqlite.health``), ``ErasurePendingError`` carries the
receipt; the scrub then completes at the store's next write, open or close, or at
``memory.storage.scrub()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..engine import Engine
from ..errors import ErasurePendingError
from ..mechanisms import information
from ..model import MemoryItem, Scope
from ..state import (
    CONSOLIDATED_INTO,
    KV_DEBATES,
    KV_INFORMATION,
    KV_INFORMATION_VERSION,
    KV_NAME_VOCABULARY,
    RELATION_EVIDENCE_OF,
)
from ..storage.base import Filter, Partition, Transaction
from ..text import token_set
from . import turns
from .access import get_own, partition_of

_COUNTS = ("edges", "history_rows", "lexical_entries", "vectors", "requests")


@dataclass(frozen=True)
class ErasureReceipt:
    """What an erasure removed. Counts are of the scope's own rows: ``vectors`` are the
    vectors its memories no longer use (a vector another user's identical text shares
    is kept for that memory, and that does not show here)."""

    memory_ids: tuple[str, ...]  # the memories asked for (forget: one; forget_scope: all)
    derived_ids: tuple[str, ...]  # memories derived from them (schemas abstracted from erased episodes)
    edges: int = 0
    history_rows: int = 0
    lexical_entries: int = 0
    vectors: int = 0
    records: int = 0  # partition records (forget_scope) or debate-log entries naming an erased memory
    requests: int = 0  # idempotency records of requests that wrote or returned an erased memory
    scrubbed: bool = False  # the erased text is gone from the database file and its WAL

    @property
    def count(self) -> int:
        """Memories erased in all."""
        return len(self.memory_ids) + len(self.derived_ids)

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["memory_ids"] = list(self.memory_ids)
        out["derived_ids"] = list(self.derived_ids)
        return out


def derived_from(engine: Engine, part: Partition, ids: Iterable[str]) -> list[str]:
    """Memories derived from ``ids``, transitively: the targets of their provenance edges
    and the schemas their consolidation state names (library-written records only)."""
    seen = set(ids)
    frontier = list(seen)
    out: list[str] = []
    while frontier:
        found: list[str] = []
        for e in engine.store.edges(part, frontier):
            if e.relation == RELATION_EVIDENCE_OF and e.src in frontier:
                found.append(e.dst)
        for item in engine.store.get(part, frontier):
            target = item.state.get(CONSOLIDATED_INTO)
            if isinstance(target, str):
                found.append(target)
        frontier = []
        for mid in dict.fromkeys(found):
            if mid not in seen:
                seen.add(mid)
                frontier.append(mid)
        existing = {i.id for i in engine.store.get(part, frontier)}
        frontier = [mid for mid in frontier if mid in existing]
        out.extend(frontier)
    return out


def forget(engine: Engine, scope: Scope, memory_id: str) -> ErasureReceipt:
    """Erase a memory: its row, text, vector (unless another memory shares it), lexical
    entry, edges, history and snapshots, the memories derived from it, the debate entries
    naming it and the idempotency records that returned it."""
    part = partition_of(scope)
    item = get_own(engine, scope, memory_id)
    derived = derived_from(engine, part, [item.id])
    erased = {item.id, *derived}
    debates = engine.store.kv_get(part, KV_DEBATES) or []
    kept = [d for d in debates if not isinstance(d, dict) or not erased & _named(d)]
    counts = dict.fromkeys(_COUNTS, 0)
    # The turns after an erased one were indexed with its words: re-indexed without them.
    erased_items = engine.store.get(part, sorted(erased))
    successors = turns.successor_updates(engine, part, erased_items, erased)
    fresh = turns.embed(engine, successors).fresh if successors else {}
    with engine.store.transaction() as tx:
        for mid in (item.id, *derived):
            for key, n in tx.delete_memory(part, mid).items():
                if key in counts:
                    counts[key] += n
        if successors:
            if fresh:
                tx.put_embeddings(engine.embedder.name, list(fresh), np.stack(list(fresh.values())))
            tx.put_memories(successors)
        if len(kept) != len(debates):
            tx.kv_put(part, {KV_DEBATES: kept})
        frequencies = _frequencies_without(engine, part, erased_items)
        if frequencies:
            tx.kv_put(part, frequencies)
    return _finish(tx, _receipt((item.id,), tuple(derived), counts, len(debates) - len(kept)))


def _frequencies_without(engine: Engine, part: Partition, items: list[MemoryItem]) -> dict[str, Any]:
    """The word frequencies decay saved (``mechanisms.information``), with the words of the
    erased memories that were counted in them taken out; {} when there are none."""
    raw = engine.store.kv_get(part, KV_INFORMATION)
    version = engine.store.kv_get(part, KV_INFORMATION_VERSION)
    if not raw or not version:
        return {}
    counted_items = [i for i in items if i.created_at <= float(version[0])]
    if not counted_items:
        return {}
    if any(i.version > 1 for i in counted_items):
        # An edited memory may have been counted with words it no longer holds: the
        # frequencies go (recall then rehearses every hit until the next decay saves new ones).
        return {KV_INFORMATION: None, KV_INFORMATION_VERSION: None, KV_NAME_VOCABULARY: None}
    counted = [token_set(i.content) for i in counted_items]
    ref = information.InformationReference.from_dict(raw).without(counted)
    # The version loses its fingerprint, so the next decay counts the partition afresh; the
    # name vocabulary (sets of words, no counts to take the erased ones out of) goes.
    return {KV_INFORMATION: ref.to_dict(), KV_INFORMATION_VERSION: [version[0], ref.n, sum(ref.df.values())],
            KV_NAME_VOCABULARY: None}


def forget_scope(engine: Engine, scope: Scope) -> ErasureReceipt:
    """Erase every memory of the scope's user and agent (all sessions and contexts) and
    every record the mechanisms keep for them."""
    part = partition_of(scope)
    ids = [i.id for i in engine.store.query(part, Filter(include_archived=True, all_sessions=True, contexts=None))]
    counts = dict.fromkeys(_COUNTS, 0)
    with engine.store.transaction() as tx:
        for mid in ids:
            for key, n in tx.delete_memory(part, mid).items():
                if key in counts:
                    counts[key] += n
        records = tx.kv_clear(part)  # goals, intentions, topic vectors, debate logs, mechanism state, requests
        tx.forget_partition(part)  # and the store's bookkeeping stops naming the user
    return _finish(tx, _receipt(tuple(ids), (), counts, records))


def _receipt(ids: tuple[str, ...], derived: tuple[str, ...], counts: dict[str, int], records: int) -> ErasureReceipt:
    return ErasureReceipt(ids, derived, edges=counts["edges"], history_rows=counts["history_rows"],
                          lexical_entries=counts["lexical_entries"], vectors=counts["vectors"], records=records,
                          requests=counts["requests"])


def _named(debate: dict[str, object]) -> set[object]:
    named: set[object] = {debate.get("new_id")}
    for key in ("winners", "losers"):
        value = debate.get(key)
        if isinstance(value, list):
            named.update(v for v in value if isinstance(v, str))
    return named


def _finish(tx: Transaction, receipt: ErasureReceipt) -> ErasureReceipt:
    """The receipt with whether the files are scrubbed (the store scrubbed them after the
    commit, waiting a while for readers); raises ErasurePendingError when they are not."""
    done = tx.scrubbed is not False  # None: nothing the store keeps in files was erased
    receipt = dataclasses.replace(receipt, scrubbed=done)
    if not done:
        raise ErasurePendingError(
            "erased, but another connection still reads an older snapshot of the store, so the erased text "
            "stays in the database files until it ends; the scrub completes at the next write, open or close of "
            "the store, or at memory.storage.scrub() (a PostgreSQL store opened with erase='vacuum' or 'none' "
            "defers every scrub to memory.storage.scrub())", receipt)
    return receipt


__all__ = ["ErasureReceipt", "derived_from", "forget", "forget_scope"]
