"""Feedback on memories: reviews, outcomes of use, evidence, and the review queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import Engine
from ..errors import ValidationError
from ..mechanisms import bayesian, ebbinghaus, fsrs_schedule
from ..model import HistoryEvent, Layer, MemoryItem, Scope
from ..pma import triple_copy
from ..state import (
    COPIES,
    DUE_AT,
    FSRS,
    KV_CURIOSITY,
    OUTCOMES,
    REVIEW_TOPIC,
    encode_vec,
)
from ..validation import check_number
from .access import check_id, check_own, get_own, partition_of, read_filter, visible
from .recall_effects import topic_vector, vmpfc_adjust


def review_many(engine: Engine, scope: Scope, reviews: Sequence[tuple[str, int | str]]) -> list[MemoryItem]:
    """Explicit feedback on many memories at once (FSRS review with the vmPFC interval,
    Ebbinghaus stability, TripleCopy reinforcement), in one transaction. Every id and grade
    is checked before anything is written."""
    if isinstance(reviews, (str, bytes)) or not isinstance(reviews, Sequence):
        raise ValidationError("reviews must be a sequence of (memory_id, grade) pairs")
    pairs: list[tuple[str, Any]] = []
    for r in reviews:
        if not isinstance(r, (tuple, list)) or len(r) != 2:
            raise ValidationError(f"each review must be a (memory_id, grade) pair, got {r!r}")
        pairs.append((check_id(r[0]), r[1]))
    if len({mid for mid, _ in pairs}) != len(pairs):
        raise ValidationError("each memory may be reviewed once per call")
    part = partition_of(scope)
    now = engine.clock.now()
    found = {i.id: i for i in engine.store.get(part, [mid for mid, _ in pairs])}
    items = [check_own(engine, scope, found.get(mid), mid) for mid, _ in pairs]
    ratings = [fsrs_schedule.grade_from_feedback(g) for _, g in pairs]  # bad grades fail before any write

    topic = topic_vector(engine, part) if engine.on("fsrs") and engine.on("vmpfc_fsrs") else None
    ebb_p = engine.config.params.ebbinghaus_decay
    fsrs_p = engine.config.params.fsrs
    vm_p = engine.config.params.vmpfc_fsrs
    tc_p = engine.config.params.triple_copy
    for item, rating in zip(items, ratings):
        success = int(rating) >= 2
        st = item.state.copy()
        if engine.on("ebbinghaus_decay") and item.layer is not Layer.CORE:
            item.stability = float(ebbinghaus.review_stability(stability=item.stability, success=success, params=ebb_p))
        if engine.on("fsrs"):
            card, due = fsrs_schedule.review(st.get(FSRS), rating, now, params=fsrs_p)
            if topic is not None:
                card, due = vmpfc_adjust(st, card, due, topic, now, vm_p)
                st[REVIEW_TOPIC] = encode_vec(topic)
            st[FSRS] = card
            st[DUE_AT] = due
        if engine.on("triple_copy") and COPIES in st and success:
            st[COPIES] = triple_copy.reinforce(triple_copy.CopyState.from_dict(st[COPIES]), now=now,
                                               params=tc_p).to_dict()
        item.state = st
        item.last_access = now
    if items:
        with engine.store.transaction() as tx:
            tx.update_columns(part, [i.id for i in items], stability=[i.stability for i in items],
                              last_access=[now] * len(items))
            tx.update_states(part, {i.id: i.state for i in items})
            tx.log(part, [HistoryEvent(i.id, now, "reviewed", {"rating": int(r), "due_at": i.state.get(DUE_AT)})
                          for i, r in zip(items, ratings)])
    return items


def record_outcome(engine: Engine, scope: Scope, memory_id: str, success: bool) -> MemoryItem:
    """Procedural memory: successful use strengthens a skill, failure weakens it."""
    if not isinstance(success, bool):
        raise ValidationError("success must be True or False")
    item = get_own(engine, scope, memory_id)
    part = partition_of(scope)
    now = engine.clock.now()
    st = item.state.copy()
    outcomes = dict(st.get(OUTCOMES, {"ok": 0, "fail": 0}))
    outcomes["ok" if success else "fail"] += 1
    st[OUTCOMES] = outcomes
    item.strength = float(min(1.0, item.strength + 0.1 * (1 - item.strength)) if success else max(0.05, item.strength * 0.8))
    if engine.on("ebbinghaus_decay"):
        item.stability = float(ebbinghaus.review_stability(
            stability=item.stability, success=success, params=engine.config.params.ebbinghaus_decay))
    if engine.on("triple_copy") and COPIES in st and success:
        st[COPIES] = triple_copy.reinforce(triple_copy.CopyState.from_dict(st[COPIES]), now=now,
                                           params=engine.config.params.triple_copy).to_dict()
    item.state = st
    with engine.store.transaction() as tx:
        tx.update_columns(part, [item.id], strength=[item.strength], stability=[item.stability], last_access=[now])
        tx.update_states(part, {item.id: st})
        tx.log(part, [HistoryEvent(item.id, now, "used", {"success": success, "outcomes": outcomes})])
    return item


def record_evidence(engine: Engine, scope: Scope, memory_id: str, *, supports: bool, strength: float) -> MemoryItem:
    """Evidence for or against a memory being true: a conjugate update of its Beta
    confidence, recorded whether or not ``bayesian_confidence`` is on (it is the memory's
    evidence; the mechanism decides what the library infers and propagates)."""
    if not isinstance(supports, bool):
        raise ValidationError("supports must be True or False")
    strength = check_number("strength", strength, 0.0, 1e6)
    item = get_own(engine, scope, memory_id)
    part = partition_of(scope)
    now = engine.clock.now()
    before = (item.conf_alpha, item.conf_beta)
    item.conf_alpha, item.conf_beta = bayesian.observe(item.conf_alpha, item.conf_beta, supports=supports,
                                                       strength=strength)
    with engine.store.transaction() as tx:
        tx.update_columns(part, [item.id], conf_alpha=[item.conf_alpha], conf_beta=[item.conf_beta])
        tx.log(part, [HistoryEvent(item.id, now, "evidence", {"supports": supports, "strength": strength,
                                                               "before": list(before),
                                                               "after": [item.conf_alpha, item.conf_beta]})])
    return item


def review_queue(engine: Engine, scope: Scope, limit: int) -> list[MemoryItem]:
    """Memories due for review, most overdue first, then knowledge gaps ranked by the
    curiosity engine (uncertain and still being learned)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"limit must be a positive integer, got {limit!r}")
    part = partition_of(scope)
    due: list[MemoryItem] = []
    if engine.on("fsrs"):
        due = engine.store.query(part, read_filter(engine, scope, due_before=engine.clock.now()),
                                 order_by="due_at", limit=limit)
    if len(due) < limit and engine.on("curiosity"):
        queued = engine.store.kv_get(part, KV_CURIOSITY) or []
        ids = [q["id"] if isinstance(q, dict) else q[0] for q in queued]
        seen = {d.id for d in due}
        extra = [i for i in engine.store.get(part, [x for x in ids if x not in seen]) if visible(engine, scope, i)]
        due += extra[: limit - len(due)]
    return due
