"""Recall: classify the query, gather candidates, fuse, rank, de-duplicate, and (unless
read-only) let being recalled change the memories.

1. Candidates: dense top-K of every layer, BM25 top-K, and the scope's core memories.
2. Fusion: hybrid similarity (1 - w) dense + w BM25 / best BM25, times the query type's
   layer weight (and the cross-context weight for another context's memory).
3. Ranking factors (``ranking``): time window and recency, compositional cross-context
   similarity, the Two-Factor boost, retrievability, priority.
4. De-duplication of near-identical content, the top k kept.
5. Side effects (``recall_effects``), in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..engine import Engine
from ..errors import ValidationError
from ..model import Layer, RecallHit, Scope, ScoreBreakdown
from ..results import RecallResult
from ..retrieval.query import classify
from ..text import jaccard, token_set
from ..validation import check_content, check_k, check_number
from . import ranking
from .access import partition_of, read_filter
from .recall_effects import after_recall
from .tuned import tuned


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
) -> RecallResult:
    """The top-k memories for a query, each with a score breakdown."""
    query = check_content(query, engine.config.max_content_chars)
    k = check_k(k)
    part = partition_of(scope)
    now = engine.clock.now()
    info = classify(query)
    layer_set = _layer_set(engine, layers)
    after, before = _time_range(time_range)
    flt = read_filter(engine, scope, layers=layer_set, include_archived=include_archived, event_after=after,
                      event_before=before)
    qvec = engine.embed_query(query)
    rp = engine.config.recall
    per_layer = max(rp.per_layer_k, rp.candidate_factor * k)

    # 1. Candidates.
    dense = dict(engine.store.vector_search(part, qvec, per_layer, flt, per_layer=True))
    lexical: dict[str, float] = {}
    if engine.on("bm25_hybrid") and rp.lexical_k > 0:
        lexical = dict(engine.store.lexical_search(part, query, rp.lexical_k, flt))
    cand_ids = list(dict.fromkeys([*dense, *lexical]))
    core_items = [] if Layer.CORE in engine.config.disabled_layers else engine.store.query(
        part, read_filter(engine, scope, layers=frozenset({Layer.CORE})))
    # Core memories always compete, unless the caller narrowed recall to other layers or a time range.
    if (layer_set is None or Layer.CORE in layer_set) and time_range is None:
        cand_ids += [c.id for c in core_items if c.id not in dense and c.id not in lexical]
    if not cand_ids:
        # A recall that finds nothing still counts: a miss for the monitor, a surprise for
        # the neuromodulators, a topic shift, and a cue for prospective memory.
        extra = after_recall(engine, part, scope, query, qvec, [], now) if touch else {}
        return RecallResult([], query_type=info.type, core=core_items, info={"candidates": 0, **extra})
    items = {i.id: i for i in engine.store.get(part, cand_ids)}
    cand_ids = [c for c in cand_ids if c in items]
    missing = [c for c in cand_ids if c not in dense]  # lexical-only candidates: their dense similarity
    if missing:
        for c, v in zip(missing, engine.store.vectors(part, missing) @ qvec):
            dense[c] = float(v)

    # 2. Fusion.
    lex_max = max(lexical.values()) if lexical else 0.0
    weights = engine.config.layer_weights.get(info.type, {}) if engine.on("query_aware_fusion") else {}
    lw = tuned(engine, part, "lexical_weight", rp.lexical_weight) if lexical else 0.0
    hits: list[RecallHit] = []
    for cid in cand_ids:
        item = items[cid]
        d = max(0.0, dense.get(cid, 0.0))
        lx = (lexical.get(cid, 0.0) / lex_max) if lex_max > 0 else 0.0
        w = float(weights.get(item.layer, 1.0))
        if item.context != scope.context:
            w *= rp.cross_context_weight
        sim = (1.0 - lw) * d + lw * lx
        hits.append(RecallHit(item, w * sim, ScoreBreakdown(dense=d, lexical=lx, layer_weight=w, fused=w * sim)))

    # 3. Ranking factors.
    ranking.temporal_adjust(engine, hits, info)
    ranking.cross_context_similarity(engine, part, qvec, hits, scope.context, lw)
    ranking.hebbian_boost(engine, part, hits, k)
    ranking.retrievability_weight(engine, hits, now)
    ranking.priority_weight(engine, hits)
    for h in hits:
        b = h.why
        h.score = b.final = b.fused * b.temporal * b.hebbian_boost * b.retrievability * b.priority
    hits.sort(key=lambda h: (-h.score, h.item.id))

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
    extra = after_recall(engine, part, scope, query, qvec, out, now) if touch else {}
    return RecallResult(
        out,
        query_type=info.type,
        core=core_items,
        info={"candidates": len(cand_ids), "dense": len(dense), "lexical": len(lexical), "window": info.window,
              "direction": info.direction, **extra},
    )
