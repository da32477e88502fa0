"""consolidate(): episodes become semantic schemas; the IB budget decides which episodes stay active.

Stages (each its own report entry):

* ``dual_process_cot``: per context, System 1 clusters the most recent unconsolidated
  episodes (``mechanisms.dual_process.cluster_episodes``; at most
  ``consolidate_max_episodes`` per context and run). A cluster whose centroid is close to
  an existing schema of the context (cosine >= ``schema_attach_similarity``) joins that
  schema as more evidence; every other cluster gets a new schema from System 2
  (``abstract_schema``: the chat model when the engine has one, else extractive),
  stored with ``store_many`` as kind ``schema`` in the semantic layer with
  ``metadata.evidence_ids`` (so ``forget`` of an episode erases the schema built on it).
  Each evidence episode gets an ``evidence_of`` edge to its schema (weight: its cosine to
  the centroid) and the state key ``consolidated_into``; an episode so marked is never
  clustered again while its schema exists.
* ``ib_budget``: every active episode covered by an existing schema is priced by
  ``mechanisms.ib_budget.evaluate`` (gain: recalls, confidence, recency; cost: length,
  entities). Episodes not worth their cost are archived (recoverable, state
  ``archived_by = "ib_budget"``): their gist lives on in the schema. Uncovered episodes are
  never archived here.
* ``procedures`` (part of ``dual_process_cot``): a memory with recorded outcomes
  (state ``outcomes = {"ok": n, "fail": n}``) whose steps (``metadata.steps`` or its text
  split at ``->``, ``;``, new lines or numbered items) pass ``promote_procedure`` moves to
  the procedural layer.

The schemas are written by ``store_many`` (its own transaction, so store-time mechanisms
run on them); everything else of a stage is one transaction.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from typing import Any

import numpy as np

from ...config import LifecycleLimits
from ...engine import Engine
from ...mechanisms import dual_process, ib_budget
from ...model import Edge, HistoryEvent, Kind, Layer, MemoryItem, Scope
from ...state import (
    ARCHIVED_BY,
    CONSOLIDATED_INTO,
    CONSOLIDATED_USES,
    META_EVIDENCE_IDS,
    META_REPRESENTATIVE_ID,
    META_SCHEMA_METHOD,
    META_STEPS,
    OUTCOMES,
    RELATION_EVIDENCE_OF,
)
from ...text import entities
from ..access import partition_of
from ..llm import run_dialogue
from ..store import store_many
from .common import Snapshot, num, skipped, vectors

STAGES = ("dual_process_cot", "ib_budget", "procedures")
_STEP_SPLIT = re.compile(r"\s*(?:->|→|=>|;|\n+|(?:^|\s)\d+[.)]\s+)\s*")


def consolidate_stages(
    engine: Engine, scope: Scope, snap: Snapshot | None = None
) -> dict[str, dict[str, Any]]:
    limits = engine.config.lifecycle
    part = partition_of(scope)
    now = engine.clock.now()
    snap = snap or Snapshot(engine, part)
    stages: dict[str, dict[str, Any]] = {}
    off = engine.config.disabled_layers
    if not engine.on("dual_process_cot"):
        stages["dual_process_cot"] = skipped()
    elif Layer.SEMANTIC in off:
        stages["dual_process_cot"] = skipped("the semantic layer is disabled")
    else:
        stages["dual_process_cot"] = _dual_process(engine, scope, snap, now, limits)
    stages["ib_budget"] = _ib_budget(engine, snap, now) if engine.on("ib_budget") else skipped()
    if not engine.on("dual_process_cot"):
        stages["procedures"] = skipped()
    elif Layer.PROCEDURAL in off:
        stages["procedures"] = skipped("the procedural layer is disabled")
    else:
        stages["procedures"] = _procedures(engine, snap, now)
    return stages


# ---------------------------------------------------------------------------- System 1 + 2
def _abstract(engine: Engine, ids: list[str], texts: list[str], vecs: np.ndarray,
              params: dual_process.DualProcessParams) -> dual_process.Schema:
    """System 2 for one cluster: through the chat model when there is one, else extractive.
    No transaction is open here, so a slow model holds nothing."""
    if engine.chat is None:
        return dual_process.abstract_schema(ids=ids, texts=texts, vectors=vecs, params=params)
    return run_dialogue(engine.chat, dual_process.abstract_schema_dialogue(ids=ids, texts=texts, vectors=vecs,
                                                                           params=params),
                        max_tokens=int(params.llm_max_tokens), temperature=float(params.llm_temperature))


def _covered(item: MemoryItem, schemas: set[str]) -> bool:
    return item.state.get(CONSOLIDATED_INTO) in schemas


def _schema_ids(snap: Snapshot) -> set[str]:
    return {i.id for i in snap.select(archived=None, kind=Kind.SCHEMA)}


def _dual_process(
    engine: Engine, scope: Scope, snap: Snapshot, now: float, limits: LifecycleLimits
) -> dict[str, Any]:
    params = engine.config.params.dual_process_cot
    part = snap.part
    items = snap.select()
    all_schemas = _schema_ids(snap)
    by_ctx: dict[str, list[MemoryItem]] = defaultdict(list)
    schemas_by_ctx: dict[str, list[MemoryItem]] = defaultdict(list)
    for it in items:
        if it.layer is Layer.EPISODIC and not _covered(it, all_schemas):
            by_ctx[it.context].append(it)
        elif it.kind is Kind.SCHEMA and it.layer is Layer.SEMANTIC:
            schemas_by_ctx[it.context].append(it)

    report: dict[str, Any] = {
        "episodes_examined": 0, "clusters": 0, "schemas_created": [], "schemas_extended": [],
        "episodes_consolidated": 0,
    }
    # (schema id or None for new, context, members, unit vectors of members, centroid, schema text info)
    plans: list[dict[str, Any]] = []
    for ctx in sorted(by_ctx):
        # The newest first, as sorted(..., reverse=True)[:n], without a key for every episode at once.
        eps = heapq.nlargest(int(limits.consolidate_max_episodes), by_ctx[ctx],
                             key=lambda i: (i.event_time or i.created_at, i.id))
        vec = vectors(engine, part, [e.id for e in eps])
        norms = np.linalg.norm(vec, axis=1)
        ok = norms > 0
        eps = [e for e, good in zip(eps, ok) if good]
        unit = (vec[ok] / norms[ok, None]).astype(np.float64)
        report["episodes_examined"] += len(eps)
        if len(eps) < params.min_cluster_size:
            continue
        pos = {e.id: k for k, e in enumerate(eps)}
        clustering = dual_process.cluster_episodes(ids=[e.id for e in eps], vectors=unit, params=params)
        report["clusters"] += len(clustering.clusters)
        existing = schemas_by_ctx.get(ctx, [])
        s_vec = vectors(engine, part, [s.id for s in existing]) if existing else np.zeros((0, unit.shape[1]))
        s_norm = np.linalg.norm(s_vec, axis=1, keepdims=True)
        s_unit = np.divide(s_vec, s_norm, out=np.zeros_like(s_vec, dtype=np.float64), where=s_norm > 0)
        for members in clustering.clusters:
            rows = [pos[m] for m in members]
            centroid = unit[rows].mean(axis=0)
            centroid /= max(np.linalg.norm(centroid), 1e-12)
            target = None
            if len(existing):
                sims = s_unit @ centroid
                best = int(np.argmax(sims))
                if sims[best] >= limits.schema_attach_similarity:
                    target = existing[best]
            plan: dict[str, Any] = {"ctx": ctx, "members": [eps[k] for k in rows], "weights": unit[rows] @ centroid}
            if target is not None:
                plan["schema"] = target
            else:
                plan["abstract"] = _abstract(engine, members, [eps[k].content for k in rows], unit[rows], params)
            plans.append(plan)

    # New schemas: one store_many per context (store-time mechanisms run on them).
    new_by_ctx: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in plans:
        if "abstract" in p:
            new_by_ctx[p["ctx"]].append(p)
    for ctx, ps in new_by_ctx.items():
        records = []
        for p in ps:
            sch: dual_process.Schema = p["abstract"]
            meta: dict[str, Any] = {
                META_EVIDENCE_IDS: list(sch.evidence_ids),
                META_SCHEMA_METHOD: sch.method,
                "support": int(sch.support),
                "cohesion": num(sch.cohesion),
                "terms": list(sch.terms),
                META_REPRESENTATIVE_ID: sch.representative_id,
            }
            if sch.note:
                meta["note"] = sch.note[:500]
            records.append(
                {"content": sch.text, "kind": Kind.SCHEMA.value, "layer": Layer.SEMANTIC.value, "metadata": meta}
            )
        stored, _ = store_many(engine, scope.with_context(ctx).with_session(None), records)
        snap.add(stored)
        snap.reload_edges_of([i.id for i in stored])  # store_many links the new schemas
        for p, it in zip(ps, stored):
            p["schema"] = it
            p["created"] = True

    if not plans:
        return report
    with engine.store.transaction() as tx:
        edges: list[Edge] = []
        # Member states and every history row are written once at the end, each in one
        # statement (the same rows, the history in the same order).
        states: dict[str, dict[str, Any]] = {}
        events: list[HistoryEvent] = []
        for p in plans:
            schema: MemoryItem = p["schema"]
            member_ids = [m.id for m in p["members"]]
            for m, w in zip(p["members"], p["weights"]):
                edges.append(Edge(m.id, schema.id, RELATION_EVIDENCE_OF, float(max(w, 0.05)), 1.0, 0, now))
                m.state[CONSOLIDATED_INTO] = schema.id
                m.state[CONSOLIDATED_USES] = int(m.access_count)
                states[m.id] = m.state
                events.append(HistoryEvent(m.id, now, "consolidated", {"schema": schema.id}))
            if p.get("created"):
                sch = p["abstract"]
                report["schemas_created"].append({
                    "id": schema.id, "context": p["ctx"], "content": schema.content, "method": sch.method,
                    "evidence_ids": member_ids, "cohesion": num(sch.cohesion),
                })
            else:
                old = list(schema.metadata.get("evidence_ids") or [])
                schema.metadata["evidence_ids"] = old + [x for x in member_ids if x not in old]
                schema.metadata["support"] = len(schema.metadata["evidence_ids"])
                schema.updated_at = now
                tx.put_memories([schema])
                events.append(HistoryEvent(schema.id, now, "evidence_added", {"evidence_ids": member_ids}))
                report["schemas_extended"].append({"id": schema.id, "context": p["ctx"], "added": member_ids})
            report["episodes_consolidated"] += len(member_ids)
        tx.update_states(part, states)
        tx.log(part, events)
        snap.put_edges(tx, edges)
    return report


# ---------------------------------------------------------------------------- IB budget
def _uses_since_consolidation(item: MemoryItem) -> int:
    base = item.state.get(CONSOLIDATED_USES, 0)  # absent on episodes consolidated before it was kept
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base >= 0:
        base = 0
    return item.access_count - int(min(base, item.access_count))


def _ib_budget(engine: Engine, snap: Snapshot, now: float) -> dict[str, Any]:
    params = engine.config.params.ib_budget
    part = snap.part
    schemas = _schema_ids(snap)
    covered = [i for i in snap.select(layers=[Layer.EPISODIC]) if _covered(i, schemas)]
    report: dict[str, Any] = {"evaluated": len(covered), "kept": 0, "archived": {}}
    if not covered:
        return report
    n = len(covered)
    # The schema carries an episode's gist, and a recall that reaches the schema brings the
    # episode back (``recall.brought_back``). So the gain of keeping the episode itself
    # active counts evidence of its own value gathered since the schema took it in: its
    # uses since then (how many, and how recent the last one was: none, no recency) and
    # its confidence above the uninformed prior (Beta(1, 1), mean 0.5). Uses from before
    # are what made the episode part of the gist, and the schema now answers for them;
    # counted, they kept nearly every episode the agent's own recalls had once carried.
    uses = np.fromiter((_uses_since_consolidation(i) for i in covered), float, n)
    since_use = np.fromiter((max(0.0, now - i.last_access) / 86400.0 for i in covered), float, n)
    decision = ib_budget.evaluate(
        retrievals=uses,
        confidence=np.maximum(0.0, 2.0 * np.fromiter((i.confidence for i in covered), float, n) - 1.0),
        days_since_access=np.where(uses > 0, since_use, np.inf),
        chars=np.fromiter((len(i.content) for i in covered), float, n),
        entities=np.fromiter((len(entities(i.content)) for i in covered), float, n),
        contexts=[i.context for i in covered],
        params=params,
    )
    drop = np.flatnonzero(~decision.keep)
    report["kept"] = int(decision.n_kept)
    if drop.size == 0:
        return report
    with engine.store.transaction() as tx:
        ids = [covered[j].id for j in drop]
        tx.update_columns(part, ids, archived=[True] * len(ids), updated_at=[now] * len(ids))
        events: list[HistoryEvent] = []
        for j in drop:
            it = covered[j]
            it.state[ARCHIVED_BY] = "ib_budget"
            it.archived = True
            detail = {
                "why": "ib_budget", "schema": it.state.get(CONSOLIDATED_INTO), "gain": num(decision.gain[j]),
                "cost": num(decision.cost[j]), "beta": num(decision.beta[j]),
            }
            events.append(HistoryEvent(it.id, now, "archived", detail))
            report["archived"][it.id] = detail
        tx.update_states(part, {covered[j].id: covered[j].state for j in drop})
        tx.log(part, events)
    return report


# ---------------------------------------------------------------------------- procedures
def steps_of(item: MemoryItem) -> list[str]:
    raw = item.metadata.get(META_STEPS)
    if isinstance(raw, list) and all(isinstance(s, str) for s in raw):
        return [s for s in raw if s.strip()]
    return [s.strip(" .") for s in _STEP_SPLIT.split(item.content) if s and s.strip(" .")]


def _procedures(engine: Engine, snap: Snapshot, now: float) -> dict[str, Any]:
    params = engine.config.params.dual_process_cot
    part = snap.part
    cands = [
        i for i in snap.select()
        if i.layer not in (Layer.PROCEDURAL, Layer.CORE) and isinstance(i.state.get(OUTCOMES), dict)
    ]
    report: dict[str, Any] = {"evaluated": len(cands), "promoted": {}}
    promoted: list[tuple[MemoryItem, dual_process.Procedure]] = []
    for it in cands:
        out = it.state[OUTCOMES]
        ok, fail = int(out.get("ok", 0)), int(out.get("fail", 0))
        if ok < 0 or fail < 0:
            continue
        proc = dual_process.promote_procedure(steps=steps_of(it), successes=ok, attempts=ok + fail, params=params)
        if proc is not None:
            promoted.append((it, proc))
    if not promoted:
        return report
    with engine.store.transaction() as tx:
        ids = [it.id for it, _ in promoted]
        tx.update_columns(part, ids, layer=[Layer.PROCEDURAL.value] * len(ids), updated_at=[now] * len(ids))
        for it, proc in promoted:
            detail = {
                "from": it.layer.value, "to": Layer.PROCEDURAL.value, "why": "procedure",
                "success_rate": num(proc.success_rate), "attempts": int(proc.attempts),
                "steps": list(proc.steps), "abstraction": proc.abstraction,
            }
            tx.log(part, [HistoryEvent(it.id, now, "promoted", detail)])
            report["promoted"][it.id] = detail
            it.layer = Layer.PROCEDURAL
    return report


__all__ = ["STAGES", "consolidate_stages", "steps_of"]
