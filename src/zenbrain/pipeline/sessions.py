"""Sessions: working and short-term memory belong to one session and move to the
long-term layers when it ends, or when they outlive the short-term TTL."""

from __future__ import annotations

from typing import Any

from ..engine import Engine
from ..errors import ValidationError
from ..layers.routing import reroute, session_end_target
from ..model import HistoryEvent, Layer, MemoryItem, Scope
from ..results import Report
from ..storage.base import Filter, Partition, Transaction
from .access import partition_of

SESSION_LAYERS = frozenset({Layer.WORKING, Layer.SHORT_TERM})


def end_session(engine: Engine, scope: Scope) -> Report:
    """Consolidate a session's working and short-term memory into the long-term layers."""
    part = partition_of(scope)
    if scope.session_id is None:
        raise ValidationError("end_session needs a scope with a session_id")
    now = engine.clock.now()
    report = Report("end_session", now)
    flt = Filter(layers=SESSION_LAYERS, session_id=scope.session_id, contexts=frozenset({scope.context}))
    items = [i for i in engine.store.query(part, flt) if i.session_id == scope.session_id]
    report.stage("moved").update(_move(engine, part, items, now, why="session end"))
    return report


def expire_short_term(engine: Engine, scope: Scope) -> dict[str, Any]:
    """Move working and short-term memories older than the short-term TTL (of any session
    of the scope's user and agent) to their long-term layers."""
    part = partition_of(scope)
    now = engine.clock.now()
    cutoff = now - engine.config.layers.short_term_ttl_hours * 3600.0
    flt = Filter(layers=SESSION_LAYERS, all_sessions=True, include_archived=True)
    stale = [i for i in engine.store.query(part, flt, order_by="last_access") if i.last_access < cutoff]
    return {"moved": _move(engine, part, stale, now, why="short-term TTL"), "ids": [i.id for i in stale]}


def _move(engine: Engine, part: Partition, items: list[MemoryItem], now: float, *, why: str) -> dict[str, int]:
    moved: dict[str, int] = {}
    if not items:
        return moved
    with engine.store.transaction() as tx:
        for i in items:
            target = move_to_long_term(engine, tx, part, i, now, why=why)
            moved[target.value] = moved.get(target.value, 0) + 1
    return moved


def move_to_long_term(engine: Engine, tx: Transaction, part: Partition, item: MemoryItem, now: float, *,
                      why: str) -> Layer:
    target = reroute(session_end_target(item.kind), engine.config.disabled_layers)
    cols: dict[str, list[Any]] = {"layer": [target.value], "updated_at": [now]}
    if target is Layer.EPISODIC and item.event_time is None:
        cols["event_time"] = [item.created_at]  # an episode happened when it was said
    tx.update_columns(part, [item.id], **cols)
    tx.log(part, [HistoryEvent(item.id, now, "moved", {"from": item.layer.value, "to": target.value, "why": why})])
    return target
