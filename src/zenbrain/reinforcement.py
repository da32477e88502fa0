"""Recall-time mechanisms: how stored state shapes a ranking, and how being recalled
(or reviewed, or used) changes a memory afterwards."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dynamics as dyn
from . import monitor_log
from .clock import HOUR
from .mechanisms import compositional, ebbinghaus, fsrs_schedule, two_factor, vmpfc
from .model import Edge, HistoryEvent, Layer, MemoryItem, RecallHit
from .pma import (
    metacognition,
    neuromodulator,
    prospective,
    reconsolidation,
    triple_copy,
)
from .storage.base import Partition

if TYPE_CHECKING:
    from .coordinator import MemoryCoordinator

COACTIVE_TOP = 5  # hits whose pairwise edges learn from one recall
BOOST_POOL = 3  # the boost looks at edges to the top (BOOST_POOL x k) candidates
CONTEXT_RATE = 0.2  # how fast the partition's context vector follows new queries


# --------------------------------------------------------------------------- ranking hooks
@dataclass(frozen=True)
class EdgesAmong:
    """The edges among a set of memories, as one recall read them: a later step of the
    same recall that needs the edges among a subset takes them from here."""

    ids: frozenset[str]
    edges: list[Edge]

    def among(self, ids: list[str]) -> list[Edge] | None:
        """The edges with both ends in ``ids`` (what ``edges_among`` returns, in some
        order), or None when ``ids`` is not a subset of what was read."""
        wanted = set(ids)
        if not wanted <= self.ids:
            return None
        return [e for e in self.edges if e.src in wanted and e.dst in wanted]


def hebbian_boost(coord: MemoryCoordinator, part: Partition, hits: list[RecallHit], k: int) -> EdgesAmong | None:
    """Two-Factor boost: a candidate linked by strong, mature edges to other strong
    candidates of this query gets score x (1 + alpha * f(w) * I^0.1). Returns the edges
    it read (None when it read none)."""
    if not coord._on("two_factor_hebbian") or len(hits) < 2:
        return None
    tp = coord.config.param("two_factor_hebbian", two_factor.DEFAULTS)
    ranked = sorted(hits, key=lambda h: -h.why.fused)[: max(BOOST_POOL * k, 10)]
    pool = {h.item.id for h in ranked}
    best: dict[str, tuple[float, float]] = {}
    read = coord.storage.edges_among(part, pool)
    for e in read:
        if e.relation != "contradicts":
            for node in (e.src, e.dst):
                if node not in best or e.weight > best[node][0]:
                    best[node] = (e.weight, e.variance)
    for h in hits:
        if h.item.id in best:
            w, var = best[h.item.id]
            h.why.hebbian_boost = _recall_boost(w, var, tp)
    return EdgesAmong(frozenset(pool), read)


def _recall_boost(weight: float, variance: float, tp: two_factor.TwoFactorParams) -> float:
    """``two_factor.recall_boost`` of one edge in plain floats (it runs for every linked
    candidate of every recall); the same operations in the same order, so the same value.
    Anything but two finite floats takes the general path."""
    if type(weight) is float and type(variance) is float and math.isfinite(weight) and math.isfinite(variance):
        w = max(0.0, weight)
        s2 = max(variance, tp.min_variance)
        f = w / (w + tp.boost_half_weight)
        return 1.0 + tp.boost_alpha * f * (1.0 / s2) ** tp.boost_importance_exponent
    return float(two_factor.recall_boost(weight, variance, params=tp))


def retrievability_weight(coord: MemoryCoordinator, hits: list[RecallHit], now: float) -> None:
    if not hits:
        return
    r = dyn.retrievability([h.item for h in hits], now, coord.config.mechanisms,
                           ebb=coord.config.param("ebbinghaus_decay", ebbinghaus.DEFAULTS),
                           copies=coord.config.param("triple_copy", triple_copy.DEFAULT_PARAMS))
    floor = coord.config.recall.retrievability_floor
    # Python floats: the same IEEE products and sums as numpy scalars, without their overhead.
    for h, ri in zip(hits, np.asarray(r, dtype=float).tolist()):
        h.why.retrievability = float(floor + (1.0 - floor) * ri)


def priority_weight(coord: MemoryCoordinator, hits: list[RecallHit]) -> None:
    """PriorityMap feeds ranking: score x (0.9 + 0.2 P), P in [0, 1]."""
    if not coord._on("priority_map"):
        return
    for h in hits:
        p = float(h.item.state.get(dyn.PRIORITY, 0.5))
        h.why.priority = 0.9 + 0.2 * p


def cross_context_similarity(coord: MemoryCoordinator, part: Partition, qvec: np.ndarray, hits: list[RecallHit], reader: str,
                             lexical_share: float) -> None:
    """Compositional context: a memory from another (allowed) context is compared through
    the shared component only, so context-specific detail does not cross the boundary."""
    foreign = [h for h in hits if h.item.context != reader]
    if not foreign or not coord._on("compositional_context"):
        return
    raw = coord.storage.kv_get(part, dyn.KV_COMPOSITIONAL)
    if not raw:
        return
    state = compositional.CompositionalState.from_json(raw)
    vecs = coord.storage.vectors(part, [h.item.id for h in foreign])
    sims = np.atleast_1d(np.asarray(compositional.cross_context_similarity(qvec, vecs, state=state), dtype=float))
    for h, s in zip(foreign, sims):
        h.why.other["cross_context_shared_sim"] = float(s)
        h.why.dense = max(0.0, float(s))
        h.why.fused = h.why.layer_weight * ((1 - lexical_share) * h.why.dense + lexical_share * h.why.lexical)


# --------------------------------------------------------------------------- after recall
@functools.lru_cache(maxsize=256)
def _decode_ctx(text: str) -> np.ndarray:
    """``dyn.decode_vec`` of a stored context vector, remembered by its text (a pure
    function of it): most recalled memories were last reviewed in one of the latest
    contexts. The array is read-only, as it is shared."""
    v = dyn.decode_vec(text)
    v.flags.writeable = False
    return v


def _context_vector(coord: MemoryCoordinator, part: Partition) -> np.ndarray | None:
    return _context_from(coord.storage.kv_get(part, dyn.KV_CONTEXT))


def _context_from(raw: Any) -> np.ndarray | None:
    """The context vector of its stored value ``raw`` (None when unset)."""
    return _decode_ctx(raw) if raw else None


def after_recall(coord: MemoryCoordinator, part: Partition, scope: Any, query: str, qvec: np.ndarray,
                 hits: list[RecallHit], now: float, *, edges: EdgesAmong | None = None) -> dict[str, Any]:
    """Side effects that keep memory alive. One transaction. ``edges``: edges this recall
    has read already (by ``hebbian_boost``), so that they are not read again."""
    info: dict[str, Any] = {}
    ids = [h.item.id for h in hits]
    use_neuro, use_mc, use_pm = coord._on("neuromodulator"), coord._on("metacognitive_monitor"), coord._on("prospective_memory")
    int_key = dyn.intentions_key(scope.context)
    # Every kv value this recall may need, in one read (nothing below writes before the transaction).
    wanted = [dyn.KV_CONTEXT]
    if coord._on("metacognitive_hyperagent"):
        wanted.append(dyn.KV_HYPER)
    if use_neuro:
        wanted.append(dyn.KV_NEURO)
    if use_mc:
        wanted.append(monitor_log.HEAD_KEY)
    if use_pm:
        wanted.append(int_key)
    stored = coord.storage.kv_get_many(part, wanted)
    ctx_prev = _context_from(stored.get(dyn.KV_CONTEXT))
    ctx_now = qvec if ctx_prev is None else (1 - CONTEXT_RATE) * ctx_prev + CONTEXT_RATE * qvec
    ctx_now = ctx_now / max(float(np.linalg.norm(ctx_now)), 1e-12)
    ctx_text = dyn.encode_vec(ctx_now)
    ctx_pe = _pe_operand(ctx_now) if coord._on("vmpfc_fsrs") else None
    ebb_p = coord.config.param("ebbinghaus_decay", ebbinghaus.DEFAULTS)
    fsrs_p = coord.config.param("fsrs", fsrs_schedule.DEFAULTS)
    vm_p = coord.config.param("vmpfc_fsrs", vmpfc.DEFAULTS)
    rc_p = coord.config.param("reconsolidation", reconsolidation.DEFAULT_PARAMS)
    tc_p = coord.config.param("triple_copy", triple_copy.DEFAULT_PARAMS)
    use_ebb, use_fsrs, use_vm = coord._on("ebbinghaus_decay"), coord._on("fsrs"), coord._on("vmpfc_fsrs")
    use_tc, use_rc = coord._on("triple_copy"), coord._on("reconsolidation")
    factor_h: float | None = None  # the HyperAgent's interval factor, read once when first needed
    kv: dict[str, Any] = {dyn.KV_CONTEXT: ctx_text}
    states: dict[str, dict[str, Any]] = {}
    stab = []
    for rank, h in enumerate(hits, start=1):
        item = h.item
        st = dict(item.state)
        spaced = now - item.last_access >= HOUR  # massed repetition does not build stability
        s = item.stability
        if use_ebb and spaced and item.layer is not Layer.CORE:
            s = float(ebbinghaus.review_stability(stability=s, success=True, params=ebb_p))
        stab.append(s)
        if use_fsrs and item.layer not in (Layer.CORE, Layer.WORKING) and spaced:
            rating = fsrs_schedule.grade_from_recall(rank, h.why.dense, params=fsrs_p)
            card, due = fsrs_schedule.review(st.get(dyn.FSRS), rating, now, params=fsrs_p)
            if use_vm:
                card, due = _vmpfc_adjust(st, card, due, ctx_pe, now, vm_p)
            if factor_h is None:
                factor_h = (coord._tuned_value(stored.get(dyn.KV_HYPER), "review_interval_factor", 1.0)
                            if coord._on("metacognitive_hyperagent") else 1.0)
            if factor_h != 1.0:
                due = now + (due - now) * factor_h
                card = fsrs_schedule.with_due(card, due)
            st[dyn.FSRS] = card
            st["due_at"] = due
            st[dyn.REVIEW_CTX] = ctx_text
        if use_tc and dyn.COPIES in st:
            st[dyn.COPIES] = triple_copy.reinforce_stored(st[dyn.COPIES], now=now, quality=min(1.0, max(0.0, h.why.dense)),
                                                          params=tc_p)
        if use_rc:
            st[dyn.LABILE_UNTIL] = reconsolidation.open_window(now=now, params=rc_p)
        states[item.id] = st
    new_edges = _coactivation(coord, part, hits, now, edges) if coord._on("two_factor_hebbian") else []

    if use_neuro:
        raw = stored.get(dyn.KV_NEURO) or neuromodulator.initial_state(now=now).to_dict()
        top = hits[0].why.dense if hits else 0.0
        event, mag = ("confirmation", top) if top >= 0.5 else ("prediction_error", 1.0 - top)
        kv[dyn.KV_NEURO] = neuromodulator.emit_stored(
            raw, event=event, magnitude=float(min(1.0, max(0.05, mag))), now=now,
            params=coord.config.param("neuromodulator", neuromodulator.DEFAULT_PARAMS))
    if use_mc:
        top = hits[0].score if hits else 0.0
        # "Used" proxy until feedback arrives: hits scoring at least half the best one.
        used = sum(1 for h in hits if h.score >= 0.5 * top) if top > 0 else 0
        mp = coord.config.param("metacognitive_monitor", metacognition.DEFAULT_PARAMS)
        retrieval = metacognition.retrieval_event(at=now, returned=len(hits), used=used, query_kind=_query_kind(hits))
        surprise = metacognition.surprise_event(at=now, pe=float(1.0 - max(0.0, hits[0].why.dense)), params=mp) if hits else None
        kv.update(monitor_log.appended(coord.storage, part, mp, retrievals=[retrieval],
                                       surprises=[surprise] if surprise is not None else [],
                                       head=stored.get(monitor_log.HEAD_KEY) or {}))
    if use_pm:
        fired, kv_int = _intentions_fired(coord, stored.get(int_key), now, text=query, embedding=qvec)
        if fired:
            info["intentions"] = fired
        if kv_int is not None:
            kv[int_key] = kv_int

    with coord.storage.transaction(durable=False) as tx:
        tx.touch_recalled(part, ids, now, stab, [states[mid] for mid in ids])
        if new_edges:
            tx.put_edges(part, new_edges)
        tx.kv_put_many(part, kv)
    for h, s in zip(hits, stab):
        h.item.access_count += 1
        h.item.last_access = now
        h.item.stability = s
        h.item.state = states[h.item.id]
    return info


def _vmpfc_adjust(st: dict[str, Any], card: Any, due: float, ctx: tuple[np.ndarray, float], now: float,
                  vp: vmpfc.VmpfcParams) -> tuple[Any, float]:
    """Scale the FSRS interval by the vmPFC factor of the context shift since the memory's
    last review; records the prediction error and factor in ``st``. ``ctx``: the current
    context as ``_pe_operand`` gives it."""
    pe = _context_pe(st[dyn.REVIEW_CTX], ctx, vp) if dyn.REVIEW_CTX in st else vp.missing_context_pe
    factor = float(vmpfc.interval_factor(pe=pe, params=vp))
    due = float(vmpfc.apply(due, now, factor, params=vp))
    st["vmpfc"] = {"pe": pe, "factor": factor}
    return fsrs_schedule.with_due(card, due), due


def _pe_operand(v: np.ndarray) -> tuple[np.ndarray, float]:
    """A context vector as ``vmpfc.prediction_error`` reads it (float64) with its norm."""
    a = np.asarray(v, dtype=float)
    return a, math.sqrt(float(a @ a))


@functools.lru_cache(maxsize=256)
def _stored_pe_operand(text: str) -> tuple[np.ndarray, float]:
    """``_pe_operand`` of a stored context vector, remembered by its text (read-only)."""
    a, norm = _pe_operand(_decode_ctx(text))
    a.flags.writeable = False
    return a, norm


def _context_pe(prev_text: Any, ctx: tuple[np.ndarray, float], vp: vmpfc.VmpfcParams) -> float:
    """``vmpfc.prediction_error`` of the stored context ``prev_text`` and the current one,
    with both norms computed once: the same products and quotient as the general path."""
    a, na = _stored_pe_operand(prev_text)
    b, nb = ctx
    if a.shape != b.shape:
        return float(vmpfc.prediction_error(c_prev=a, c_now=b, params=vp))  # refuses, as before
    norm1 = na * nb
    if norm1 <= 1e-12:
        return float(vp.missing_context_pe)
    return min(1.0, max(0.0, 1.0 - float(a @ b) / norm1))


def _query_kind(hits: list[RecallHit]) -> str:
    """"keyword" when the best hit was found more by its words than by its meaning; the
    HyperAgent compares how well these two kinds of recall go to tune the lexical weight."""
    from .pma.hyperagent import LEXICAL_KIND, SEMANTIC_KIND

    if hits and hits[0].why.lexical > hits[0].why.dense:
        return LEXICAL_KIND
    return SEMANTIC_KIND


def _coactivation(coord: MemoryCoordinator, part: Partition, hits: list[RecallHit], now: float,
                  known: EdgesAmong | None = None) -> list[Edge]:
    """Hebbian learning: the top hits of one recall were active together. ``known``:
    edges read earlier in this recall, used when they cover the top hits."""
    tp = coord.config.param("two_factor_hebbian", two_factor.DEFAULTS)
    top = hits[:COACTIVE_TOP]
    if len(top) < 2:
        return []
    ids = [h.item.id for h in top]
    vecs = coord.storage.vectors(part, ids)
    among = known.among(ids) if known is not None else None
    if among is None:
        among = coord.storage.edges_among(part, ids)
    existing = {(e.src, e.dst): e for e in among if e.relation == "co_recall"}
    best = max(h.score for h in top) or 1.0
    ii, jj = _pair_index(len(top))
    w0, v0, k0 = two_factor.new_edge(params=tp)
    old = []
    for i, j in zip(ii.tolist(), jj.tolist()):
        a, b = ids[i], ids[j]
        e = existing.get((a, b)) or existing.get((b, a))
        old.append(Edge(a, b, "co_recall", w0, v0, k0, now) if e is None else e)
    scores = [h.score for h in top]
    amp = np.maximum(0.0, np.einsum("ij,ij->i", vecs[ii], vecs[jj])).tolist()
    # min(x, 1.0), not min(1.0, x): a NaN stays NaN, as with np.minimum(1.0, x).
    tag = [min((scores[i] + scores[j]) / (2 * best), 1.0) for i, j in zip(ii.tolist(), jj.tolist())]
    w, var2, k = _co_update([e.weight for e in old], [e.variance for e in old], [e.activations for e in old], tag, amp,
                            coord._on("stability_protector"), tp)
    return [Edge(e.src, e.dst, "co_recall", wn, vn, int(kn), now) for e, wn, vn, kn in zip(old, w, var2, k)]


def _co_update(weight: list[Any], variance: list[Any], count: list[Any], tag: list[float], amp: list[float],
               lock_on: bool, tp: two_factor.TwoFactorParams) -> tuple[list[float], list[float], list[int]]:
    """``two_factor.update`` of the edges of one recall (with the StabilityProtector's
    ``variance_lock`` when ``lock_on``), as lists. Finite floats and ints (the common case)
    take plain Python floats: the same IEEE operations in the same order as the arrays."""
    if _finite_floats(weight, variance, tag, amp) and all(type(c) is int for c in count):
        lr, gate, md, mr = tp.learning_rate, tp.lock_gate, tp.maturation_decay, tp.maturation_rate
        lo_w, hi_w, min_var = float(tp.min_weight), float(tp.max_weight), float(tp.min_variance)
        w_out, v_out, k_out = [], [], []
        for w, s2, k, t, a in zip(weight, variance, count, tag, amp):
            lk = min(max(1.0 - min(max(s2, 0.0), 1.0), 0.0), 1.0) if lock_on else 0.0
            t = min(max(t, 0.0), 1.0)
            a = min(max(a, 0.0), 1.0)
            k_new = k + 1
            eta = lr * (1.0 - gate * lk)
            w_out.append(min(max(w + eta * t * a, lo_w), hi_w))
            n = 1.0 / (1.0 + md * k_new)
            v_out.append(max(min_var, s2 * (1.0 - mr * n)))
            k_out.append(k_new)
        return w_out, v_out, k_out
    var = np.array(variance)
    lock = np.asarray(two_factor.variance_lock(var)) if lock_on else np.zeros(len(weight))
    w, var2, k = two_factor.update(np.array(weight), var, np.array(count), np.array(tag), np.array(amp), lock, params=tp)
    return (np.asarray(w, dtype=float).tolist(), np.asarray(var2, dtype=float).tolist(), np.asarray(k).tolist())


def _finite_floats(*columns: list[Any]) -> bool:
    """Whether every value of every column is a finite Python float."""
    for col in columns:
        for x in col:
            if type(x) is not float or not math.isfinite(x):
                return False
    return True


@functools.cache
def _pair_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of every pair i < j of n hits, row by row (shared, read-only)."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    ii = np.array([p[0] for p in pairs])
    jj = np.array([p[1] for p in pairs])
    ii.flags.writeable = jj.flags.writeable = False
    return ii, jj


def _intentions_fired(coord, raw, now, *, text=None, embedding=None):
    """The intentions that fire, and the new stored value of the intentions ``raw`` (None when unset)."""
    if not raw:
        return [], None
    intents = [prospective.Intention.from_dict(d) for d in raw]
    new, firings = prospective.check(intents, now=now, text=text, embedding=None if embedding is None else list(map(float, embedding)),
                                     params=coord.config.param("prospective_memory", prospective.ProspectiveParams()))
    return [f.to_dict() for f in firings], [i.to_dict() for i in new]


# --------------------------------------------------------------------------- review / use
def review(coord: MemoryCoordinator, part: Partition, item: MemoryItem, grade: Any, now: float) -> MemoryItem:
    """Explicit feedback: FSRS review (vmPFC-adjusted), Ebbinghaus stability, TripleCopy."""
    return review_many(coord, part, [(item, grade)], now)[0]


def review_many(coord: MemoryCoordinator, part: Partition, reviews: list[tuple[MemoryItem, Any]],
                now: float) -> list[MemoryItem]:
    """Several reviews at ``now``, written in one transaction. Each review reads only its
    own memory and the session context, which reviews do not change, so the result is
    the same as reviewing one after the other."""
    ratings = [fsrs_schedule.grade_from_feedback(g) for _, g in reviews]  # bad grades fail before any write
    ctx = _context_vector(coord, part) if coord._on("fsrs") and coord._on("vmpfc_fsrs") else None
    ctx_text = dyn.encode_vec(ctx) if ctx is not None else None
    ctx_pe = _pe_operand(ctx) if ctx is not None else None
    ebb_p = coord.config.param("ebbinghaus_decay", ebbinghaus.DEFAULTS)
    fp = coord.config.param("fsrs", fsrs_schedule.DEFAULTS)
    vp = coord.config.param("vmpfc_fsrs", vmpfc.DEFAULTS)
    tc_p = coord.config.param("triple_copy", triple_copy.DEFAULT_PARAMS)
    use_ebb, use_fsrs, use_tc = coord._on("ebbinghaus_decay"), coord._on("fsrs"), coord._on("triple_copy")
    out: list[MemoryItem] = []
    for (item, _), rating in zip(reviews, ratings):
        success = int(rating) >= 2
        st = dict(item.state)
        if use_ebb and item.layer is not Layer.CORE:
            item.stability = float(ebbinghaus.review_stability(stability=item.stability, success=success, params=ebb_p))
        if use_fsrs:
            card, due = fsrs_schedule.review(st.get(dyn.FSRS), rating, now, params=fp)
            if ctx is not None:
                card, due = _vmpfc_adjust(st, card, due, ctx_pe, now, vp)
                st[dyn.REVIEW_CTX] = ctx_text
            st[dyn.FSRS] = card
            st["due_at"] = due
        if use_tc and dyn.COPIES in st and success:
            st[dyn.COPIES] = triple_copy.reinforce_stored(st[dyn.COPIES], now=now, params=tc_p)
        item.state = st
        item.last_access = now
        out.append(item)
    if out:
        with coord.storage.transaction() as tx:
            tx.update_states(part, {item.id: item.state for item in out}, stability=[i.stability for i in out],
                             last_access=[now] * len(out))
            tx.log_many(part, [HistoryEvent(item.id, now, "reviewed", {"rating": int(rating), "due_at": item.state.get("due_at")})
                               for item, rating in zip(out, ratings)])
    return out


def record_outcome(coord: MemoryCoordinator, part: Partition, item: MemoryItem, success: bool, now: float) -> MemoryItem:
    """Procedural memory: successful use strengthens a skill, failure weakens it."""
    st = dict(item.state)
    out = dict(st.get(dyn.OUTCOMES, {"ok": 0, "fail": 0}))
    out["ok" if success else "fail"] += 1
    st[dyn.OUTCOMES] = out
    item.strength = float(min(1.0, item.strength + 0.1 * (1 - item.strength)) if success else max(0.05, item.strength * 0.8))
    if coord._on("ebbinghaus_decay"):
        item.stability = float(ebbinghaus.review_stability(stability=item.stability, success=success,
                                                           params=coord.config.param("ebbinghaus_decay", ebbinghaus.DEFAULTS)))
    if coord._on("triple_copy") and dyn.COPIES in st and success:
        st[dyn.COPIES] = triple_copy.reinforce_stored(st[dyn.COPIES], now=now,
                                                      params=coord.config.param("triple_copy", triple_copy.DEFAULT_PARAMS))
    item.state = st
    with coord.storage.transaction() as tx:
        tx.update_columns(part, [item.id], strength=[item.strength], stability=[item.stability], last_access=[now])
        tx.update_state(part, item.id, st)
        tx.log(part, HistoryEvent(item.id, now, "used", {"success": bool(success), "outcomes": out}))
    return item
