"""What new memories link to: knowledge-graph edges at store time, and the checks of new
facts against stored ones (iMAD contradiction debates, Bayesian support).

``plan_links`` reads and decides everything before the store's write transaction opens
(a debate may consult the chat model, which must never hold the database);
``write_links`` records the plan inside the transaction. Between the two, another
process may commit memories of its own: they are linked by their own store, and a plan
never refers to a memory that did not exist when it was made.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import Engine
from ..mechanisms import bayesian, emotional, imad, two_factor
from ..model import Edge, HistoryEvent, Kind, Layer, MemoryItem
from ..pma import metacognition
from ..state import (
    KV_DEBATES,
    META_DISPUTED,
    META_ENTITIES,
    RELATION_CONTRADICTS,
    RELATION_SHARES_ENTITY,
    RELATION_SIMILAR,
    RELATION_SUPPORTS,
    RELATION_TEMPORAL,
    SIGNIFICANCE,
)
from ..storage.base import Filter, Partition, Transaction
from . import monitor_log
from .llm import run_dialogue
from .tuned import tuned


@dataclass
class LinkPlan:
    """Everything a batch's store writes besides the memories themselves."""

    edges: dict[tuple[str, str, str], Edge] = field(default_factory=dict)
    confidences: dict[str, tuple[float, float]] = field(default_factory=dict)  # stored memories' new (alpha, beta)
    debates: list[dict[str, Any]] = field(default_factory=list)
    superseded: dict[str, tuple[str, float]] = field(default_factory=dict)  # stored id -> (new id, valid until)
    made_at: float = 0.0

    def supersede(self, old: str, new: str, at: float) -> None:
        """``old`` stopped holding at ``at``, when ``new`` began (the earliest change wins)."""
        if old not in self.superseded or at < self.superseded[old][1]:
            self.superseded[old] = (new, at)

    def add(self, a: str, b: str, relation: str, template: tuple[float, float, int], now: float) -> None:
        if a != b and (a, b, relation) not in self.edges:
            w0, v0, k0 = template
            self.edges[(a, b, relation)] = Edge(a, b, relation, w0, v0, k0, now)

    def report(self) -> dict[str, Any]:
        return {"edges": len(self.edges), "debates": self.debates,
                "superseded": {old: new for old, (new, _) in self.superseded.items()}}


def plan_links(engine: Engine, part: Partition, items: list[MemoryItem], vecs: np.ndarray, now: float) -> LinkPlan:
    """Edges from the new memories to co-active ones (paper: store step 5), and the iMAD /
    Bayesian handling of new facts. Changes the new items' confidences and metadata."""
    plan = LinkPlan(made_at=now)
    template = two_factor.new_edge(params=engine.config.params.two_factor_hebbian)
    if engine.on("two_factor_hebbian"):  # associations are Two-Factor synapses: none without it
        _association_edges(engine, part, items, vecs, now, plan, edge_templates(engine, items))
    facts = [(row, i) for row, i in enumerate(items) if i.layer is Layer.SEMANTIC and i.kind is not Kind.SCHEMA]
    if facts and (engine.on("imad_debate") or engine.on("bayesian_confidence")):
        _check_facts(engine, part, facts, vecs, now, plan, template)
    return plan


def edge_templates(engine: Engine, items: list[MemoryItem]) -> dict[str, tuple[float, float, int]]:
    """The initial (weight, variance, count) of the association edges each new memory makes:
    Two-Factor's new edge scaled by the memory's emotional encoding multiplier (when
    emotional tagging is on), so an arousing memory's links start stronger and decay slower."""
    tp = engine.config.params.two_factor_hebbian
    if not engine.on("emotional_tagging"):
        plain = two_factor.new_edge(params=tp)
        return {i.id: plain for i in items}
    mult = np.atleast_1d(emotional.encoding_multiplier(
        arousal=np.fromiter((i.arousal for i in items), float, len(items)),
        significance=np.fromiter((float(i.state.get(SIGNIFICANCE, 0.0)) for i in items), float, len(items)),
        params=engine.config.params.emotional_tagging))
    return {i.id: two_factor.new_edge(params=tp, encoding_multiplier=float(m)) for i, m in zip(items, mult.tolist())}


def _stronger(template: tuple[float, float, int]) -> tuple[float, float]:
    return template[0], -template[1]


