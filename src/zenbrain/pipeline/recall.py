"""Recall: classify the query, gather candidates, fuse, rank, de-duplicate, and (unless
read-only) let being recalled change the memories.

1. Candidates: dense top-K of every layer, BM25 top-K, the scope's core memories, and
   (when the fusion recipe expands to neighbours) the turns next to them in their session.
   Archived memories are candidates only when the query cues them (``archive_cue``) or
   when they are next to a candidate in its session.
2. Fusion by the configured recipe (``retrieval.fusion``, ``RecallParams.recipe``): dense
   and lexical evidence normalised and weighted, a strong turn lending to its neighbours,
   a preference for the speakers the query names and for memories of the time it names;
   then the query type's layer weight (and the cross-context weight).
3. Ranking factors (``ranking``): recency direction, the Two-Factor boost,
   retrievability, priority, and the belief in contested facts; a broad query's top
   places spread over exchanges.
4. De-duplication of near-identical content, the top k kept.
5. Side effects (``recall_effects``), in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from ..clock import DAY
from ..engine import Engine
from ..errors import ValidationError
from ..mechanisms import information
from ..model import Kind, Layer, MemoryItem, RecallHit, Scope, ScoreBreakdown
from ..results import RecallResult
from ..retrieval import fusion
from ..retrieval.dates import TimeWindow
from ..retrieval.query import classify
from ..retrieval.turn_context import named_speakers
from ..state import (
    CONSOLIDATED_INTO,
    KV_HYPER,
    KV_INFORMATION_VERSION,
    KV_SPEAKERS,
    MENTIONED,
)
from ..storage.base import Filter, Partition
from ..text import jaccard, token_set
from ..validation import check_content, check_k, check_number
from . import ranking, turns
from .access import partition_of, read_filter
from .recall_effects import UNREAD, after_recall, records_read, saved_reference
from .tuned import tuned_from


def layer_weights(engine: Engine, query_type: str) -> dict[Layer, float]:
    """The query type's layer weights as they enter the score: each w as w ** strength
    (``RecallParams.layer_weight_strength``), a prior that reorders near-ties; none with
    ``query_aware_fusion`` off."""
    if not engine.on("query_aware_fusion"):
        return {}
    strength = engine.config.recall.layer_weight_strength
    return {layer: float(w) ** strength for layer, w in engine.config.layer_weights.get(query_type, {}).items()}


def layer_weight_of(item: MemoryItem, weights: dict[Layer, float]) -> float:
    """The query type's layer weight of one memory. A memory someone said (it has a speaker)
    is the episode of its saying wherever what it states routed it (core for an identity or
    a preference, procedural for a skill): it takes the better of its own layer's weight and
    the episodic one. A temporal query then ranks a dated statement like any other turn said
    at its time, and a factual or identity query still prefers it as a core memory."""
    w = weights.get(item.layer, 1.0)
    if item.speaker is not None and item.layer is not Layer.EPISODIC:
        w = max(w, weights.get(Layer.EPISODIC, 1.0))
    return float(w)


def _layer_set(engine: Engine, layers: Iterable[Layer | str] | Layer | str | None) -> frozenset[Layer] | None:
    if isinstance(layers, (str, Layer)):
        layers = [layers]
    chosen = frozenset(Layer.parse(x) for x in layers) if layers is not None else None
    if engine.config.disabled_layers:
        chosen = (chosen if chosen is not None else frozenset(Layer)) - engine.config.disabled_layers
    return chosen


def _time_range(time_range: Any) -> tuple[float | None, float | None]:
    if time_range is None:
        return None, None
    if not isinstance(time_range, (tuple, list)) or len(time_range) != 2:
        raise ValidationError("time_range must be a (start, end) pair; either may be None")
    after, before = time_range
    return (None if after is None else check_number("time_range start", after),
            None if before is None else check_number("time_range end", before))


def _neighbours(engine: Engine, part: Partition, items: dict[str, MemoryItem], flt: Filter,
                radius: int) -> list[MemoryItem]:
    """The turns within ``radius`` of the candidates in their sessions, that the reader may
    see and that are not candidates yet."""
    wanted = frozenset((i.session_id, i.position + d) for i in items.values()
                       if i.session_id is not None and i.position is not None
                       for d in range(-radius, radius + 1) if d)
    if not wanted:
        return []
    return [m for m in engine.store.query(part, replace(flt, turns=wanted)) if m.id not in items]


def _in_window(item: MemoryItem, window: TimeWindow) -> bool:
    """Whether a memory happened in, or speaks of, the window."""
    t = item.event_time if item.event_time is not None else item.created_at
    if window.contains(t):
        return True
    return any(window.overlaps(TimeWindow(a, b)) for a, b in item.state.get(MENTIONED, ()))


def archive_cue(engine: Engine, part: Partition, query: str,
                version: Any = UNREAD) -> Callable[[MemoryItem], bool] | None:
    """Cue-dependent forgetting: an archived memory is out of reach of ordinary recall, but a
    query that shares its specific words (``archive_cue_words`` words said once, priced with
    the frequencies the last decay saved) brings it back, and the use that follows lets
    decay restore it. None when no cue can reach the archive (``ebbinghaus_decay`` off, the
    parameter 0, or no decay yet)."""
    words = engine.config.params.ebbinghaus_decay.archive_cue_words
    if words <= 0 or not engine.on("ebbinghaus_decay"):
        return None
    ref = saved_reference(engine, part, version)
    if ref is None:
        return None
    q = token_set(query)
    return lambda m: information.rehearses(ref, q, token_set(m.content), min_shared=words)


def brought_back(candidates: dict[str, MemoryItem],
                 cue: Callable[[MemoryItem], bool] | None) -> Callable[[MemoryItem], bool]:
    """Which candidates a recall may return: every active one, and an archived one the query
    cues (``archive_cue``) or whose schema is among the active candidates. A schema carries
    the gist of the episodes consolidation folded into it, and the IB budget archives those
    that no longer earn their keep beside it; reaching the schema brings its episodes back
    into the competition, where they are scored as any candidate (pattern completion: the
    gist is the cue to its episodes)."""
    schemas = {i for i, m in candidates.items() if m.kind is Kind.SCHEMA and not m.archived}

    def admit(m: MemoryItem) -> bool:
        return not m.archived or (cue is not None and cue(m)) or m.state.get(CONSOLIDATED_INTO) in schemas

    return admit


def recall(
    engine: Engine,
    scope: Scope,
    query: str,
    k: int = 10,
    *,
    layers: Iterable[Layer | str] | Layer | str | None = None,
    time_range: tuple[float | None, float | None] | None = None,
    include_archived: bool = False,
    touch: bool = True,
    as_of: float | None = None,
    include_superseded: bool = False,
) -> RecallResult:
    """The top-k memories for a query, each with a score breakdown. Only what holds now is
    recalled, unless ``as_of`` asks what held at a past time (memories begun by then and not
    superseded by then) or ``include_superseded`` lets replaced memories compete too. A memory
    superseded by a detected change stays recallable when the query names what only it says
    (``ranking.drop_superseded``)."""
    query = check_content(query, engine.config.max_content_chars)
    k = check_k(k)
    part = partition_of(scope)
    # Embedded meanwhile where the embedder runs outside the GIL: the keyword search below
    # does not need the vector.
    query_vector = engine.query_vector_soon(query)
    now = engine.clock.now()
    info = classify(query, reference=math.floor(now / DAY) * DAY)  # relative words read against today
    layer_set = _layer_set(engine, layers)
    after, before = _time_range(time_range)
    if as_of is not None:
        as_of = check_number("as_of", as_of)
        before = as_of if before is None else min(before, as_of)
    only_current = as_of is None and not include_superseded
    # The partition records this recall reads (the HyperAgent's tuned values, the speakers,
    # the version of the word frequencies decay saved, what the side effects update), in one read.
    records = engine.store.kv_get_many(part, [KV_HYPER, KV_SPEAKERS, KV_INFORMATION_VERSION,
                                              *(records_read(engine, scope) if touch else ())])
    cue = None if include_archived else archive_cue(engine, part, query, records.get(KV_INFORMATION_VERSION))
    # Archived memories are searched when something can bring them back: the query's cue,
    # or a schema the recall reaches (the IB budget archives episodes a schema covers).
    search_archived = include_archived or cue is not None or engine.on("ib_budget")
    flt = read_filter(engine, scope, layers=layer_set, include_archived=search_archived,
                      event_after=after, event_before=before, current_at=as_of)
    rp = engine.config.recall
    recipe = turns.recipe(engine)
    per_layer = max(rp.per_layer_k, rp.candidate_factor * k, recipe.dense_candidates)

    # 1. Candidates: keyword matches and core memories, then (the vector ready) dense matches.
    lexical: dict[str, float] = {}
    use_lexical = engine.on("bm25_hybrid") and rp.lexical_k > 0
    if use_lexical:
        lexical = dict(engine.store.lexical_search(part, query, max(rp.lexical_k, recipe.lexical_candidates), flt))
    core_items = [] if Layer.CORE in engine.config.disabled_layers else engine.store.query(
        part, read_filter(engine, scope, layers=frozenset({Layer.CORE}),
                          current_at=now if only_current else as_of))
    # While the query is still being embedded, the keyword matches' rows are read too.
    fetched = {i.id: i for i in engine.store.get(part, list(lexical))} if query_vector.pending and lexical else {}
    qvec = query_vector()
    dense = dict(engine.store.vector_search(part, qvec, per_layer, flt, per_layer=True))
    cand_ids = list(dict.fromkeys([*dense, *lexical]))
    # Core memories always compete, unless the caller narrowed recall to other layers or a time range.
    if (layer_set is None or Layer.CORE in layer_set) and time_range is None and as_of is None:
        cand_ids += [c.id for c in core_items if c.id not in dense and c.id not in lexical]
    if not cand_ids:
        # A recall that finds nothing still counts: a miss for the monitor, a surprise for
        # the neuromodulators, a topic shift, and a cue for prospective memory.
        extra = after_recall(engine, part, scope, query, qvec, [], now, records=records) if touch else {}
        return RecallResult([], query_type=info.type, core=core_items, info={"candidates": 0, **extra})
    rest = [c for c in cand_ids if c not in fetched]
    if rest:
        fetched.update((i.id, i) for i in engine.store.get(part, rest))
    items = {c: fetched[c] for c in cand_ids if c in fetched}
    # Archived memories the query does not cue, and whose schema it does not reach, stay
    # forgotten...
    admit = None if include_archived or not search_archived else brought_back(items, cue)
    if admit is not None:
        items = {i: m for i, m in items.items() if admit(m)}
    # ...unless they surround a turn the recall reached: recalling a moment of a
    # conversation brings back what was said around it.
    if recipe.neighbour_weight > 0:
        for m in _neighbours(engine, part, items, flt, recipe.neighbour_radius):
            items[m.id] = m
    cand_ids = [c for c in cand_ids if c in items] + [m for m in items if m not in dense and m not in lexical
                                                      and m not in cand_ids]
    missing = [c for c in cand_ids if c not in dense]  # their dense similarity, from the index
    if missing:
        for c, v in zip(missing, engine.store.vectors(part, missing) @ qvec):
            dense[c] = float(v)
    # A candidate outside the lexical top K counts as no keyword match. Scoring those exactly
    # took a second BM25 query, half of a recall's lexical time at 10k memories, for LoCoMo
    # dev R@5 0.721 against 0.726 without it (R@10 0.817 against 0.811).
    pool = [items[c] for c in cand_ids]
    # Compositional context: another context's memory is compared through the shared part only.
    shared = ranking.cross_context_dense(engine, part, qvec, pool, scope.context)
    dense.update(shared)

    # 2. Fusion.
    share = tuned_from(engine, records.get(KV_HYPER), "lexical_weight", rp.lexical_weight) if lexical else 0.0
    total = recipe.dense_weight + recipe.lexical_weight
    weighted = recipe.with_(dense_weight=(1.0 - share) * total, lexical_weight=share * total)
    d = np.array([dense.get(c, 0.0) for c in cand_ids])
    lx = np.array([lexical.get(c, 0.0) for c in cand_ids])
    lex_factor = ranking.subject_lexical(engine, query, pool, lx)
    base = fusion.nonnegative(fusion.fuse(d, lx, weighted, lex_factor))
    lex_method = weighted.lexical_normalization or weighted.normalization
    lex_norm = fusion.normalize(lx, lex_method if lex_method != "rrf" else "max", present=lx > 0) * lex_factor
    scores = base
    parts: dict[str, np.ndarray] = {}
    if recipe.neighbour_weight > 0:
        nb = fusion.neighbour_index([i.session_id for i in pool], [-1 if i.position is None else i.position
                                                                    for i in pool], recipe.neighbour_radius)
        expanded = fusion.expand_to_neighbours(scores, nb, recipe.neighbour_weight)
        parts["neighbours"] = expanded - scores
        scores = expanded
    if recipe.speaker_bonus > 0:
        named = named_speakers(query, list(records.get(KV_SPEAKERS) or []))
        mask = np.array([i.speaker in named for i in pool]) if named else np.zeros(len(pool), bool)
        if mask.any():
            boosted = fusion.boost(scores, mask, recipe.speaker_bonus)
            parts["speaker"] = boosted - scores
            scores = boosted
    window_ranked = recipe.time_bonus > 0 and info.window is not None
    if window_ranked:
        mask = np.array([_in_window(i, info.window) for i in pool])  # type: ignore[arg-type]
        if mask.any():
            boosted = fusion.boost(scores, mask, recipe.time_bonus)
            parts["time"] = boosted - scores
            scores = boosted
    weights = layer_weights(engine, info.type)
    hits: list[RecallHit] = []
    for j, (cid, item) in enumerate(zip(cand_ids, pool)):
        w = layer_weight_of(item, weights)
        if item.context != scope.context:
            w *= rp.cross_context_weight
        why = ScoreBreakdown(dense=max(0.0, float(d[j])), lexical=float(lex_norm[j]), layer_weight=w,
                             fused=w * float(scores[j]))
        why.other["fusion"] = float(base[j])
        if cid in shared:
            why.other["cross_context_shared_sim"] = float(shared[cid])
        for name, delta in parts.items():
            if delta[j]:
                why.other[name] = float(delta[j])
        hits.append(RecallHit(item, why.fused, why))

    # 3. Ranking factors.
    ranking.temporal_adjust(engine, hits, info, window=not window_ranked)
    ranking.hebbian_boost(engine, part, hits, k)
    ranking.retrievability_weight(engine, hits, now, records.get(KV_HYPER))
    ranking.priority_weight(engine, hits)
    ranking.belief_weight(engine, part, hits)
    for h in hits:
        b = h.why
        h.score = b.final = b.fused * b.temporal * b.hebbian_boost * b.retrievability * b.priority * b.belief
    hits.sort(key=lambda h: (-h.score, h.item.id))
    hits = ranking.subject_focus(engine, part, hits, query, qvec, k)
    if only_current:
        hits = ranking.drop_superseded(engine, part, hits, query, flt, admit)
        hits = ranking.order_versions(engine, part, hits, query, info, k)
    hits = ranking.answer_focus(engine, hits, query, k)
    # Room for the de-duplication below to drop some.
    hits = ranking.spread_exchanges(engine, hits, info, recipe.neighbour_radius, places=2 * k)
    hits = ranking.schemas_yield(hits)

    # 4. De-duplicate near-identical content, keep the better one.
    out: list[RecallHit] = []
    kept_tokens: list[frozenset[str]] = []
    for h in hits:
        toks = token_set(h.item.content)
        if any(jaccard(toks, t) > rp.dedup_jaccard for t in kept_tokens):
            continue
        out.append(h)
        kept_tokens.append(toks)
        if len(out) == k:
            break

    # 5. Side effects.
    extra = after_recall(engine, part, scope, query, qvec, out, now, pool, records=records) if touch else {}
    return RecallResult(
        out,
        query_type=info.type,
        core=core_items,
        info={"candidates": len(cand_ids), "dense": len(dense), "lexical": len(lexical), "window": info.window,
              "direction": info.direction, "recipe": recipe.name, **extra},
    )
