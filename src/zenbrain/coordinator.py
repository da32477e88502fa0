"""The MemoryCoordinator: the one place that sequences mechanisms and touches the store.

Public operations: store, store_many, recall, get, update, forget, history, episodes,
relate, unrelate, relations, end_session, consolidate, decay, review, review_queue,
record_outcome, record_evidence, sleep, stats.
Every call names a Scope; nothing it reads or writes leaves that scope's partition
(user, agent), its session (for working and short-term memory) or its context
(unless the configuration links contexts).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, Self

import numpy as np

from . import dynamics, encoding, reinforcement, revision
from .clock import Clock, SystemClock
from .config import Config
from .errors import NotFoundError, ValidationError
from .ids import new_id
from .layers.routing import classify_kind, reroute, route, session_end_target
from .mechanisms import bayesian
from .model import (
    Edge,
    HistoryEvent,
    Kind,
    Layer,
    MemoryItem,
    RecallHit,
    Scope,
    ScoreBreakdown,
)
from .providers.base import ChatModel, Embedder
from .results import RecallResult, Report
from .retrieval.query import classify
from .storage.base import Filter, Partition, Store
from .text import content_hash, jaccard, token_set
from .validation import check_content, check_k, check_metadata, check_number

# The word set of a memory's text, for de-duplicating recall results: a pure function of
# the text, remembered for the memories recalled most recently.
_content_tokens = functools.lru_cache(maxsize=8192)(token_set)


def _check_limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"limit must be a positive integer or None, got {limit!r}")
    return limit


class MemoryCoordinator:
    """Seven memory layers and the mechanisms of the paper behind one facade."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        config: Config | None = None,
        clock: Clock | None = None,
        chat: ChatModel | None = None,
    ):
        if embedder.dim != store.dim:
            raise ValidationError(f"embedder dim {embedder.dim} does not match the store's dim {store.dim}")
        self._db = store
        self.embedder = embedder
        self.config = config or Config()
        self.clock = clock or SystemClock()
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._rng = np.random.default_rng(self.config.seed)
        self.chat = chat  # optional LLM for System-2 abstraction and iMAD debates

    @property
    def storage(self) -> Store:
        return self._db

    # ------------------------------------------------------------------ helpers
    def _on(self, mechanism: str) -> bool:
        return self.config.mechanisms.on(mechanism)

    @staticmethod
    def _part(scope: Scope) -> Partition:
        if not isinstance(scope, Scope):
            raise ValidationError(f"scope must be a zenbrain.Scope, got {type(scope).__name__}")
        return (scope.user_id, scope.agent_id)

    def _contexts(self, scope: Scope) -> frozenset[str]:
        """The contexts a reader in ``scope`` may see."""
        if not self.config.context_links:
            return frozenset({scope.context})
        seen = {scope.context}
        for reader, source in self.config.context_links:
            if reader in (scope.context, "*") and source != "*":
                seen.add(source)
        if any(reader in (scope.context, "*") and source == "*" for reader, source in self.config.context_links):
            return frozenset()  # empty means "every context" (resolved by callers)
        return frozenset(seen)

    def _read_filter(self, scope: Scope, **kw: Any) -> Filter:
        contexts = self._contexts(scope)
        return Filter(contexts=contexts or None, session_id=scope.session_id, **kw)

    def _embed_texts(self, texts: Sequence[str]) -> tuple[np.ndarray, list[str], dict[str, np.ndarray]]:
        """Vectors for texts, using the store's content-hash cache; returns the new ones to persist."""
        hashes = [content_hash(t) for t in texts]
        cached = self._db.cached_embeddings(self.embedder.name, hashes)
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts):
            if h not in cached and h not in missing:
                missing[h] = t
        fresh: dict[str, np.ndarray] = {}
        if missing:
            vecs = self.embedder.embed(list(missing.values()))
            fresh = dict(zip(missing.keys(), vecs))
        out = np.stack([cached[h] if h in cached else fresh[h] for h in hashes]) if texts else np.zeros((0, self._db.dim), np.float32)
        return out.astype(np.float32, copy=False), hashes, fresh

    def _embed_query(self, query: str) -> np.ndarray:
        v = self._query_cache.get(query)
        if v is None:
            v = self.embedder.embed([query])[0]
            self._query_cache[query] = v
            if len(self._query_cache) > 2048:
                self._query_cache.popitem(last=False)
        else:
            self._query_cache.move_to_end(query)
        return v

    def _tuned(self, part: Partition, name: str, default: float) -> float:
        """A parameter as the metacognitive HyperAgent last set it (its bounded, logged
        changes), or ``default`` when it has not, or when the HyperAgent is off."""
        if not self._on("metacognitive_hyperagent"):
            return default
        return self._tuned_value(self._db.kv_get(part, dynamics.KV_HYPER), name, default)

    @staticmethod
    def _tuned_value(raw: Any, name: str, default: float) -> float:
        """``_tuned`` given the HyperAgent's stored record ``raw`` (None when unset)."""
        values = (raw or {}).get("values") or {}
        return float(values.get(name, default))

    def _visible(self, scope: Scope, item: MemoryItem, *, include_archived: bool = False) -> bool:
        """Whether a reader in ``scope`` may see ``item`` (partition is checked by the store)."""
        if item.archived and not include_archived:
            return False
        if not self.config.context_allowed(scope.context, item.context):
            return False
        return not (item.layer in (Layer.WORKING, Layer.SHORT_TERM) and item.session_id != scope.session_id)

    def _get_own(self, scope: Scope, memory_id: str) -> MemoryItem:
        """A memory the scope may change: visible, and of the scope's own context (a
        context link lets a reader see another context, never change it)."""
        item = self._get_one(scope, memory_id)
        if item.context != scope.context:
            raise NotFoundError(f"no memory {memory_id!r} that this context may change")
        return item

    def _get_one(self, scope: Scope, memory_id: str) -> MemoryItem:
        if not isinstance(memory_id, str) or not memory_id:
            raise ValidationError(f"memory id must be a non-empty string, got {memory_id!r}")
        items = self._db.get(self._part(scope), [memory_id])
        if not items or not self._visible(scope, items[0], include_archived=True):
            raise NotFoundError(f"no memory {memory_id!r} in this scope")
        return items[0]

    # ------------------------------------------------------------------ store
    def store(
        self,
        content: str,
        scope: Scope,
        *,
        kind: Kind | str | None = None,
        layer: Layer | str | None = None,
        metadata: dict[str, Any] | None = None,
        event_time: float | None = None,
        importance: float | None = None,
    ) -> MemoryItem:
        """Store one memory and return it as stored."""
        return self.store_many(
            [dict(content=content, kind=kind, layer=layer, metadata=metadata, event_time=event_time, importance=importance)],
            scope,
        )[0]

    def store_many(self, records: Sequence[dict[str, Any]], scope: Scope) -> list[MemoryItem]:
        """Store many memories in one transaction with one embedding batch.

        Each record is a dict with ``content`` and optional ``kind``, ``layer``,
        ``metadata``, ``event_time``, ``importance``. All records are validated
        before anything is written.
        """
        part = self._part(scope)
        if not isinstance(records, Sequence) or isinstance(records, (str, bytes)):
            raise ValidationError("records must be a sequence of dicts")
        now = self.clock.now()
        drafts: list[MemoryItem] = []
        for rec in records:
            if not isinstance(rec, dict):
                raise ValidationError(f"each record must be a dict, got {type(rec).__name__}")
            unknown = set(rec) - {"content", "kind", "layer", "metadata", "event_time", "importance"}
            if unknown:
                raise ValidationError(f"unknown record field(s): {sorted(unknown)}")
            drafts.append(self._draft(rec, scope, now))
        if not drafts:
            return []
        vectors, _hashes, fresh = self._embed_texts([d.content for d in drafts])
        batch = encoding.Batch(drafts, vectors)
        kv = encoding.prepare(self, part, batch, now)
        with self._db.transaction() as tx:
            if fresh:
                tx.put_embeddings(self.embedder.name, list(fresh), np.stack(list(fresh.values())))
            tx.log_many(part, [HistoryEvent(item.id, now, "created", {"layer": item.layer.value, "kind": item.kind.value})
                               for item in drafts])
            link_report = encoding.link(self, tx, part, batch, now)
            tx.put_memories(drafts)
            for key, value in kv.items():
                tx.kv_put(part, key, value)
            self._enforce_working_capacity(tx, part, scope, drafts, now)
        self.last_store_report = link_report
        return drafts

    def _draft(self, rec: dict[str, Any], scope: Scope, now: float) -> MemoryItem:
        content = check_content(rec.get("content"), self.config.max_content_chars)
        metadata = check_metadata(rec.get("metadata"))
        kind_in = rec.get("kind") or metadata.get("kind")
        if kind_in is not None:
            try:
                kind = Kind(kind_in) if not isinstance(kind_in, Kind) else kind_in
            except ValueError:
                raise ValidationError(f"unknown kind {kind_in!r}; kinds are {[k.value for k in Kind]}") from None
        else:
            kind = classify_kind(content)
        layer_in = rec.get("layer")
        if layer_in is not None:
            layer = reroute(Layer.parse(layer_in), self.config.disabled_layers)
        else:
            layer = reroute(route(kind, session_bound=scope.session_id is not None), self.config.disabled_layers)
        if layer in (Layer.WORKING, Layer.SHORT_TERM) and scope.session_id is None:
            raise ValidationError(f"the {layer.value} layer is bound to a session: give the scope a session_id")
        event_time = rec.get("event_time")
        if event_time is None and "event_time" in metadata:
            event_time = metadata["event_time"]
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
        )

    def _enforce_working_capacity(self, tx: Any, part: Partition, scope: Scope, new: list[MemoryItem], now: float) -> None:
        if not any(i.layer is Layer.WORKING for i in new):
            return
        flt = Filter(layers=frozenset({Layer.WORKING}), session_id=scope.session_id, contexts=frozenset({scope.context}))
        current = self._db.query(part, flt, order_by="last_access")
        # The new rows are visible inside this transaction already; count each item once.
        by_id = {i.id: i for i in current if i.session_id == scope.session_id}
        by_id.update({i.id: i for i in new if i.layer is Layer.WORKING})
        items = list(by_id.values())
        overflow = len(items) - self.config.layers.working_capacity
        if overflow <= 0:
            return
        items.sort(key=lambda i: (i.last_access, i.created_at))
        evict = items[:overflow]
        ids = [i.id for i in evict]
        tx.update_columns(part, ids, layer=[Layer.SHORT_TERM.value] * len(ids), updated_at=[now] * len(ids))
        for i in evict:
            i.layer = Layer.SHORT_TERM
            tx.log(part, HistoryEvent(i.id, now, "moved", {"from": "working", "to": "short_term", "why": "capacity"}))

    # ------------------------------------------------------------------ recall
    def recall(
        self,
        query: str,
        scope: Scope,
        k: int = 10,
        *,
        layers: Iterable[Layer | str] | None = None,
        time_range: tuple[float | None, float | None] | None = None,
        include_archived: bool = False,
        touch: bool = True,
    ) -> RecallResult:
        """The top-k memories for a query, each with a score breakdown.

        ``touch=False`` makes recall read-only (no access counts, no learning).
        """
        query = check_content(query, self.config.max_content_chars)
        k = check_k(k)
        part = self._part(scope)
        now = self.clock.now()
        info = classify(query)
        qtype = info.type
        if isinstance(layers, (str, Layer)):
            layers = [layers]
        layer_set = frozenset(Layer.parse(x) for x in layers) if layers is not None else None
        if self.config.disabled_layers:
            base = layer_set if layer_set is not None else frozenset(Layer)
            layer_set = base - self.config.disabled_layers
        after = before = None
        if time_range is not None:
            if not isinstance(time_range, (tuple, list)) or len(time_range) != 2:
                raise ValidationError("time_range must be a (start, end) pair; either may be None")
            after, before = time_range
            after = None if after is None else check_number("time_range start", after)
            before = None if before is None else check_number("time_range end", before)
        flt = self._read_filter(scope, layers=layer_set, include_archived=include_archived, event_after=after, event_before=before)
        qvec = self._embed_query(query)
        rp = self.config.recall
        per_layer = max(rp.per_layer_k, rp.candidate_factor * k)

        # 1. Candidates: dense top-K of every layer, and BM25 top-K.
        dense = dict(self._db.vector_search(part, qvec, per_layer, flt, per_layer=True))
        lexical: dict[str, float] = {}
        if self._on("bm25_hybrid") and rp.lexical_k > 0:
            lexical = dict(self._db.lexical_search(part, query, rp.lexical_k, flt))
        cand_ids = list(dict.fromkeys([*dense, *lexical]))
        core_items = [] if Layer.CORE in self.config.disabled_layers else self._db.query(
            part, self._read_filter(scope, layers=frozenset({Layer.CORE}))
        )
        # Core memories always compete, unless the caller narrowed recall to other layers or a time range.
        if (layer_set is None or Layer.CORE in layer_set) and time_range is None:
            for c in core_items:
                if c.id not in dense and c.id not in lexical:
                    cand_ids.append(c.id)
        if not cand_ids:
            # A recall that finds nothing still counts: a miss for the monitor, a surprise for
            # the neuromodulators, a context shift, and a cue for prospective memory.
            extra = reinforcement.after_recall(self, part, scope, query, qvec, [], now) if touch else {}
            return RecallResult([], query_type=qtype, core=core_items, info={"candidates": 0, **extra})
        # Ranking only reads the candidates' metadata and state: no copies of them, except
        # for the hits returned (detached below).
        items = {i.id: i for i in self._db.get_shared(part, cand_ids)}
        cand_ids = [c for c in cand_ids if c in items]
        # Dense similarity for lexical-only candidates, from the index.
        missing = [c for c in cand_ids if c not in dense]
        if missing:
            vecs = self._db.vectors(part, missing)
            for c, v in zip(missing, vecs @ qvec):
                dense[c] = float(v)

        # 2. Fusion: hybrid similarity times the query type's layer weight (max over layers).
        lex_max = max(lexical.values()) if lexical else 0.0
        weights = self.config.layer_weights.get(qtype, {}) if self._on("query_aware_fusion") else {}
        lw = (self._tuned(part, "lexical_weight", rp.lexical_weight)) if lexical else 0.0
        hits: list[RecallHit] = []
        for cid in cand_ids:
            item = items[cid]
            d = max(0.0, dense.get(cid, 0.0))
            lx = (lexical.get(cid, 0.0) / lex_max) if lex_max > 0 else 0.0
            sim = (1.0 - lw) * d + lw * lx
            w = float(weights.get(item.layer, 1.0))
            if item.context != scope.context:
                w *= rp.cross_context_weight
            why = ScoreBreakdown(d, lx, w, w * sim)  # dense, lexical, layer_weight, fused (positional: faster)
            hits.append(RecallHit(item, w * sim, why))

        # 3. Time-aware adjustment for temporal queries.
        self._temporal_adjust(hits, info)
        # 4. Mechanism hooks: compositional cross-context similarity, Two-Factor boost,
        #    retrievability (Ebbinghaus / TripleCopy), priority.
        reinforcement.cross_context_similarity(self, part, qvec, hits, scope.context, lw)
        edges = reinforcement.hebbian_boost(self, part, hits, k)
        reinforcement.retrievability_weight(self, hits, now)
        reinforcement.priority_weight(self, hits)
        for h in hits:
            b = h.why
            h.score = b.fused * b.temporal * b.hebbian_boost * b.retrievability * b.priority
            b.final = h.score
        hits.sort(key=lambda h: (-h.score, h.item.id))
        # 5. De-duplicate near-identical content, keep the better one.
        out: list[RecallHit] = []
        kept_tokens: list[frozenset[str]] = []
        for h in hits:
            toks = _content_tokens(h.item.content)
            if any(jaccard(toks, t) > rp.dedup_jaccard for t in kept_tokens):
                continue
            out.append(h)
            kept_tokens.append(toks)
            if len(out) == k:
                break
        self._db.detach([h.item for h in out])
        extra: dict[str, Any] = {}
        if touch:
            extra = reinforcement.after_recall(self, part, scope, query, qvec, out, now, edges=edges)
        return RecallResult(
            out,
            query_type=qtype,
            core=core_items,
            info={"candidates": len(cand_ids), "dense": len(dense), "lexical": len(lexical), "window": info.window,
                  "direction": info.direction, **extra},
        )

    def recall_many(self, queries: Sequence[str], scope: Scope, k: int = 10, **options: Any) -> list[RecallResult]:
        """``recall`` for many queries in order, with all their side effects written in one
        transaction (one commit instead of one per query). Same options as ``recall``."""
        if isinstance(queries, (str, bytes)) or not isinstance(queries, Sequence):
            raise ValidationError("queries must be a sequence of strings")
        with self._db.transaction():
            return [self.recall(q, scope, k, **options) for q in queries]

    def _temporal_adjust(self, hits: list[RecallHit], info: Any) -> None:
        rp = self.config.recall
        if info.window is not None and rp.temporal_boost > 0:
            w = info.window
            for h in hits:
                t = h.item.event_time if h.item.event_time is not None else h.item.created_at
                inside = (w.start is None or t >= w.start) and (w.end is None or t <= w.end)
                if inside:
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

    # ------------------------------------------------------------------ read / update / erase
    def get(self, memory_id: str, scope: Scope) -> MemoryItem:
        return self._get_one(scope, memory_id)

    def episodes(self, scope: Scope, start: float | None = None, end: float | None = None, *, limit: int | None = None) -> list[MemoryItem]:
        """Episodic memories whose event time lies in [start, end], oldest first."""
        start = None if start is None else check_number("start", start)
        end = None if end is None else check_number("end", end)
        limit = _check_limit(limit)
        flt = self._read_filter(scope, layers=frozenset({Layer.EPISODIC}), event_after=start, event_before=end)
        return self._db.query(self._part(scope), flt, order_by="event_time", limit=limit)

    def list(self, scope: Scope, *, layer: Layer | str | None = None, include_archived: bool = False, limit: int | None = None) -> list[MemoryItem]:
        layers = frozenset({Layer.parse(layer)}) if layer is not None else None
        limit = _check_limit(limit)
        return self._db.query(self._part(scope), self._read_filter(scope, layers=layers, include_archived=include_archived), limit=limit)

    def update(
        self,
        memory_id: str,
        scope: Scope,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        layer: Layer | str | None = None,
    ) -> MemoryItem:
        """Change a memory directly (an explicit edit). The previous version is kept in its
        history; ``rollback`` restores it. Use ``revise`` for new information that should
        pass through reconsolidation."""
        item = self._get_own(scope, memory_id)
        if content is not None:
            content = check_content(content, self.config.max_content_chars)
        if metadata is not None:
            metadata = check_metadata(metadata)
        if importance is not None:
            importance = check_number("importance", importance, 0.0, 1.0)
        new_layer = reroute(Layer.parse(layer), self.config.disabled_layers) if layer is not None else None
        if new_layer in (Layer.WORKING, Layer.SHORT_TERM) and scope.session_id is None:
            raise ValidationError(f"the {new_layer.value} layer is bound to a session: give the scope a session_id")
        if new_layer in (Layer.WORKING, Layer.SHORT_TERM) and item.session_id != scope.session_id:
            raise ValidationError("only a memory of this session can move into its working or short-term memory")
        return self._apply_revision(scope, item, content, action="updated", detail={}, metadata=metadata,
                                    importance=importance, layer=new_layer)

    def _apply_revision(self, scope: Scope, item: MemoryItem, content: str | None, *, action: str, detail: dict[str, Any],
                        metadata: dict[str, Any] | None = None, importance: float | None = None,
                        layer: Layer | None = None) -> MemoryItem:
        part = self._part(scope)
        now = self.clock.now()
        snapshot = {"content": item.content, "metadata": item.metadata, "layer": item.layer.value, "version": item.version}
        fresh: dict[str, np.ndarray] = {}
        if content is not None and content != item.content:
            _, hashes, fresh = self._embed_texts([content])
            item.content = content
            item.content_hash = hashes[0]
        if metadata is not None:
            item.metadata = metadata
        if importance is not None:
            item.importance = importance
        if layer is not None:
            item.layer = layer
        item.version += 1
        item.updated_at = now
        with self._db.transaction() as tx:
            if fresh:
                tx.put_embeddings(self.embedder.name, list(fresh), np.stack(list(fresh.values())))
            tx.update_memory(item)
            tx.log(part, HistoryEvent(item.id, now, action, {"before": snapshot, **detail}))
            if layer is Layer.WORKING and snapshot["layer"] != Layer.WORKING.value:
                self._enforce_working_capacity(tx, part, scope, [item], now)
        return item

    def revise(self, memory_id: str, scope: Scope, content: str, *, correction: bool = False) -> dict[str, Any]:
        """New information about a memory, gated by reconsolidation: returns the mode
        (confirmed, selective_edit, integration, new_episode, blocked, protected), the
        memory, and the new memory if one was created."""
        item = self._get_own(scope, memory_id)
        content = check_content(content, self.config.max_content_chars)
        return revision.revise(self, scope, item, content, correction=bool(correction))

    def rollback(self, memory_id: str, scope: Scope) -> MemoryItem:
        """Restore the content a memory had before its last update or revision."""
        return revision.rollback(self, scope, self._get_own(scope, memory_id))

    def forget(self, memory_id: str, scope: Scope) -> None:
        """Erase a memory: its row, text, vector (unless shared), lexical entry, edges,
        history and snapshots, and memories derived from it. Nothing stays readable."""
        part = self._part(scope)
        item = self._get_own(scope, memory_id)
        derived = [
            d.id
            for d in self._db.query(part, Filter(include_archived=True, session_id=scope.session_id, contexts=None))
            if item.id in (d.metadata.get("evidence_ids") or [])
        ]
        erased = {item.id, *derived}
        debates = self._db.kv_get(part, dynamics.KV_DEBATES) or []
        kept = [d for d in debates if not erased & {d.get("new_id"), *d.get("winners", []), *d.get("losers", [])}]
        with self._db.transaction() as tx:
            for mid in erased:
                tx.delete_memory(part, mid)
            if len(kept) != len(debates):
                tx.kv_put(part, dynamics.KV_DEBATES, kept)

    def forget_scope(self, scope: Scope) -> int:
        """Erase every memory of the scope's user and agent (all sessions and contexts)."""
        part = self._part(scope)
        ids = self._db.all_ids(part)
        with self._db.transaction() as tx:
            for mid in ids:
                tx.delete_memory(part, mid)
            tx.kv_clear(part)  # goals, intentions, context vectors, debate logs, mechanism state
        return len(ids)

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        self._get_one(scope, memory_id)
        return self._db.history(self._part(scope), memory_id)

    # ------------------------------------------------------------------ knowledge graph
    def relate(self, src_id: str, dst_id: str, relation: str, scope: Scope, *, weight: float = 1.0) -> Edge:
        """Declare a typed relation ``src -> dst`` between two memories of the scope's own
        context: ``supports``, ``contradicts``, ``causes``, ``requires``, ``part_of`` and
        ``similar_to`` couple the facts' confidences at the next sleep (Bayesian
        propagation); any other name only links them. Again for the same triple: sets the
        weight. See ``zenbrain.relations``."""
        from .relations import relate

        return relate(self, scope, src_id, dst_id, relation, weight)

    def unrelate(self, src_id: str, dst_id: str, relation: str, scope: Scope) -> bool:
        """Remove a relation ``src -> dst``; False when there was none."""
        from .relations import unrelate

        return unrelate(self, scope, src_id, dst_id, relation)

    def relations(self, memory_id: str, scope: Scope, *, relation: str | None = None) -> list[Edge]:
        """The edges from and to a memory (declared and made by mechanisms) whose other end
        the scope may see, strongest first."""
        from .relations import relations

        return relations(self, scope, memory_id, relation)

    # ------------------------------------------------------------------ lifecycle
    def end_session(self, scope: Scope) -> Report:
        """Consolidate a session's working and short-term memory into the long-term layers."""
        if scope.session_id is None:
            raise ValidationError("end_session needs a scope with a session_id")
        part = self._part(scope)
        now = self.clock.now()
        report = Report("end_session", now)
        flt = Filter(layers=frozenset({Layer.WORKING, Layer.SHORT_TERM}), session_id=scope.session_id, contexts=frozenset({scope.context}))
        items = [i for i in self._db.query(part, flt) if i.session_id == scope.session_id]
        moved: dict[str, int] = {}
        with self._db.transaction() as tx:
            for i in items:
                target = self._move_to_long_term(tx, part, i, now, why="session end")
                moved[target.value] = moved.get(target.value, 0) + 1
        report.stage("moved").update(moved)
        return report

    def _expire_short_term(self, scope: Scope) -> dict[str, Any]:
        """Move working and short-term memories older than the short-term TTL (of any
        session of the scope's user and agent) to their long-term layers."""
        part = self._part(scope)
        now = self.clock.now()
        cutoff = now - self.config.layers.short_term_ttl_hours * 3600.0
        flt = Filter(layers=frozenset({Layer.WORKING, Layer.SHORT_TERM}), all_sessions=True, include_archived=True)
        stale = [i for i in self._db.query(part, flt, order_by="last_access") if i.last_access < cutoff]
        moved: dict[str, int] = {}
        if stale:
            with self._db.transaction() as tx:
                for i in stale:
                    target = self._move_to_long_term(tx, part, i, now, why="short-term TTL")
                    moved[target.value] = moved.get(target.value, 0) + 1
        return {"moved": moved, "ids": [i.id for i in stale]}

    def _move_to_long_term(self, tx: Any, part: Partition, i: MemoryItem, now: float, *, why: str) -> Layer:
        target = reroute(session_end_target(i.kind), self.config.disabled_layers)
        cols: dict[str, list[Any]] = {"layer": [target.value], "updated_at": [now]}
        if target is Layer.EPISODIC and i.event_time is None:
            cols["event_time"] = [i.created_at]  # an episode happened when it was said
        tx.update_columns(part, [i.id], **cols)
        tx.log(part, HistoryEvent(i.id, now, "moved", {"from": i.layer.value, "to": target.value, "why": why}))
        return target

    def consolidate(self, scope: Scope) -> Report:
        """Migrate and abstract memories across layers (episodic -> semantic)."""
        from . import lifecycle

        return lifecycle.run_consolidate(self, scope)

    def decay(self, scope: Scope) -> Report:
        """Apply forgetting: archive memories whose retrievability fell below threshold."""
        from . import lifecycle

        return lifecycle.run_decay(self, scope)

    def restore(self, memory_id: str, scope: Scope) -> MemoryItem:
        """Bring an archived memory back into recall."""
        part = self._part(scope)
        item = self._get_own(scope, memory_id)
        now = self.clock.now()
        with self._db.transaction() as tx:
            tx.update_columns(part, [item.id], archived=[False], last_access=[now], strength=[max(item.strength, 0.5)])
            tx.log(part, HistoryEvent(item.id, now, "restored", {}))
        item.archived = False
        item.last_access = now
        return item

    def review(self, memory_id: str, scope: Scope, grade: int | str) -> MemoryItem:
        """Record explicit feedback on a memory: 1-4 or again/hard/good/easy (FSRS review,
        vmPFC-adjusted interval, Ebbinghaus stability, TripleCopy reinforcement)."""
        item = self._get_own(scope, memory_id)
        return reinforcement.review(self, self._part(scope), item, grade, self.clock.now())

    def review_many(self, reviews: Sequence[tuple[str, int | str]], scope: Scope) -> list[MemoryItem]:
        """``review`` for many ``(memory_id, grade)`` pairs at once: one read, one
        transaction. Every id and grade is checked before anything is written."""
        if isinstance(reviews, (str, bytes)) or not isinstance(reviews, Sequence):
            raise ValidationError("reviews must be a sequence of (memory_id, grade) pairs")
        pairs = []
        for r in reviews:
            if not isinstance(r, (tuple, list)) or len(r) != 2:
                raise ValidationError(f"each review must be a (memory_id, grade) pair, got {r!r}")
            if not isinstance(r[0], str) or not r[0]:
                raise ValidationError(f"memory id must be a non-empty string, got {r[0]!r}")
            pairs.append((r[0], r[1]))
        if len({mid for mid, _ in pairs}) != len(pairs):
            raise ValidationError("each memory may be reviewed once per call")
        part = self._part(scope)
        found = {i.id: i for i in self._db.get(part, [mid for mid, _ in pairs])}
        batch = []
        for mid, grade in pairs:
            item = found.get(mid)
            if item is None or not self._visible(scope, item, include_archived=True):
                raise NotFoundError(f"no memory {mid!r} in this scope")
            if item.context != scope.context:
                raise NotFoundError(f"no memory {mid!r} that this context may change")
            batch.append((item, grade))
        return reinforcement.review_many(self, part, batch, self.clock.now())

    def review_queue(self, scope: Scope, limit: int = 20) -> list[MemoryItem]:
        """Memories due for review, most overdue first, then knowledge gaps ranked by the
        curiosity engine (uncertain and still being learned)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError(f"limit must be a positive integer, got {limit!r}")
        part = self._part(scope)
        due = self._db.due(part, self.clock.now(), limit, self._read_filter(scope)) if self._on("fsrs") else []
        if len(due) < limit and self._on("curiosity"):
            queued = self._db.kv_get(part, dynamics.KV_CURIOSITY) or []
            ids = [q["id"] if isinstance(q, dict) else q[0] for q in queued]
            seen = {d.id for d in due}
            extra = [i for i in self._db.get(part, [x for x in ids if x not in seen]) if self._visible(scope, i)]
            due += extra[: limit - len(due)]
        return due

    def record_outcome(self, memory_id: str, scope: Scope, success: bool) -> MemoryItem:
        """Report that a procedure (or any memory) was used, successfully or not."""
        if not isinstance(success, bool):
            raise ValidationError("success must be True or False")
        item = self._get_own(scope, memory_id)
        return reinforcement.record_outcome(self, self._part(scope), item, success, self.clock.now())

    def record_evidence(self, memory_id: str, scope: Scope, *, supports: bool, strength: float = 1.0) -> MemoryItem:
        """Evidence for (``supports=True``) or against a memory being true, worth ``strength``
        pseudo-observations (e.g. a source's reliability): a conjugate update of its Beta
        confidence (``conf_alpha``, ``conf_beta``). It is recorded whether or not
        ``bayesian_confidence`` is on (it is the memory's evidence); that mechanism decides
        what the library infers by itself and whether sleep propagates it over relations."""
        if not isinstance(supports, bool):
            raise ValidationError("supports must be True or False")
        strength = check_number("strength", strength, 0.0, 1e6)
        item = self._get_own(scope, memory_id)
        part = self._part(scope)
        now = self.clock.now()
        before = (item.conf_alpha, item.conf_beta)
        item.conf_alpha, item.conf_beta = bayesian.observe(item.conf_alpha, item.conf_beta, supports=supports,
                                                           strength=strength)
        with self._db.transaction() as tx:
            tx.update_columns(part, [item.id], conf_alpha=[item.conf_alpha], conf_beta=[item.conf_beta])
            tx.log(part, HistoryEvent(item.id, now, "evidence", {"supports": supports, "strength": strength,
                                                                  "before": list(before),
                                                                  "after": [item.conf_alpha, item.conf_beta]}))
        return item

    def sleep(self, scope: Scope, *, detail: bool = False) -> Report:
        """Offline consolidation: runs every enabled sleep-time mechanism and reports what
        changed - counts per stage, or with ``detail=True`` every changed memory and edge
        (megabytes on a large store)."""
        from . import lifecycle

        return lifecycle.run_sleep(self, scope, detail=bool(detail))

    def assemble_context(self, query: str, scope: Scope, *, budget_tokens: int = 1200, k: int = 10) -> dict[str, Any]:
        """A token-budgeted context for an LLM prompt, assembled by the global workspace."""
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1:
            raise ValidationError(f"budget_tokens must be a positive integer, got {budget_tokens!r}")
        from .context import assemble_context

        return assemble_context(self, query, scope, budget_tokens=budget_tokens, k=check_k(k))

    def intend(self, action: str, scope: Scope, *, cue: str | None = None, due_at: float | None = None,
               repeat_every_s: float | None = None) -> dict[str, Any]:
        """Prospective memory: fire ``action`` when ``cue`` comes up in a recall, or at ``due_at``."""
        from .context import intend

        action = check_content(action, self.config.max_content_chars)
        if cue is not None:
            cue = check_content(cue, self.config.max_content_chars)
        if due_at is not None:
            due_at = check_number("due_at", due_at, 0.0, 1e11)
        if repeat_every_s is not None:
            repeat_every_s = check_number("repeat_every_s", repeat_every_s, 1.0, 1e9)
        if cue is None and due_at is None:
            raise ValidationError("an intention needs a cue or a due time")
        return intend(self, scope, action, cue=cue, due_at=due_at, repeat_every_s=repeat_every_s)

    def due_intentions(self, scope: Scope) -> list[dict[str, Any]]:
        """Time-triggered intentions that fire now."""
        from .context import due_intentions

        return due_intentions(self, scope)

    def set_goal(self, goal: str, scope: Scope) -> None:
        """The current goal: PriorityMap raises the priority of memories aligned with it."""
        goal = check_content(goal, self.config.max_content_chars)
        vec = self.embedder.embed([goal])[0]
        with self._db.transaction() as tx:
            tx.kv_put(self._part(scope), "goal_vector", dynamics.encode_vec(vec))

    def stats(self, scope: Scope | None = None) -> dict[str, Any]:
        if scope is None:
            s = self._db.stats(None)
        else:
            s = self._db.stats(self._part(scope), self._read_filter(scope, include_archived=True))
        return {
            "memories": s.memories,
            "archived": s.archived,
            "edges": s.edges,
            "by_layer": s.by_layer,
            "by_context": s.by_context,
            "cached_embeddings": s.cached_embeddings,
            "file_bytes": s.file_bytes,
            "embedder": self.embedder.name,
            "mechanisms_off": sorted(self.config.mechanisms.disabled),
        }

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
