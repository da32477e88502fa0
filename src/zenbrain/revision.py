"""Changing what is remembered: reconsolidation-gated revision and rollback.

A memory recalled within the lability window can be revised; the prediction error
between old and new content (modulated by NE and 5HT, gated by the StabilityProtector)
decides between confirming it, editing it, integrating the new information, or keeping
it untouched and storing the new information as a new episode. Every change keeps the
original snapshot in the memory's history, from which ``rollback`` restores it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import dynamics as dyn
from .clock import DAY
from .errors import NotFoundError
from .mechanisms import bayesian
from .model import HistoryEvent, MemoryItem, Scope
from .pma import neuromodulator, reconsolidation, stability

if TYPE_CHECKING:
    from .coordinator import MemoryCoordinator

LOCK_MIN = 0.3  # lock score from which the StabilityProtector gates revisions


def revise(coord: MemoryCoordinator, scope: Scope, item: MemoryItem, new_content: str, *, correction: bool = False) -> dict[str, Any]:
    """Apply new information about a memory. Returns {"mode", "memory", "new_memory", "plan"}."""
    part = coord._part(scope)
    now = coord.clock.now()
    if not coord._on("reconsolidation"):
        updated = coord.update(item.id, scope, content=new_content)
        return {"mode": "overwrite", "memory": updated, "new_memory": None, "plan": None}
    ne = serotonin = 0.5
    if coord._on("neuromodulator"):
        raw = coord.storage.kv_get(part, dyn.KV_NEURO)
        state = neuromodulator.NeuromodulatorState.from_dict(raw) if raw else neuromodulator.initial_state(now=now)
        lv = neuromodulator.levels(state, now=now, params=coord.config.param("neuromodulator", neuromodulator.DEFAULT_PARAMS))
        ne, serotonin = lv["NE"], lv["5HT"]
    threshold = None
    if coord._on("stability_protector"):
        # Only established memories are locked (the authors gate only memories with a lock
        # row); a fresh memory stays editable by small corrections.
        sp = coord.config.param("stability_protector", stability.DEFAULT_PARAMS)
        facts = dict(access_count=item.access_count, confidence=item.confidence,
                     age_days=max(0.0, (now - item.created_at) / DAY), core=item.layer.value == "core")
        if float(stability.lock_score(**facts, params=sp)) >= LOCK_MIN:
            threshold = float(stability.update_threshold(**facts, params=sp))
    plan = reconsolidation.plan_update(
        item.content, new_content, labile_until=item.state.get(dyn.LABILE_UNTIL), now=now, ne=ne, serotonin=serotonin,
        stability_threshold=threshold, memory_kind=item.kind.value, correction=correction,
        params=coord.config.param("reconsolidation", reconsolidation.DEFAULT_PARAMS),
    )
    detail = plan.to_dict()
    new_memory = None
    if plan.new_content is not None and plan.new_content != item.content:
        item = coord._apply_revision(scope, item, plan.new_content, action="reconsolidated", detail=detail)
    else:
        with coord.storage.transaction() as tx:
            if plan.mode == "confirmed" and coord._on("bayesian_confidence"):
                item.conf_alpha, item.conf_beta = bayesian.observe(item.conf_alpha, item.conf_beta, supports=True)
                tx.update_columns(part, [item.id], conf_alpha=[item.conf_alpha], conf_beta=[item.conf_beta])
            if plan.supersede_old:
                item.archived = True
                tx.update_columns(part, [item.id], archived=[True])
            tx.log(part, HistoryEvent(item.id, now, "reconsolidated", detail))
    if plan.create_new_episode:
        new_memory = coord.store(new_content, scope, kind=item.kind, layer=item.layer,
                                 metadata={"revises": item.id, "reconsolidation": plan.mode})
    if coord._on("metacognitive_monitor"):
        from . import monitor_log
        from .pma import metacognition

        mp = coord.config.param("metacognitive_monitor", metacognition.DEFAULT_PARAMS)
        surprise = metacognition.surprise_event(at=now, pe=float(plan.pe_eff), params=mp)
        if surprise is not None:
            with coord.storage.transaction() as tx:
                monitor_log.put(tx, part, monitor_log.appended(coord.storage, part, mp, surprises=[surprise]))
    return {"mode": plan.mode, "memory": item, "new_memory": new_memory, "plan": detail}


def rollback(coord: MemoryCoordinator, scope: Scope, item: MemoryItem) -> MemoryItem:
    """Restore the content a memory had before its last revision."""
    events = coord.storage.history(coord._part(scope), item.id)
    for ev in reversed(events):
        before = ev.detail.get("before") if ev.action in ("updated", "reconsolidated") else None
        if before and "content" in before:
            return coord._apply_revision(scope, item, before["content"], action="rolled_back", detail={"to_version": before.get("version")})
    raise NotFoundError(f"memory {item.id!r} has no earlier version to roll back to")