def _association_edges(engine: Engine, part: Partition, items: list[MemoryItem], vecs: np.ndarray, now: float,
                       plan: LinkPlan, templates: dict[str, tuple[float, float, int]]) -> None:
    # Consecutive memories of one batch were active together; the more emotional one sets the edge.
    for a, b in itertools.pairwise(items):
        plan.add(a.id, b.id, RELATION_TEMPORAL, max(templates[a.id], templates[b.id], key=_stronger), now)
    # Recently active memories are co-active with the new ones.
    # Their ids and metadata only (the rest of 256 rows would cost more than the linking).
    new_ids = {i.id for i in items}
    recent = [(mid, meta) for mid, meta in engine.store.query_metadata(
        part, Filter(session_id=items[0].session_id, contexts=frozenset({items[0].context})),
        order_by="last_access", descending=True, limit=engine.config.links.recent_window) if mid not in new_ids]
    recent_ids = [mid for mid, _ in recent]
    pool_ids = recent_ids + [i.id for i in items]
    pool_vecs = np.vstack([engine.store.vectors(part, recent_ids), vecs]) if recent else vecs
    sims = vecs @ pool_vecs.T
    rows = np.arange(len(items))
    sims[rows, len(recent) + rows] = -1.0  # not linked to itself
    lp = engine.config.links
    order = np.argsort(-sims, axis=1)[:, :lp.links_per_item]
    for item, cols, vals in zip(items, order.tolist(), np.take_along_axis(sims, order, axis=1).tolist()):
        for j, v in zip(cols, vals):
            if v >= lp.link_min_similarity:
                plan.add(item.id, pool_ids[j], RELATION_SIMILAR, templates[item.id], now)
    # Shared named entities link facts across time.
    by_entity: dict[str, list[str]] = {}
    for mid, meta in recent:
        for e in meta.get(META_ENTITIES, []):
            by_entity.setdefault(e, []).append(mid)
    for item in items:
        for e in item.metadata.get(META_ENTITIES, []):
            for other in by_entity.get(e, [])[:lp.links_per_item]:
                plan.add(item.id, other, RELATION_SHARES_ENTITY, templates[item.id], now)
            by_entity.setdefault(e, []).append(item.id)


def _check_facts(engine: Engine, part: Partition, facts: list[tuple[int, MemoryItem]], vecs: np.ndarray, now: float,
                 plan: LinkPlan, template: tuple[float, float, int]) -> None:
    ip = engine.config.params.imad_debate
    lp = engine.config.links
    weight = tuned(engine, part, "contradiction_weight", 1.0)  # the HyperAgent's, against confirmation bias
    flt = Filter(layers=frozenset({Layer.SEMANTIC}), contexts=frozenset({facts[0][1].context}))
    # The stored neighbours of every new fact first, then all of them read at once (the new
    # facts are not stored yet, so what one finds does not depend on another's handling):
    # two reads for the batch instead of two per fact, each a round trip on a database server.
    neighbours = {item.id: [(mid, s) for mid, s in engine.store.vector_search(part, vecs[row], lp.fact_neighbours, flt)
                            if mid != item.id] for row, item in facts}
    wanted = list(dict.fromkeys(mid for near in neighbours.values() for mid, _ in near))
    stored = {m.id: m for m in engine.store.get(part, wanted)}
    stored_vecs = dict(zip(wanted, engine.store.vectors(part, wanted)))
    for row, item in facts:
        near = neighbours[item.id]
        if not near:
            continue
        cands = [imad.Fact.from_item(stored[mid], stored_vecs[mid]) for mid, _ in near if mid in stored]
        contradictions = imad.find_contradictions(new_text=item.content, new_vec=vecs[row], candidates=cands, params=ip)
        contra_ids = {c.id for c in contradictions}
        if engine.on("imad_debate"):
            # A conflict between statements of different times is taken for a change: the later
            # one supersedes the earlier (kept, with the time it stopped holding), unless a
            # debate below rejects the new statement. Facts superseded already are history,
            # not a side in a dispute.
            contradictions = [c for c in contradictions if stored[c.id].valid_until is None]
            changes = [stored[c.id] for c in contradictions if _is_change(item, stored[c.id])]
            undo = _supersede(item, changes, plan)
        for cid in contra_ids:
            plan.add(item.id, cid, RELATION_CONTRADICTS, template, now)
        if engine.on("bayesian_confidence"):
            # Near-duplicates that do not conflict are evidence for each other.
            for mid, s in near:
                if s >= lp.support_min_similarity and mid not in contra_ids:
                    plan.add(item.id, mid, RELATION_SUPPORTS, template, now)
                    item.conf_alpha, item.conf_beta = bayesian.observe(item.conf_alpha, item.conf_beta, supports=True,
                                                                       strength=float(s))
        if engine.on("imad_debate") and imad.needs_debate(contradictions, params=ip):
            new_fact = imad.Fact(item.id, item.content, vecs[row], item.conf_alpha, item.conf_beta, 0, now)
            losers_pool = [f for f in cands if f.id in {c.id for c in contradictions}]
            decision = decide(engine, new_fact, losers_pool, now, ip, weight)
            if decision.verdict != "accept_new":
                undo()
            post = {f.id: plan.confidences.get(f.id, (f.alpha, f.beta)) for f in losers_pool}
            post[item.id] = (item.conf_alpha, item.conf_beta)
            for mid, (a, b) in imad.loser_updates(decision, post, params=ip, contradiction_weight=weight).items():
                if mid == item.id:
                    item.conf_alpha, item.conf_beta = float(a), float(b)
                    item.metadata[META_DISPUTED] = True
                else:
                    plan.confidences[mid] = (float(a), float(b))
            plan.debates.append({
                "at": now,
                "new_id": item.id,
                "verdict": decision.verdict,
                "winners": list(decision.winner_ids),
                "losers": list(decision.loser_ids),
                "method": decision.method,
                "rationale": decision.rationale,
            })


