"""What being recalled changes: the side effects that keep memory alive.

After ``recall`` has ranked its hits (and unless it was asked not to touch them), one
transaction writes, for each hit the recall rehearsed (``rehearsed``: the query and the
hit share words that say something): access counts and times; spaced recalls grow Ebbinghaus stability
and count as FSRS reviews graded by rank and similarity (with the vmPFC interval
factor of the topic's drift since the memory's last review, and the HyperAgent's
interval factor); TripleCopy reinforcement; the reconsolidation window; Hebbian
co-activation edges among the top hits; the neuromodulator event; the
MetacognitiveMonitor's log; prospective-memory cues; and the topic vector that follows
the queries.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from ..clock import HOUR
from ..engine import Engine
from ..mechanisms import ebbinghaus, fsrs_schedule, information, two_factor, vmpfc
from ..model import Edge, Layer, MemoryItem, RecallHit, Scope
from ..pma import (
    metacognition,
    neuromodulator,
    prospective,
    reconsolidation,
    triple_copy,
)
from ..pma.hyperagent import LEXICAL_KIND, SEMANTIC_KIND
from ..state import (
    COPIES,
    DUE_AT,
    FSRS,
    KV_HYPER,
    KV_INFORMATION,
    KV_INFORMATION_VERSION,
    KV_NEURO,
    KV_TOPIC,
    LABILE_UNTIL,
    RELATION_CO_RECALL,
    REVIEW_TOPIC,
    VMPFC,
    MemoryState,
    decode_vec,
    encode_vec,
    intentions_key,
)
from ..storage.base import Partition
from ..text import token_set
from . import monitor_log
from .tuned import tuned_from

UNREAD: Final = object()  # a partition record the caller has not read


def topic_vector(engine: Engine, part: Partition) -> np.ndarray | None:
    """The running average of recent query vectors (None before the first recall)."""
    raw = engine.store.kv_get(part, KV_TOPIC)
    return decode_vec(raw) if raw else None


def vmpfc_adjust(st: MemoryState, card: Any, due: float, topic: np.ndarray, now: float,
                 params: vmpfc.VmpfcParams) -> tuple[Any, float]:
    """Scale an FSRS interval by the vmPFC factor of the topic's drift since the memory's
    last review; records the prediction error and the factor in ``st``."""
    prev = st.get(REVIEW_TOPIC)
    pe = float(vmpfc.prediction_error(c_prev=decode_vec(prev), c_now=topic, params=params)) if prev \
        else params.missing_context_pe
    factor = float(vmpfc.interval_factor(pe=pe, params=params))
    due = float(vmpfc.apply(due, now, factor, params=params))
    st[VMPFC] = {"pe": pe, "factor": factor}
    return fsrs_schedule.with_due(card, due), due


def scaled_due(card: Any, due: float, now: float, factor: float) -> tuple[Any, float]:
    """An FSRS interval scaled by the HyperAgent's ``review_interval_factor``."""
    if factor == 1.0:
        return card, due
    due = now + (due - now) * factor
    return fsrs_schedule.with_due(card, due), due


def records_read(engine: Engine, scope: Scope) -> list[str]:
    """The partition records ``after_recall`` reads (a caller may read them beforehand,
    with its own, in one call)."""
    keys = [KV_TOPIC, KV_HYPER, KV_NEURO, monitor_log.HEAD_KEY, KV_INFORMATION_VERSION]
    if engine.on("prospective_memory"):
        keys.append(intentions_key(scope.context))
    return keys


