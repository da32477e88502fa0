"""The MemoryCoordinator: the facade of zenbrain.

Every public operation is one call into ``zenbrain.pipeline`` with the coordinator's
``Engine`` (store, embedder, chat model, configuration, clock, random generator). Every
call names a Scope; nothing it reads or writes leaves that scope's partition (user,
agent), its session (for working and short-term memory) or its context (unless the
configuration links contexts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Self

import numpy as np

from .clock import Clock, SystemClock
from .config import Config
from .engine import QUERY_BATCH, Engine
from .errors import ValidationError
from .model import Edge, HistoryEvent, Kind, Layer, MemoryItem, Scope
from .pipeline import (
    erase,
    feedback,
    lifecycle,
    portability,
    recall,
    relations,
    revise,
    sessions,
    store,
    workspace,
)
from .pipeline.access import get_visible, partition_of, read_filter
from .pipeline.erase import ErasureReceipt
from .pipeline.retrievability import retrievability
from .providers.base import ChatModel, Embedder
from .results import RecallResult, Report
from .storage.base import Store
from .validation import check_content, check_layers, check_number


def _check_limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 2**62:
        shown = "an integer beyond 2**62" if isinstance(limit, int) and limit > 2**62 else repr(limit)[:60]
        raise ValidationError(f"limit must be a positive integer or None, got {shown}")
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
        config = config or Config()
        self.engine = Engine(store=store, embedder=embedder, config=config, clock=clock or SystemClock(), chat=chat,
                             rng=np.random.default_rng(config.seed))
        self.last_store_report: dict[str, Any] = {"edges": 0, "debates": []}

    @property
    def storage(self) -> Store:
        return self.engine.store

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only: recall does not touch its hits, writes
        raise ``ReadOnlyStoreError``."""
        return self.engine.read_only

    @property
    def embedder(self) -> Embedder:
        return self.engine.embedder

    @property
    def config(self) -> Config:
        return self.engine.config

    @property
    def clock(self) -> Clock:
        return self.engine.clock

    @property
    def chat(self) -> ChatModel | None:
        """Optional LLM for System-2 abstraction and iMAD debates."""
        return self.engine.chat

    @chat.setter
    def chat(self, model: ChatModel | None) -> None:
        self.engine.chat = model

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
        supersedes: str | Sequence[str] | None = None,
        dedupe: bool | None = None,
    ) -> MemoryItem:
        """Store one memory and return it as stored. ``supersedes`` names memories it
        replaces: they stop holding when it begins and are kept with that valid time.

        The same text stored again in the same scope (same content and metadata, outside
        a conversation session) returns the memory already there and counts as a use of it
        (``last_store_report["repeats"]`` says so); ``dedupe=False`` stores a second copy
        (default: ``Config.dedupe``). See ``zenbrain.pipeline.repeats``."""
        return self.store_many([dict(content=content, kind=kind, layer=layer, metadata=metadata,
                                     event_time=event_time, importance=importance, supersedes=supersedes)], scope,
                               dedupe=dedupe)[0]

    def store_many(self, records: Sequence[dict[str, Any]], scope: Scope, *,
                   dedupe: bool | None = None) -> list[MemoryItem]:
        """Store many memories in one transaction with one embedding batch.

        Each record is a dict with ``content`` and optional ``kind``, ``layer``,
        ``metadata``, ``event_time``, ``importance``, ``speaker``, ``supersedes``. All records are validated
        before anything is written. Returns one memory per record: a record that repeats a
        stored memory, or an earlier record of the batch, returns that memory (see ``store``).
        """
        if dedupe is not None and not isinstance(dedupe, bool):
            raise ValidationError(f"dedupe must be True, False or None, got {dedupe!r}")
        items, self.last_store_report = store.store_many(
            self.engine, scope, records, dedupe=self.engine.config.dedupe if dedupe is None else dedupe)
        return items

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
        as_of: float | None = None,
        include_superseded: bool = False,
    ) -> RecallResult:
        """The top-k memories for a query, each with a score breakdown.

        ``touch=False`` makes recall read-only (no access counts, no learning); on a store
        opened read-only it is always off. Memories a
        later one superseded are left out: ``as_of=t`` recalls what held at time ``t``
        instead, ``include_superseded=True`` lets them compete too.
        """
        return recall.recall(self.engine, scope, query, k, layers=check_layers(layers), time_range=time_range,
                             include_archived=include_archived, touch=touch and not self.read_only, as_of=as_of,
                             include_superseded=include_superseded)

    def recall_many(self, queries: Sequence[str], scope: Scope, k: int = 10, **options: Any) -> list[RecallResult]:
        """``recall`` for many queries in order, with all their side effects written in one
        transaction (one commit instead of one per query). Same options as ``recall``."""
        # Every query is checked before any is embedded (in batches) or recalled.
        queries = self._checked_queries(queries)
        if self.read_only:  # nothing to write
            return list(self._recall_batches(queries, scope, k, options))
        with self.engine.store.transaction():
            return list(self._recall_batches(queries, scope, k, options))

    def _recall_batches(self, queries: list[str], scope: Scope, k: int, options: dict[str, Any]) -> Iterator[RecallResult]:
        for start in range(0, len(queries), QUERY_BATCH):
            chunk = queries[start:start + QUERY_BATCH]
            self.engine.embed_queries_ahead(chunk)
            for q in chunk:
                yield self.recall(q, scope, k, **options)

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed queries about to be recalled in one batch (at most 256): the recalls
        that follow find their vectors ready. A batch of short texts costs the embedder
        far less a text than one call each. Nothing is read or written in the store."""
        queries = self._checked_queries(queries)
        if len(queries) > QUERY_BATCH:
            raise ValidationError(f"at most {QUERY_BATCH} queries at a time")
        self.engine.embed_queries_ahead(queries)

    def _checked_queries(self, queries: Sequence[str]) -> list[str]:
        if isinstance(queries, (str, bytes)) or not isinstance(queries, Sequence):
            raise ValidationError("queries must be a sequence of strings")
        return [check_content(q, self.engine.config.max_content_chars) for q in queries]

    # ------------------------------------------------------------------ read / update / erase
    def get(self, memory_id: str, scope: Scope) -> MemoryItem:
        return get_visible(self.engine, scope, memory_id)

    def episodes(self, scope: Scope, start: float | None = None, end: float | None = None, *,
                 limit: int | None = None) -> list[MemoryItem]:
        """Episodic memories whose event time lies in [start, end], oldest first."""
        start = None if start is None else check_number("start", start)
        end = None if end is None else check_number("end", end)
        flt = read_filter(self.engine, scope, layers=frozenset({Layer.EPISODIC}), event_after=start, event_before=end)
        return self.engine.store.query(partition_of(scope), flt, order_by="event_time", limit=_check_limit(limit))

    def list_memories(self, scope: Scope, *, layer: Layer | str | None = None, include_archived: bool = False,
                      limit: int | None = None) -> list[MemoryItem]:
        """The scope's memories, oldest first (archived ones with ``include_archived``)."""
        layers = frozenset({Layer.parse(layer)}) if layer is not None else None
        flt = read_filter(self.engine, scope, layers=layers, include_archived=include_archived)
        return self.engine.store.query(partition_of(scope), flt, limit=_check_limit(limit))

    def update(self, memory_id: str, scope: Scope, *, content: str | None = None,
               metadata: dict[str, Any] | None = None, importance: float | None = None,
               layer: Layer | str | None = None) -> MemoryItem:
        """Change a memory directly (an explicit edit). The previous version is kept in its
        history; ``rollback`` restores it. Use ``revise`` for new information that should
        pass through reconsolidation."""
        return revise.update(self.engine, scope, memory_id, content=content, metadata=metadata,
                             importance=importance, layer=layer)

    def revise(self, memory_id: str, scope: Scope, content: str, *, correction: bool = False) -> dict[str, Any]:
        """New information about a memory, gated by reconsolidation: returns the mode
        (confirmed, selective_edit, integration, new_episode, blocked, protected), the
        memory, and the new memory if one was created."""
        return revise.revise(self.engine, scope, memory_id, content, correction=bool(correction))

    def rollback(self, memory_id: str, scope: Scope) -> MemoryItem:
        """Restore the content a memory had before its last update or revision."""
        return revise.rollback(self.engine, scope, memory_id)

    def export_memories(self, scope: Scope) -> Iterator[dict[str, Any]]:
        """Everything stored for the scope's user and agent (memories with their state and
        vectors, edges, history, mechanism records) as JSON-able lines: see
        ``zenbrain.pipeline.portability`` for the format."""
        return portability.export_records(self.engine, scope)

    def import_memories(self, lines: Iterable[dict[str, Any]], scope: Scope, *,
                        new_ids: bool = False) -> portability.ImportReceipt:
        """Write an export into the scope's user and agent, all or nothing (``new_ids``: as a
        copy with fresh ids)."""
        return portability.import_records(self.engine, scope, lines, new_ids=new_ids)

    def forget(self, memory_id: str, scope: Scope) -> ErasureReceipt:
        """Erase a memory: its row, text, vector (unless shared), lexical entry, edges,
        history and snapshots, and memories derived from it. Nothing stays readable, and
        the receipt lists what was removed. Raises ``ErasurePendingError`` (carrying the
        receipt) if another connection's old snapshot keeps the text in the files for now."""
        return erase.forget(self.engine, scope, memory_id)

    def forget_scope(self, scope: Scope) -> ErasureReceipt:
        """Erase every memory of the scope's user and agent (all sessions and contexts);
        the receipt lists them (see ``forget``)."""
        return erase.forget_scope(self.engine, scope)

    def contexts(self, scope: Scope) -> list[str]:
        """The contexts of the scope's user and agent that hold memories."""
        return sorted(self.engine.store.stats(partition_of(scope)).by_context)

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        item = get_visible(self.engine, scope, memory_id)
        return self.engine.store.history(partition_of(scope), item.id)

    # ------------------------------------------------------------------ knowledge graph
    def relate(self, src_id: str, dst_id: str, relation: str, scope: Scope, *, weight: float = 1.0) -> Edge:
        """Declare a typed relation ``src -> dst`` between two memories of the scope's own
        context: ``supports``, ``contradicts``, ``causes``, ``requires``, ``part_of`` and
        ``similar_to`` couple the facts' confidences at the next sleep (Bayesian
        propagation); any other name only links them. Again for the same triple: sets the
        weight. See ``zenbrain.pipeline.relations``."""
        return relations.relate(self.engine, scope, src_id, dst_id, relation, weight)

    def unrelate(self, src_id: str, dst_id: str, relation: str, scope: Scope) -> bool:
        """Remove a relation ``src -> dst``; False when there was none."""
        return relations.unrelate(self.engine, scope, src_id, dst_id, relation)

    def relations(self, memory_id: str, scope: Scope, *, relation: str | None = None) -> list[Edge]:
        """The edges from and to a memory (declared and made by mechanisms) whose other end
        the scope may see, strongest first."""
        return relations.relations(self.engine, scope, memory_id, relation)

    # ------------------------------------------------------------------ lifecycle
    def end_session(self, scope: Scope) -> Report:
        """Consolidate a session's working and short-term memory into the long-term layers."""
        return sessions.end_session(self.engine, scope)

    def consolidate(self, scope: Scope) -> Report:
        """Migrate and abstract memories across layers (episodic -> semantic)."""
        return lifecycle.run_consolidate(self.engine, scope)

    def decay(self, scope: Scope) -> Report:
        """Apply forgetting: archive memories whose retrievability fell below threshold."""
        return lifecycle.run_decay(self.engine, scope)

    def sleep(self, scope: Scope, *, detail: bool = False) -> Report:
        """Offline consolidation: runs every enabled sleep-time mechanism and reports what
        changed - counts per stage, or with ``detail=True`` every changed memory and edge
        (megabytes on a large store)."""
        return lifecycle.run_sleep(self.engine, scope, detail=bool(detail))

    def forgetting_curve(self, memory_id: str, scope: Scope, at: Sequence[float]) -> list[float]:
        """A memory's retrievability at each time of ``at`` if it is not used in between:
        the function decay archives by, evaluated without changing the memory."""
        item = get_visible(self.engine, scope, memory_id)
        if isinstance(at, (str, bytes, dict)) or not isinstance(at, Iterable):
            raise ValidationError(f"at must be a sequence of times, got {type(at).__name__}")
        times = [check_number("time", t) for t in at]
        return [float(retrievability(self.engine, [item], t)[0]) for t in times]

    def restore(self, memory_id: str, scope: Scope) -> MemoryItem:
        """Bring an archived memory back into recall."""
        return lifecycle.restore(self.engine, scope, memory_id)

    # ------------------------------------------------------------------ feedback
    def review(self, memory_id: str, scope: Scope, grade: int | str) -> MemoryItem:
        """Record explicit feedback on a memory: 1-4 or again/hard/good/easy (FSRS review,
        vmPFC-adjusted interval, Ebbinghaus stability, TripleCopy reinforcement)."""
        return feedback.review_many(self.engine, scope, [(memory_id, grade)])[0]

    def review_many(self, reviews: Sequence[tuple[str, int | str]], scope: Scope) -> list[MemoryItem]:
        """``review`` for many ``(memory_id, grade)`` pairs at once: one read, one
        transaction. Every id and grade is checked before anything is written."""
        return feedback.review_many(self.engine, scope, reviews)

    def review_queue(self, scope: Scope, limit: int = 20) -> list[MemoryItem]:
        """Memories due for review, most overdue first, then knowledge gaps ranked by the
        curiosity engine (uncertain and still being learned)."""
        return feedback.review_queue(self.engine, scope, limit)

    def record_outcome(self, memory_id: str, scope: Scope, success: bool) -> MemoryItem:
        """Report that a procedure (or any memory) was used, successfully or not."""
        return feedback.record_outcome(self.engine, scope, memory_id, success)

    def record_evidence(self, memory_id: str, scope: Scope, *, supports: bool, strength: float = 1.0) -> MemoryItem:
        """Evidence for (``supports=True``) or against a memory being true, worth ``strength``
        pseudo-observations (e.g. a source's reliability): a conjugate update of its Beta
        confidence. Recorded whether or not ``bayesian_confidence`` is on (it is the
        memory's evidence); that mechanism decides what the library infers by itself and
        whether sleep propagates it over relations."""
        return feedback.record_evidence(self.engine, scope, memory_id, supports=supports, strength=strength)

    # ------------------------------------------------------------------ workspace and intentions
    def assemble_prompt(self, query: str, scope: Scope, *, budget_tokens: int = 1200, k: int = 10) -> dict[str, Any]:
        """A token-budgeted prompt section from memory, assembled by the global workspace."""
        return workspace.assemble_prompt(self.engine, scope, query, budget_tokens=budget_tokens, k=k)

    def intend(self, action: str, scope: Scope, *, cue: str | None = None, due_at: float | None = None,
               repeat_every_s: float | None = None) -> dict[str, Any]:
        """Prospective memory: fire ``action`` when ``cue`` comes up in a recall, or at ``due_at``."""
        return workspace.intend(self.engine, scope, action, cue=cue, due_at=due_at, repeat_every_s=repeat_every_s)

    def due_intentions(self, scope: Scope) -> list[dict[str, Any]]:
        """Time-triggered intentions that fire now."""
        return workspace.due_intentions(self.engine, scope)

    def set_goal(self, goal: str, scope: Scope) -> None:
        """The current goal: PriorityMap raises the priority of memories aligned with it."""
        workspace.set_goal(self.engine, scope, goal)

    # ------------------------------------------------------------------ the store
    def stats(self, scope: Scope | None = None) -> dict[str, Any]:
        """Counts of what ``scope`` may read, computed over its own rows only (how many
        vectors its memories use, how many bytes they hold): nothing in them depends on
        another user's memories. Without a scope, the whole file's counts and size, for
        the operator."""
        store_ = self.engine.store
        if scope is None:
            s = store_.stats(None)
            size: dict[str, int] = {"file_bytes": s.file_bytes}
        else:
            s = store_.stats(partition_of(scope), read_filter(self.engine, scope, include_archived=True))
            size = {"stored_bytes": s.stored_bytes}
        return {
            "memories": s.memories,
            "archived": s.archived,
            "edges": s.edges,
            "by_layer": s.by_layer,
            "by_context": s.by_context,
            "cached_embeddings": s.cached_embeddings,
            **size,
            "embedder": self.engine.embedder.name,
            "mechanisms_off": sorted(self.engine.config.mechanisms.disabled),
        }

    def close(self) -> None:
        self.engine.close()
        self.engine.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
