"""Storing memories: validate, classify and route every record, embed the batch once,
set each memory's initial state, plan its links, then write it all in one transaction.

Working memory holds ``working_capacity`` items per session: the least recently used
overflow to short-term memory in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engine import Engine
from ..errors import NotFoundError, StorageError, ValidationError
from ..ids import new_id
from ..layers.routing import classify_kind, reroute, route
from ..model import HistoryEvent, Kind, Layer, MemoryItem, Scope
from ..state import META_EVENT_TIME, META_KIND
from ..storage.base import Filter, Partition, Transaction
from ..text import content_hash
from ..validation import check_content, check_metadata, check_number
from . import repeats, turns
from .access import get_own, partition_of
from .encode import prepare
from .link import LinkPlan, plan_links, write_links

RECORD_FIELDS = frozenset({"content", "kind", "layer", "metadata", "event_time", "importance", "speaker", "supersedes"})


# How often one store_many starts again because another writer stored a repeat of one of
# its records meanwhile (repeats.confirm). Each new start sees that write, so a second is
# needed only when yet another writer got in before it.
MAX_STARTS = 5


def store_many(engine: Engine, scope: Scope, records: Sequence[dict[str, Any]], *,
               dedupe: bool = False) -> tuple[list[MemoryItem], dict[str, Any]]:
    """Store many memories with one embedding batch and one transaction; every record is
    validated before anything is written. Returns the memory of each record and the link
    report (edges made, debates held, and with ``dedupe`` the records that repeated a
    memory: ``repeats``, see ``repeats``)."""
    for _ in range(MAX_STARTS):
        try:
            return _store_many(engine, scope, records, dedupe=dedupe)
        except repeats.RepeatsChanged:
            continue  # rolled back, nothing written: look again
    raise StorageError(f"other writers kept storing the same texts meanwhile; nothing was stored after "
                       f"{MAX_STARTS} attempts: retry")


def _store_many(engine: Engine, scope: Scope, records: Sequence[dict[str, Any]], *,
                dedupe: bool) -> tuple[list[MemoryItem], dict[str, Any]]:
    part = partition_of(scope)
    if not isinstance(records, Sequence) or isinstance(records, (str, bytes)):
        raise ValidationError("records must be a sequence of dicts")
    now = engine.clock.now()
    drafts: list[MemoryItem] = []
    for rec in records:
        if not isinstance(rec, dict):
            raise ValidationError(f"each record must be a dict, got {type(rec).__name__}")
        unknown = set(rec) - RECORD_FIELDS
        if unknown:
            raise ValidationError(f"unknown record field(s): {sorted(unknown)}")
        drafts.append(draft(engine, scope, rec, now))
    if not drafts:
        return [], {"edges": 0, "debates": []}
    found = repeats.find(engine, part, scope, records, drafts) if dedupe else {}
    new = [d for i, d in enumerate(drafts) if i not in found]
    if new:
        turns.assign(engine, part, new)
        embedded = turns.embed(engine, new)
        kv = prepare(engine, part, new, embedded.vectors, now)
        kv.update(turns.speakers_record(engine, part, new))
        plan = plan_links(engine, part, new, embedded.vectors, now)  # may consult the chat model: before the write
    else:  # every record repeats a stored memory
        embedded, kv, plan = turns.TurnVectors(np.zeros((0, engine.embedder.dim), np.float32), {}), {}, LinkPlan(made_at=now)
    for i, (rec, item) in enumerate(zip(records, drafts)):
        if i not in found:
            for old in superseded_by_record(engine, scope, rec, item):
                plan.supersede(old.id, item.id, item.valid_from)
    with engine.store.transaction() as tx:
        if dedupe:  # under the write lock: another writer may have stored one of these texts meanwhile
            found = repeats.confirm(engine, part, tx, scope, records, drafts, found)
        if embedded.fresh:
            tx.put_embeddings(engine.embedder.name, list(embedded.fresh), np.stack(list(embedded.fresh.values())))
        tx.log(part, [HistoryEvent(item.id, now, "created", {"layer": item.layer.value, "kind": item.kind.value})
                      for item in new])
        write_links(engine, tx, part, plan)
        repeats.use(engine, part, tx, found, drafts, now)  # before the new rows are written: they carry it
        if new:
            tx.put_memories(new)
        if kv:
            tx.kv_put(part, kv)
        enforce_working_capacity(engine, tx, part, scope, new, now)
    items = repeats.stands_for(found, drafts)
    report = plan.report()
    if dedupe:
        report["repeats"] = [{"record": i, "memory_id": items[i].id} for i in sorted(found)]
    return items, report


def draft(engine: Engine, scope: Scope, rec: dict[str, Any], now: float) -> MemoryItem:
    """A validated, classified and routed memory, not stored yet."""
    content = check_content(rec.get("content"), engine.config.max_content_chars)
    metadata = check_metadata(rec.get("metadata"))
    speaker = rec.get("speaker")
    if speaker is not None and (not isinstance(speaker, str) or not speaker.strip() or len(speaker) > 200):
        raise ValidationError(f"speaker must be a non-empty name of at most 200 characters, got {speaker!r}")
    speaker = turns.speaker_of(speaker.strip() if speaker else None, metadata, content)
    kind_in = rec.get("kind") or metadata.get(META_KIND)
    if kind_in is not None:
        try:
            kind = Kind(kind_in) if not isinstance(kind_in, Kind) else kind_in
        except ValueError:
            raise ValidationError(f"unknown kind {kind_in!r}; kinds are {[k.value for k in Kind]}") from None
    else:
        kind = classify_kind(content, spoken=speaker is not None)
    disabled = engine.config.disabled_layers
    layer_in = rec.get("layer")
    layer = reroute(Layer.parse(layer_in) if layer_in is not None else route(kind, session_bound=scope.session_id is not None),
                    disabled)
    if layer in (Layer.WORKING, Layer.SHORT_TERM) and scope.session_id is None:
        raise ValidationError(f"the {layer.value} layer is bound to a session: give the scope a session_id")
    event_time = rec.get("event_time")
    if event_time is None and META_EVENT_TIME in metadata:
        event_time = metadata[META_EVENT_TIME]
    if event_time is not None:
        event_time = check_number("event_time", event_time, 0.0, 1e11)
    importance = rec.get("importance")
    importance = 0.5 if importance is None else check_number("importance", importance, 0.0, 1.0)
    return MemoryItem(
        id=new_id(),
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        session_id=scope.session_id,
        context=scope.context,
        layer=layer,
        kind=kind,
        content=content,
        content_hash=content_hash(content),
        metadata=metadata,
        created_at=now,
        updated_at=now,
        event_time=event_time if event_time is not None else (now if layer is Layer.EPISODIC else None),
        last_access=now,
        importance=importance,
        speaker=speaker,
    )


def superseded_by_record(engine: Engine, scope: Scope, rec: dict[str, Any], item: MemoryItem) -> list[MemoryItem]:
    """The memories a record says it replaces (``supersedes``: an id or a list of ids): each
    one the scope owns, still current, and begun before the new memory."""
    ids = rec.get("supersedes")
    if ids is None:
        return []
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, (list, tuple)) or not ids:
        raise ValidationError("supersedes must be a memory id or a non-empty list of memory ids")
    out = []
    for mid in dict.fromkeys(ids):
        try:
            old = get_own(engine, scope, mid)
        except NotFoundError:  # a bad field of the record, not a missing resource of the request
            raise ValidationError(f"supersedes: no memory {mid!r} in this scope") from None
        if old.valid_until is not None:
            raise ValidationError(f"memory {mid!r} was superseded already (by {old.superseded_by!r})")
        if old.valid_from > item.valid_from:
            raise ValidationError(f"memory {mid!r} began to hold at {old.valid_from}, after the new memory "
                                  f"({item.valid_from}): a memory can only supersede an earlier one")
        out.append(old)
    return out


def enforce_working_capacity(engine: Engine, tx: Transaction, part: Partition, scope: Scope, new: list[MemoryItem],
                             now: float) -> None:
    """Move the least recently used working memories of the session beyond its capacity
    to short-term memory."""
    if not any(i.layer is Layer.WORKING for i in new):
        return
    flt = Filter(layers=frozenset({Layer.WORKING}), session_id=scope.session_id, contexts=frozenset({scope.context}))
    current = engine.store.query(part, flt, order_by="last_access")
    # The new rows may be visible inside this transaction already; count each item once.
    by_id = {i.id: i for i in current if i.session_id == scope.session_id}
    by_id.update({i.id: i for i in new if i.layer is Layer.WORKING})
    items = list(by_id.values())
    overflow = len(items) - engine.config.layers.working_capacity
    if overflow <= 0:
        return
    items.sort(key=lambda i: (i.last_access, i.created_at))
    evict = items[:overflow]
    ids = [i.id for i in evict]
    tx.update_columns(part, ids, layer=[Layer.SHORT_TERM.value] * len(ids), updated_at=[now] * len(ids))
    for i in evict:
        i.layer = Layer.SHORT_TERM
    tx.log(part, [HistoryEvent(i.id, now, "moved", {"from": "working", "to": "short_term", "why": "capacity"})
                  for i in evict])