def _is_change(new: MemoryItem, old: MemoryItem) -> bool:
    """Whether a conflict between a new and a stored fact is a change over time: the two
    differ in one thing only (two differing values name another subject: "room 12 is on
    floor 3" is no update of "room 14 is on floor 2"), the stored fact still holds, and the
    two began to hold at different times."""
    return (imad.replaced_spans(new.content, old.content) <= 1 and old.valid_until is None and old.superseded_by is None
            and new.valid_from != old.valid_from)


def _supersede(item: MemoryItem, changes: list[MemoryItem], plan: LinkPlan) -> Callable[[], None]:
    """The later of each conflicting pair supersedes the earlier: stored facts older than the
    new one end where it begins; a new fact older than a stored one (told later about an
    earlier time) ends where the earliest of those begins. Returns what takes it back."""
    before = dict(plan.superseded), (item.valid_until, item.superseded_by)
    for old in changes:
        if old.valid_from < item.valid_from:
            plan.supersede(old.id, item.id, item.valid_from)
        elif item.valid_until is None or old.valid_from < item.valid_until:
            item.valid_until, item.superseded_by = old.valid_from, old.id

    def undo() -> None:
        plan.superseded = before[0]
        item.valid_until, item.superseded_by = before[1]
    return undo


def decide(engine: Engine, new: imad.Fact, stored: list[imad.Fact], now: float,
           params: imad.IMADParams, contradiction_weight: float = 1.0) -> imad.DebateDecision:
    """The debate's decision: through the chat model when there is one, else arbitration."""
    if engine.chat is None:
        return imad.arbitrate(new=new, stored=stored, now=now, params=params, contradiction_weight=contradiction_weight)
    return run_dialogue(engine.chat, imad.debate(new=new, stored=stored, now=now, params=params,
                                                 contradiction_weight=contradiction_weight),
                        max_tokens=int(params.llm_max_tokens), temperature=float(params.llm_temperature))


def write_links(engine: Engine, tx: Transaction, part: Partition, plan: LinkPlan) -> None:
    """Record a plan inside the store's transaction."""
    for mid, (a, b) in plan.confidences.items():
        tx.update_columns(part, [mid], conf_alpha=[a], conf_beta=[b])
    if plan.debates:
        log = engine.store.kv_get(part, KV_DEBATES) or []
        tx.kv_put(part, {KV_DEBATES: (log + plan.debates)[-engine.config.links.debate_log_size:]})
        tx.log(part, [HistoryEvent(d["new_id"], d["at"], "debated", d) for d in plan.debates])
        if engine.on("metacognitive_monitor"):
            # A debated fact is contradicting evidence; it is accepted unless the stored facts win.
            decisions = [metacognition.evidence_event(at=d["at"], confirming=False, accepted=d["verdict"] != "keep_old")
                         for d in plan.debates]
            tx.kv_put(part, monitor_log.appended(engine.store, part, engine.config.params.metacognitive_monitor,
                                                 evidence=decisions))
    if plan.edges:
        tx.put_edges(part, list(plan.edges.values()))
    for old, (new, at) in plan.superseded.items():
        tx.update_columns(part, [old], valid_until=[at], superseded_by=[new])
    if plan.superseded:
        tx.log(part, [HistoryEvent(old, plan.made_at, "superseded", {"by": new, "valid_until": at})
                      for old, (new, at) in plan.superseded.items()])
