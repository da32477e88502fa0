"""Exact repeats at store time: storing again what a scope already holds is a use of it.

A record *repeats* a memory when, in the same user, agent and context, it has the same
content (content hash) and the same metadata (apart from what zenbrain derives at store
time: entities, a lost debate), and, if the record names an event time, the same event
time. A repeat writes no new memory: ``store_many`` returns the memory it repeats, which
gets what a use gives (``recall_effects.state_after_use``, as a recall's first hit with
similarity 1: an access, and when spaced from the last one more stability and an FSRS
review; TripleCopy reinforcement and the reconsolidation window) and a ``repeated``
history event. Equal records in one batch make one memory, used once more per repeat.

Stored anew instead:

* conversation turns: a record stored in a session (it takes the next position of the
  conversation) or with a ``speaker``. A turn that says "ok" again is another event of
  the conversation, with its own place and neighbours, which its successors are indexed
  by;
* a record that supersedes memories (it states a replacement), and the same text with
  other metadata (another source, another document) or another stated event time;
* a repeat of an archived or a superseded memory: it holds again from now.

``dedupe=False`` (``store``/``store_many``) or ``Config(dedupe=False)`` keeps every copy.

Concurrent writers: the lookup runs twice. ``find`` runs before anything is embedded (so a
repeat costs no embedding and no chat-model call), and ``confirm`` runs it again as the
first step of the write transaction, once the partition's write lock is held
(``Transaction.lock``). When the answers differ (another process stored the same new text,
or removed a memory repeated here, in between), ``confirm`` raises ``RepeatsChanged``, the
transaction rolls back with nothing written, and ``store_many`` starts again from the top,
where ``find`` now sees the other write: two processes storing the same new text at the
same moment store it once, and the second gets the first's memory, as if it had come
later.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..engine import Engine
from ..model import HistoryEvent, MemoryItem, Scope
from ..state import META_DISPUTED, META_ENTITIES
from ..storage.base import Filter, Partition, Transaction
from .recall_effects import state_after_use, topic_vector

DERIVED_METADATA = frozenset({META_ENTITIES, META_DISPUTED})  # written by zenbrain, not by the caller

Target = int | MemoryItem  # the index of an earlier record of the batch, or a stored memory


def _own_metadata(item: MemoryItem) -> str:
    return json.dumps({k: v for k, v in item.metadata.items() if k not in DERIVED_METADATA}, sort_keys=True,
                      ensure_ascii=False, default=str)


def may_repeat(scope: Scope, rec: dict[str, Any]) -> bool:
    """Whether a record may be found to repeat a memory (not a conversation turn, no replacement)."""
    return scope.session_id is None and rec.get("speaker") is None and rec.get("supersedes") is None


def _same(stored: MemoryItem, new: MemoryItem, timed: bool) -> bool:
    return (stored.content_hash == new.content_hash and _own_metadata(stored) == _own_metadata(new)
            and (not timed or stored.event_time == new.event_time))


def find(engine: Engine, part: Partition, scope: Scope, records: Sequence[dict[str, Any]],
         drafts: Sequence[MemoryItem]) -> dict[int, Target]:
    """Which records repeat what: record index -> the stored memory it repeats, or the index
    of the earlier record of the batch it repeats. Records not in it are new."""
    candidates = [i for i, rec in enumerate(records) if may_repeat(scope, rec)]
    if not candidates:
        return {}
    flt = Filter(contexts=frozenset({scope.context}), content_hashes=frozenset(drafts[i].content_hash for i in candidates))
    stored: dict[str, list[MemoryItem]] = {}  # content hash -> memories, oldest first
    for m in engine.store.query(part, flt):
        if m.valid_until is None and m.session_id is None and m.position is None:
            stored.setdefault(m.content_hash, []).append(m)
    out: dict[int, Target] = {}
    earlier: dict[str, list[int]] = {}  # content hash -> new records of the batch that later ones may repeat
    for i in candidates:
        new, timed = drafts[i], records[i].get("event_time") is not None
        match = next((m for m in stored.get(new.content_hash, ()) if _same(m, new, timed)), None)
        if match is not None:
            out[i] = match
            continue
        same_text = earlier.setdefault(new.content_hash, [])
        first = next((j for j in same_text if _same(drafts[j], new, timed)), None)
        if first is not None:
            out[i] = first
        else:
            same_text.append(i)
    return out


class RepeatsChanged(Exception):
    """What the records repeat changed between ``find`` and the write transaction (another
    writer committed in between): the operation rolls back and starts again."""


def _answer(found: dict[int, Target]) -> dict[int, int | str]:
    return {i: t if isinstance(t, int) else t.id for i, t in found.items()}


def confirm(engine: Engine, part: Partition, tx: Transaction, scope: Scope, records: Sequence[dict[str, Any]],
            drafts: Sequence[MemoryItem], found: dict[int, Target]) -> dict[int, Target]:
    """Inside the write transaction, before anything is written: hold the partition's write
    lock and look for repeats again. Returns the same answer as ``found`` (``find``'s before
    the transaction) with the stored memories as they are now (a use builds on their latest
    state); raises ``RepeatsChanged`` when the answer differs."""
    if not any(may_repeat(scope, rec) for rec in records):
        return found
    tx.lock([part])
    again = find(engine, part, scope, records, drafts)
    if _answer(again) != _answer(found):
        raise RepeatsChanged
    return again


def use(engine: Engine, part: Partition, tx: Transaction, repeats: dict[int, Target], drafts: Sequence[MemoryItem],
        now: float) -> None:
    """Count every repeat as a use of the memory it repeats (the objects in ``repeats`` and
    ``drafts`` are updated), writing into ``tx`` what changes in stored memories; new
    memories of the batch carry it in the rows written after."""
    if not repeats:
        return
    topic = topic_vector(engine, part)
    times: dict[str, int] = {}
    stored: dict[str, MemoryItem] = {}
    for i in sorted(repeats):
        target = repeats[i]
        item = drafts[target] if isinstance(target, int) else stored.setdefault(target.id, target)
        item.state, item.stability = state_after_use(engine, item, now, rank=1, similarity=1.0, topic=topic)
        item.access_count += 1
        item.last_access = max(item.last_access, now)
        times[item.id] = times.get(item.id, 0) + 1
    if stored:
        ids = list(stored)
        tx.record_access(part, [mid for mid in ids for _ in range(times[mid])], now)
        tx.update_columns(part, ids, stability=[stored[mid].stability for mid in ids])
        tx.update_states(part, {mid: stored[mid].state for mid in ids})
    tx.log(part, [HistoryEvent(mid, now, "repeated", {"times": n}) for mid, n in times.items()])


def stands_for(repeats: dict[int, Target], drafts: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Per record of the batch, the memory it stored or repeats."""
    out = []
    for i, item in enumerate(drafts):
        target = repeats.get(i)
        out.append(item if target is None else drafts[target] if isinstance(target, int) else target)
    return out


__all__ = ["DERIVED_METADATA", "RepeatsChanged", "confirm", "find", "may_repeat", "stands_for", "use"]