def after_recall(engine: Engine, part: Partition, scope: Scope, query: str, qvec: np.ndarray,
                 hits: list[RecallHit], now: float, candidates: Sequence[MemoryItem] = (),
                 records: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write what this recall changes, in one transaction; returns what the caller reports
    (the intentions the query fired). ``candidates``: the memories the hits were chosen
    from (the monitor compares their recent share with the hits'). ``records``: the
    partition records of ``records_read`` as the caller read them (every one that is set;
    None: read here)."""
    if records is None:
        records = engine.store.kv_get_many(part, records_read(engine, scope))
    info: dict[str, Any] = {}
    raw_topic = records.get(KV_TOPIC)
    prev = decode_vec(raw_topic) if raw_topic else None
    rate = engine.config.recall.topic_rate
    topic = qvec if prev is None else (1 - rate) * prev + rate * qvec
    topic = topic / max(float(np.linalg.norm(topic)), 1e-12)
    kv: dict[str, Any] = {KV_TOPIC: encode_vec(topic)}

    interval_factor = tuned_from(engine, records.get(KV_HYPER), "review_interval_factor", 1.0)
    topic_text = encode_vec(topic)
    states: dict[str, MemoryState] = {}
    stability: list[float] = []
    credited = rehearsed(engine, part, query, hits, version=records.get(KV_INFORMATION_VERSION))
    used = [h for h, ok in zip(hits, credited) if ok]
    ranks = [rank for rank, ok in enumerate(credited, start=1) if ok]
    for h, (st, s) in zip(used, states_after_use(engine, [h.item for h in used], now, ranks=ranks,
                                                 similarities=[h.why.dense for h in used], topic=topic,
                                                 topic_text=topic_text, interval_factor=interval_factor)):
        states[h.item.id] = st
        stability.append(s)
    new_edges = coactivation(engine, part, hits, now) if engine.on("two_factor_hebbian") else []

    if engine.on("neuromodulator"):
        raw = records.get(KV_NEURO)
        state = neuromodulator.NeuromodulatorState.from_dict(raw) if raw else neuromodulator.initial_state(now=now)
        top = hits[0].why.dense if hits else 0.0
        event, mag = ("confirmation", top) if top >= 0.5 else ("prediction_error", 1.0 - top)
        kv[KV_NEURO] = neuromodulator.emit(state, event=event, magnitude=float(min(1.0, max(0.05, mag))), now=now,
                                           params=engine.config.params.neuromodulator).to_dict()
    if engine.on("metacognitive_monitor"):
        mp = engine.config.params.metacognitive_monitor
        # Which results were used is not known yet: feedback on them rates this recall later
        # (``metacognition.resolve_use``); a recall that returned nothing is a miss now.
        retrieval = metacognition.retrieval_event(
            at=now, returned=len(hits), used=None if hits else 0, query_kind=query_kind(hits),
            ids=[h.item.id for h in hits],
            recent_share=metacognition.recent_share([h.item.created_at for h in hits], now=now, params=mp),
            recent_base=metacognition.recent_share([c.created_at for c in candidates], now=now, params=mp),
            params=mp)
        surprise = (metacognition.surprise_event(at=now, pe=float(1.0 - max(0.0, hits[0].why.dense)), params=mp)
                    if hits else None)
        kv.update(monitor_log.appended(engine.store, part, mp, retrievals=[retrieval],
                                       surprises=[surprise] if surprise is not None else [],
                                       head=records.get(monitor_log.HEAD_KEY) or {}))
    if engine.on("prospective_memory"):
        key = intentions_key(scope.context)
        raw_int = records.get(key)
        if raw_int:
            intents = [prospective.Intention.from_dict(d) for d in raw_int]
            kept, firings = prospective.check(
                intents, now=now, text=query, embedding=[float(x) for x in qvec],
                params=engine.config.params.prospective_memory)
            if firings:
                info["intentions"] = [f.to_dict() for f in firings]
            kv[key] = [i.to_dict() for i in kept]

    ids = [h.item.id for h in used]
    with engine.store.transaction(durable=False) as tx:
        if ids:  # one statement per memory: its access, stability and state
            tx.record_access(part, ids, now, states=states, stability=stability)
        if new_edges:
            tx.put_edges(part, new_edges)
        tx.kv_put(part, kv)
    for h, s in zip(used, stability):
        h.item.access_count += 1
        h.item.last_access = now
        h.item.stability = s
        h.item.state = states[h.item.id]
    return info


def rehearsed(engine: Engine, part: Partition, query: str, hits: Sequence[RecallHit],
              version: Any = UNREAD) -> list[bool]:
    """Which hits this recall rehearses. Retrieval practice strengthens what a recall
    carried, priced in words said once (``mechanisms.information``) with the frequencies
    the last decay saved: a hit is rehearsed when the query and it share at least
    ``rehearsal_min_words``. "Thanks, so nice!" finding "Thanks so much, so nice of you!"
    shares words every piece of small talk uses and is no practice of it, nor is a hit
    found by meaning alone; so small talk fades on schedule instead of being kept fresh by
    the agent's own look-ups. Every hit is rehearsed (the paper) when value-aware
    forgetting is off (``ebbinghaus_decay`` off or ``rehearsal_min_words`` 0) and before
    the first decay. ``version``: the stored ``KV_INFORMATION_VERSION`` when the caller has
    read it already."""
    ebb = engine.config.params.ebbinghaus_decay
    if not hits or not engine.on("ebbinghaus_decay") or ebb.rehearsal_min_words <= 0:
        return [True] * len(hits)
    ref = saved_reference(engine, part, version)
    if ref is None:
        return [True] * len(hits)
    q = token_set(query)
    return [information.rehearses(ref, q, token_set(h.item.content), min_shared=ebb.rehearsal_min_words)
            for h in hits]


# The frequencies decay saved, decoded once per version: (store, version, reference) per
# store and partition (a recall reads the small version key; the frequencies are ~60 kB).
_REFERENCES: OrderedDict[tuple[int, Partition], tuple[weakref.ref[Any], Any, information.InformationReference]] = \
    OrderedDict()
_REFERENCES_KEPT = 64


def saved_reference(engine: Engine, part: Partition, version: Any = UNREAD) -> information.InformationReference | None:
    """The word frequencies the last ``decay()`` saved for the partition (None before it).
    ``version``: the stored ``KV_INFORMATION_VERSION`` when the caller has read it already
    (None: there is none)."""
    if version is UNREAD:
        version = engine.store.kv_get(part, KV_INFORMATION_VERSION)
    if version is None:
        return None
    key = (id(engine.store), part)
    hit = _REFERENCES.get(key)
    if hit is not None and hit[0]() is engine.store and hit[1] == version:
        _REFERENCES.move_to_end(key)
        return hit[2]
    raw = engine.store.kv_get(part, KV_INFORMATION)
    if not raw:
        return None
    ref = information.InformationReference.from_dict(raw)
    _REFERENCES[key] = (weakref.ref(engine.store), version, ref)
    while len(_REFERENCES) > _REFERENCES_KEPT:
        _REFERENCES.popitem(last=False)
    return ref


def state_after_use(engine: Engine, item: MemoryItem, now: float, *, rank: int, similarity: float,
                    topic: np.ndarray | None, topic_text: str | None = None,
                    interval_factor: float = 1.0) -> tuple[MemoryState, float]:
    """A memory's state and stability after a use at ``now`` (a recall that ranked it at
    ``rank`` with dense ``similarity`` to the query): ``states_after_use`` of one memory."""
    return states_after_use(engine, [item], now, ranks=[rank], similarities=[similarity], topic=topic,
                            topic_text=topic_text, interval_factor=interval_factor)[0]


def states_after_use(engine: Engine, items: Sequence[MemoryItem], now: float, *, ranks: Sequence[int],
                     similarities: Sequence[float], topic: np.ndarray | None, topic_text: str | None = None,
                     interval_factor: float = 1.0) -> list[tuple[MemoryState, float]]:
    """The states and stabilities of memories after a use at ``now`` (a recall that ranked
    each at its rank with its dense similarity to the query): a spaced use grows Ebbinghaus
    stability and counts as an FSRS review graded by rank and similarity (vmPFC-adjusted
    when there is a ``topic``); TripleCopy is reinforced and the reconsolidation window
    opens. Ebbinghaus and TripleCopy run once over all the memories (vectorised); FSRS
    reviews each card. The memories themselves are not changed."""
    states = [item.state.copy() for item in items]
    stability = [item.stability for item in items]
    spaced = [now - item.last_access >= HOUR for item in items]  # massed repetition does not build stability
    if engine.on("ebbinghaus_decay"):
        grow = [j for j, item in enumerate(items) if spaced[j] and item.layer is not Layer.CORE]
        if grow:
            grown = np.asarray(ebbinghaus.review_stability(
                stability=np.array([stability[j] for j in grow], dtype=float), success=True,
                params=engine.config.params.ebbinghaus_decay), dtype=float)
            for j, s in zip(grow, grown.tolist()):
                stability[j] = s
    if engine.on("fsrs"):
        fsrs_p = engine.config.params.fsrs
        vmpfc_on = engine.on("vmpfc_fsrs")
        if topic is not None and topic_text is None:
            topic_text = encode_vec(topic)
        for j, item in enumerate(items):
            if not spaced[j] or item.layer in (Layer.CORE, Layer.WORKING):
                continue
            st = states[j]
            rating = fsrs_schedule.grade_from_recall(ranks[j], similarities[j], params=fsrs_p)
            card, due = fsrs_schedule.review(st.get(FSRS), rating, now, params=fsrs_p)
            if vmpfc_on and topic is not None:
                card, due = vmpfc_adjust(st, card, due, topic, now, engine.config.params.vmpfc_fsrs)
            card, due = scaled_due(card, due, now, interval_factor)
            st[FSRS] = card
            st[DUE_AT] = due
            if topic_text is not None:
                st[REVIEW_TOPIC] = topic_text
    if engine.on("triple_copy"):
        copied = [j for j, st in enumerate(states) if COPIES in st]
        if copied:
            reinforced = triple_copy.reinforce_many(
                [triple_copy.CopyState.from_dict(states[j][COPIES]) for j in copied], now=now,
                qualities=[min(1.0, max(0.0, similarities[j])) for j in copied], params=engine.config.params.triple_copy)
            for j, c in zip(copied, reinforced):
                states[j][COPIES] = c.to_dict()
    if engine.on("reconsolidation"):
        labile_until = reconsolidation.open_window(now=now, params=engine.config.params.reconsolidation)
        for st in states:
            st[LABILE_UNTIL] = labile_until
    return list(zip(states, stability))


def query_kind(hits: list[RecallHit]) -> str:
    """"keyword" when the best hit was found more by its words than by its meaning; the
    HyperAgent compares how well these two kinds of recall go to tune the lexical weight."""
    if hits and hits[0].why.lexical > hits[0].why.dense:
        return LEXICAL_KIND
    return SEMANTIC_KIND


def coactivation(engine: Engine, part: Partition, hits: list[RecallHit], now: float) -> list[Edge]:
    """Hebbian learning: the top hits of one recall were active together; their pairwise
    co-recall edges are updated by the Two-Factor rule (tag: the pair's mean score relative
    to the best; amplitude: their cosine; StabilityProtector: the variance lock)."""
    top = hits[:engine.config.recall.coactive_top]
    if len(top) < 2:
        return []
    tp = engine.config.params.two_factor_hebbian
    ids = [h.item.id for h in top]
    vecs = engine.store.vectors(part, ids)
    existing = {(e.src, e.dst): e for e in engine.store.edges(part, ids, both_ends=True)
                if e.relation == RELATION_CO_RECALL}
    ii, jj = np.triu_indices(len(top), 1)
    w0, v0, k0 = two_factor.new_edge(params=tp)
    old = []
    for i, j in zip(ii.tolist(), jj.tolist()):
        a, b = ids[i], ids[j]
        e = existing.get((a, b)) or existing.get((b, a))
        old.append(Edge(a, b, RELATION_CO_RECALL, w0, v0, k0, now) if e is None else e)
    scores = np.array([h.score for h in top])
    best = float(scores.max()) or 1.0
    tag = np.minimum((scores[ii] + scores[jj]) / (2 * best), 1.0)
    amp = np.maximum(0.0, np.einsum("ij,ij->i", vecs[ii], vecs[jj]))
    variance = np.array([e.variance for e in old], dtype=float)
    lock = (np.asarray(two_factor.variance_lock(variance), dtype=float) if engine.on("stability_protector")
            else np.zeros(len(old)))
    w, var2, k = two_factor.update(np.array([e.weight for e in old], dtype=float), variance,
                                   np.array([e.activations for e in old]), tag, amp, lock, params=tp)
    return [Edge(e.src, e.dst, RELATION_CO_RECALL, float(wn), float(vn), int(kn), now)
            for e, wn, vn, kn in zip(old, np.atleast_1d(w), np.atleast_1d(var2), np.atleast_1d(k))]
