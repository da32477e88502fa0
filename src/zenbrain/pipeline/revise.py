"""Changing what is remembered: reconsolidation-gated revision and rollback.

A memory recalled within the lability window can be revised; the prediction error
between old and new content (modulated by NE and 5HT, gated by the StabilityProtector)
decides between confirming it, editing it, integrating the new information, or keeping
it untouched and storing the new information as a new episode. Every change keeps the
original snapshot in the memory's history, from which ``rollback`` restores it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..clock import DAY
from ..engine import Engine
from ..errors import NotFoundError, ValidationError
from ..layers.routing import reroute
from ..mechanisms import bayesian
from ..model import HistoryEvent, Layer, MemoryItem, Scope
from ..pma import metacognition, neuromodulator, reconsolidation, stability
from ..state import KV_NEURO, LABILE_UNTIL, META_REVISES
from ..text import content_hash
from ..validation import check_content, check_metadata, check_number
from . import monitor_log, turns
from .access import get_own, partition_of
from .store import enforce_working_capacity, store_many


def update(engine: Engine, scope: Scope, memory_id: str, *, content: str | None = None,
           metadata: dict[str, Any] | None = None, importance: float | None = None,
           layer: Layer | str | None = None) -> MemoryItem:
    """An explicit edit; the previous version is kept in the memory's history."""
    item = get_own(engine, scope, memory_id)
    if content is not None:
        content = check_content(content, engine.config.max_content_chars)
    if metadata is not None:
        metadata = check_metadata(metadata)
    if importance is not None:
        importance = check_number("importance", importance, 0.0, 1.0)
    new_layer = reroute(Layer.parse(layer), engine.config.disabled_layers) if layer is not None else None
    if new_layer in (Layer.WORKING, Layer.SHORT_TERM) and scope.session_id is None:
        raise ValidationError(f"the {new_layer.value} layer is bound to a session: give the scope a session_id")
    if new_layer in (Layer.WORKING, Layer.SHORT_TERM) and item.session_id != scope.session_id:
        raise ValidationError("only a memory of this session can move into its working or short-term memory")
    return apply_revision(engine, scope, item, content, action="updated", detail={}, metadata=metadata,
                          importance=importance, layer=new_layer)


def apply_revision(engine: Engine, scope: Scope, item: MemoryItem, content: str | None, *, action: str,
                   detail: dict[str, Any], metadata: dict[str, Any] | None = None, importance: float | None = None,
                   layer: Layer | None = None) -> MemoryItem:
    """Write a changed memory (new content re-embedded), its earlier version in its history."""
    part = partition_of(scope)
    now = engine.clock.now()
    snapshot = {"content": item.content, "metadata": item.metadata, "layer": item.layer.value, "version": item.version}
    fresh: dict[str, np.ndarray] = {}
    successors: list[MemoryItem] = []
    if content is not None and content != item.content:
        item.content = content
        item.content_hash = content_hash(content)
        turns.reindex(engine, part, item)
        successors = turns.successor_updates(engine, part, [item])  # they were indexed with the old words
        fresh = turns.embed(engine, [item, *successors]).fresh
    if metadata is not None:
        item.metadata = metadata
    if importance is not None:
        item.importance = importance
    if layer is not None:
        item.layer = layer
    item.version += 1
    item.updated_at = now
    with engine.store.transaction() as tx:
        if fresh:
            tx.put_embeddings(engine.embedder.name, list(fresh), np.stack(list(fresh.values())))
        tx.put_memories([item, *successors])
        tx.log(part, [HistoryEvent(item.id, now, action, {"before": snapshot, **detail})])
        if layer is Layer.WORKING and snapshot["layer"] != Layer.WORKING.value:
            enforce_working_capacity(engine, tx, part, scope, [item], now)
    return item


def revise(engine: Engine, scope: Scope, memory_id: str, new_content: str, *, correction: bool = False) -> dict[str, Any]:
    """Apply new information about a memory. Returns {"mode", "memory", "new_memory", "plan"}."""
    item = get_own(engine, scope, memory_id)
    new_content = check_content(new_content, engine.config.max_content_chars)
    part = partition_of(scope)
    now = engine.clock.now()
    if not engine.on("reconsolidation"):
        updated = update(engine, scope, item.id, content=new_content)
        return {"mode": "overwrite", "memory": updated, "new_memory": None, "plan": None}
    ne = serotonin = 0.5
    if engine.on("neuromodulator"):
        raw = engine.store.kv_get(part, KV_NEURO)
        state = neuromodulator.NeuromodulatorState.from_dict(raw) if raw else neuromodulator.initial_state(now=now)
        lv = neuromodulator.levels(state, now=now, params=engine.config.params.neuromodulator)
        ne, serotonin = lv["NE"], lv["5HT"]
    threshold = None
    if engine.on("stability_protector"):
        # Only established memories are locked (the authors gate only memories with a lock
        # row); a fresh memory stays editable by small corrections.
        sp = engine.config.params.stability_protector
        facts = dict(access_count=item.access_count, confidence=item.confidence,
                     age_days=max(0.0, (now - item.created_at) / DAY), core=item.layer.value == "core")
        if float(stability.lock_score(**facts, params=sp)) >= sp.gate_min_lock:
            threshold = float(stability.update_threshold(**facts, params=sp))
    plan = reconsolidation.plan_update(
        item.content, new_content, labile_until=item.state.get(LABILE_UNTIL), now=now, ne=ne, serotonin=serotonin,
        stability_threshold=threshold, memory_kind=item.kind.value, correction=correction,
        params=engine.config.params.reconsolidation,
    )
    detail = plan.to_dict()
    new_memory = None
    if plan.new_content is not None and plan.new_content != item.content:
        item = apply_revision(engine, scope, item, plan.new_content, action="reconsolidated", detail=detail)
    else:
        with engine.store.transaction() as tx:
            if plan.mode == "confirmed" and engine.on("bayesian_confidence"):
                item.conf_alpha, item.conf_beta = bayesian.observe(item.conf_alpha, item.conf_beta, supports=True)
                tx.update_columns(part, [item.id], conf_alpha=[item.conf_alpha], conf_beta=[item.conf_beta])
            if plan.supersede_old:
                item.archived = True
                tx.update_columns(part, [item.id], archived=[True])
            tx.log(part, [HistoryEvent(item.id, now, "reconsolidated", detail)])
    if plan.create_new_episode:
        (new_memory,), _ = store_many(engine, scope, [dict(content=new_content, kind=item.kind, layer=item.layer,
                                                            metadata={META_REVISES: item.id, "reconsolidation": plan.mode})])
    if engine.on("metacognitive_monitor"):
        mp = engine.config.params.metacognitive_monitor
        surprise = metacognition.surprise_event(at=now, pe=float(plan.pe_eff), params=mp)
        if surprise is not None:
            with engine.store.transaction() as tx:
                tx.kv_put(part, monitor_log.appended(engine.store, part, mp, surprises=[surprise]))
    return {"mode": plan.mode, "memory": item, "new_memory": new_memory, "plan": detail}


def rollback(engine: Engine, scope: Scope, memory_id: str) -> MemoryItem:
    """Restore the content a memory had before its last revision."""
    item = get_own(engine, scope, memory_id)
    events = engine.store.history(partition_of(scope), item.id)
    for ev in reversed(events):
        before = ev.detail.get("before") if ev.action in ("updated", "reconsolidated") else None
        if before and "content" in before:
            return apply_revision(engine, scope, item, before["content"], action="rolled_back", detail={"to_version": before.get("version")})
    raise NotFoundError(f"memory {item.id!r} has no earlier version to roll back to")
