"""How stored state shapes a ranking: the score factors recall multiplies in after fusion.

Each function fills its field of every hit's ``ScoreBreakdown``; ``recall`` multiplies
them into the final score. A mechanism that is switched off leaves its factor at 1.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine
from ..mechanisms import compositional, imad, two_factor
from ..model import MemoryItem, RecallHit
from ..retrieval.query import QueryInfo
from ..state import KV_COMPOSITIONAL, PRIORITY, RELATION_CONTRADICTS
from ..storage.base import Partition
from ..text import token_set
from .retrievability import retrievability


def temporal_adjust(engine: Engine, hits: list[RecallHit], info: QueryInfo, *, window: bool = True) -> None:
    """A query naming a time window favours hits inside it (``window=False``: the fusion
    recipe has ranked by the window already); "last"/"first" queries favour the most recent
    (or earliest) hits."""
    rp = engine.config.recall
    if window and info.window is not None and rp.temporal_boost > 0:
        w = info.window
        for h in hits:
            t = h.item.event_time if h.item.event_time is not None else h.item.created_at
            if (w.start is None or t >= w.start) and (w.end is None or t <= w.end):
                h.why.temporal *= 1.0 + rp.temporal_boost
    if info.direction is not None and rp.recency_boost > 0 and hits:
        times = np.array([h.item.event_time if h.item.event_time is not None else h.item.created_at for h in hits])
        span = times.max() - times.min()
        if span > 0:
            rel = (times - times.min()) / span
            if info.direction == "early":
                rel = 1.0 - rel
            for h, r in zip(hits, rel):
                h.why.temporal *= 1.0 + rp.recency_boost * float(r)


def cross_context_dense(engine: Engine, part: Partition, qvec: np.ndarray, items: list[MemoryItem],
                        reader: str) -> dict[str, float]:
    """Compositional context: the dense similarity of each memory from another (allowed)
    context, through the shared component of the contexts only, so context-specific detail
    does not cross the boundary (memory id -> similarity)."""
    foreign = [i for i in items if i.context != reader]
    if not foreign or not engine.on("compositional_context"):
        return {}
    raw = engine.store.kv_get(part, KV_COMPOSITIONAL)
    if not raw:
        return {}
    state = compositional.CompositionalState.from_json(raw)
    vecs = engine.store.vectors(part, [i.id for i in foreign])
    sims = np.atleast_1d(np.asarray(compositional.cross_context_similarity(qvec, vecs, state=state), dtype=float))
    return {i.id: float(s) for i, s in zip(foreign, sims)}


def hebbian_boost(engine: Engine, part: Partition, hits: list[RecallHit], k: int) -> None:
    """Two-Factor boost: a candidate linked by strong, mature edges to other strong
    candidates of this query gets score x (1 + alpha * f(w) * I^0.1)."""
    if not engine.on("two_factor_hebbian") or len(hits) < 2:
        return
    tp = engine.config.params.two_factor_hebbian
    ranked = sorted(hits, key=lambda h: -h.why.fused)[: max(engine.config.recall.boost_pool * k, 10)]
    best: dict[str, tuple[float, float]] = {}
    for e in engine.store.edges(part, [h.item.id for h in ranked], both_ends=True):
        if e.relation == RELATION_CONTRADICTS:
            continue
        for node in (e.src, e.dst):
            if node not in best or e.weight > best[node][0]:
                best[node] = (e.weight, e.variance)
    for h in hits:
        if h.item.id in best:
            w, var = best[h.item.id]
            h.why.hebbian_boost = float(two_factor.recall_boost(w, var, params=tp))


def drop_superseded(engine: Engine, part: Partition, hits: list[RecallHit], query: str) -> list[RecallHit]:
    """Current recall: memories a later one superseded leave the ranking. One kept is a
    memory that differs from its successor in a single slot (a detected change, "works at
    Acme" -> "works at Globex") when the query names a word only the old one has ("did she
    leave Acme?", "note number 7"): such a query asks for that version, or a near-identical
    statement was taken for its update. It stays marked (``why.other["superseded"]``)."""
    old = [h for h in hits if h.item.superseded_by is not None]
    if not old:
        return hits
    successors = {i.id: i for i in engine.store.get(part, list({h.item.superseded_by or "" for h in old}))}
    asked = token_set(query)
    drop = set()
    for h in old:
        new = successors.get(h.item.superseded_by or "")
        own_words = token_set(h.item.content) - token_set(new.content) if new is not None else frozenset()
        if new is not None and asked & own_words and imad.replaced_spans(h.item.content, new.content) == 1 \
                and imad.conflict_cues(h.item.content, new.content):
            h.why.other["superseded"] = 1.0
        else:
            drop.add(h.item.id)
    return [h for h in hits if h.item.id not in drop]


def retrievability_weight(engine: Engine, hits: list[RecallHit], now: float) -> None:
    """Faded memories rank lower: score x (floor + (1 - floor) R)."""
    if not hits:
        return
    r = retrievability(engine, [h.item for h in hits], now)
    floor = engine.config.recall.retrievability_floor
    for h, ri in zip(hits, r.tolist()):
        h.why.retrievability = floor + (1.0 - floor) * ri


def priority_weight(engine: Engine, hits: list[RecallHit]) -> None:
    """PriorityMap feeds ranking: score x (0.9 + 0.2 P), P in [0, 1]."""
    if not engine.on("priority_map"):
        return
    for h in hits:
        h.why.priority = 0.9 + 0.2 * float(h.item.state.get(PRIORITY, 0.5))
