"""Store-time mechanisms: what a new memory starts with, and what it links to.

Called by the coordinator inside ``store_many`` with the batch's drafts and vectors,
before the transaction (``prepare``) and inside it (``link``). Each mechanism acts
only when switched on, so an ablation changes exactly its effect.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dynamics as dyn
from . import monitor_log
from .clock import DAY
from .mechanisms import bayesian, ebbinghaus, emotional, fsrs_schedule, imad, two_factor
from .model import Edge, HistoryEvent, Kind, Layer, MemoryItem
from .pma import metacognition, neuromodulator, priority_map, triple_copy
from .storage.base import Filter, Partition
from .text import entities

if TYPE_CHECKING:
    from .coordinator import MemoryCoordinator

BASE_STRENGTH = 0.6  # encoding strength of a neutral memory; emotion and priority raise it
SAMPLE_EXISTING = 1024  # existing memories sampled for novelty (saliency)
RECENT_WINDOW = 256  # recently active memories that count as co-active for new edges
LINKS_PER_ITEM = 3
LINK_MIN_SIM = 0.5
SUPPORT_MIN_SIM = 0.9
FACT_NEIGHBOURS = 10  # stored facts a new fact is checked against (contradiction, support)


@dataclass
class Batch:
    items: list[MemoryItem]
    vectors: np.ndarray
    neuro_levels: dict[str, float] | None = None


def load_neuro(coord: MemoryCoordinator, part: Partition, now: float) -> neuromodulator.NeuromodulatorState:
    raw = coord.storage.kv_get(part, dyn.KV_NEURO)
    return neuromodulator.NeuromodulatorState.from_dict(raw) if raw else neuromodulator.initial_state(now=now)


def neuro_params(coord: MemoryCoordinator) -> neuromodulator.NeuromodulatorParams:
    return coord.config.param("neuromodulator", neuromodulator.DEFAULT_PARAMS)


def _existing_sample(coord: MemoryCoordinator, part: Partition, exclude: set[str]) -> np.ndarray:
    ids = coord.storage.sample_ids(part, SAMPLE_EXISTING, coord._rng, exclude)
    if not ids:
        return np.zeros((0, coord.storage.dim), dtype=np.float32)
    return coord.storage.vectors(part, ids)


def prepare(coord: MemoryCoordinator, part: Partition, batch: Batch, now: float) -> dict[str, Any]:
    """Set encoding strength, emotion, priority, stability and scheduling state of new items.

    Returns partition state to persist in the same transaction (kv key -> value)."""
    items, vecs = batch.items, batch.vectors
    n = len(items)
    kv: dict[str, Any] = {}
    strength = np.full(n, BASE_STRENGTH)
    valence = np.zeros(n)
    arousal = np.zeros(n)
    significance = np.zeros(n)

    if coord._on("emotional_tagging"):
        tags = emotional.tag_many([i.content for i in items], params=coord.config.param("emotional_tagging", emotional.DEFAULTS))
        valence, arousal, significance = tags["valence"], tags["arousal"], tags["significance"]
        strength = strength * tags["encoding_multiplier"]

    neuro_state = None
    levels = None
    if coord._on("neuromodulator"):
        neuro_state = load_neuro(coord, part, now)
        levels = neuromodulator.levels(neuro_state, now=now, params=neuro_params(coord))

    saliency = None
    if coord._on("priority_map") or coord._on("neuromodulator"):
        existing = _existing_sample(coord, part, {i.id for i in items})
        saliency = np.asarray(priority_map.novelty_saliency(embeddings=vecs, existing=existing), dtype=float).reshape(n)

    if coord._on("priority_map"):
        pp = coord.config.param("priority_map", priority_map.DEFAULT_PARAMS)
        reward = np.array([float(i.metadata.get("reward", i.importance)) for i in items])
        goal_raw = coord.storage.kv_get(part, "goal_vector")
        goal = dyn.decode_vec(goal_raw) if goal_raw else None
        goal_score = np.asarray(priority_map.goal_alignment(embeddings=vecs, goal=goal, params=pp), dtype=float).reshape(n)
        p = np.asarray(
            priority_map.priority(saliency=saliency, valence=valence, reward=reward, goal=goal_score, levels=levels, params=pp),
            dtype=float,
        ).reshape(n)
        # Priority feeds encoding: a high-priority memory starts stronger.
        strength = strength * (0.8 + 0.4 * p)
        for i, item in enumerate(items):
            item.state[dyn.PRIORITY] = float(p[i])

    if neuro_state is not None:
        # The batch's novelty drives dopamine; familiar input is routine.
        novelty = float(np.mean(saliency)) if saliency is not None and n else 0.0
        event = "novelty" if novelty >= 0.5 else "routine"
        neuro_state = neuromodulator.emit(neuro_state, event=event, magnitude=min(1.0, max(0.05, novelty)), now=now, params=neuro_params(coord))
        kv[dyn.KV_NEURO] = neuro_state.to_dict()
        batch.neuro_levels = levels

    if coord._on("metacognitive_monitor"):
        mp = coord.config.param("metacognitive_monitor", metacognition.DEFAULT_PARAMS)
        monitor = monitor_log.load(coord.storage, part, mp, kinds=("surprises",), since=now - mp.novelty_window_s)
        if monitor.surprises:
            boost = metacognition.novelty_boost(monitor, now=now, params=mp)
            strength = strength + boost  # a novelty window after a surprise boosts encoding

    strength = np.clip(strength, 0.05, 1.0)
    s0 = coord.config.param("ebbinghaus_decay", ebbinghaus.DEFAULTS).default_stability
    fsrs_on = coord._on("fsrs")
    copies_on = coord._on("triple_copy")
    for i, item in enumerate(items):
        item.strength = float(strength[i])
        item.valence = float(valence[i])
        item.arousal = float(arousal[i])
        item.stability = s0  # days: the paper's initial stability S0 = 1.0 by default
        if significance[i] > 0:
            item.state[dyn.SIGNIFICANCE] = float(significance[i])
        if item.kind in (Kind.FACT, Kind.SCHEMA, Kind.PREFERENCE, Kind.IDENTITY) or item.layer is Layer.SEMANTIC:
            names = entities(item.content)
            if names:
                item.metadata.setdefault("entities", names[:16])
        if copies_on:
            item.state[dyn.COPIES] = triple_copy.encode(s0=item.strength, now=now).to_dict()
        if fsrs_on and item.layer not in (Layer.CORE, Layer.WORKING):
            card = fsrs_schedule.new_card(now=now)
            item.state[dyn.FSRS] = fsrs_schedule.with_due(card, now + DAY)
            item.state["due_at"] = now + DAY  # first review a day after encoding
    return kv


def link(coord: MemoryCoordinator, tx: Any, part: Partition, batch: Batch, now: float) -> dict[str, Any]:
    """Knowledge-graph edges from new memories to co-active ones (paper: store step 5), and
    iMAD / Bayesian handling of new facts. Runs inside the store transaction."""
    items, vecs = batch.items, batch.vectors
    report: dict[str, Any] = {"edges": 0, "debates": []}
    tp = coord.config.param("two_factor_hebbian", two_factor.DEFAULTS)
    w0, v0, k0 = two_factor.new_edge(params=tp)
    edges: dict[tuple[str, str, str], Edge] = {}

    def add(a: str, b: str, relation: str) -> None:
        if a == b:
            return
        key = (a, b, relation)
        if key not in edges:
            edges[key] = Edge(a, b, relation, w0, v0, k0, now)

    # Consecutive memories of one batch were active together.
    for a, b in itertools.pairwise(items):
        add(a.id, b.id, "temporal")
    # Recently active memories are co-active with the new ones.
    recent = coord.storage.query(part, Filter(session_id=items[0].session_id, contexts=frozenset({items[0].context})),
                                 order_by="last_access", descending=True, limit=RECENT_WINDOW)
    new_ids = {i.id for i in items}
    recent = [r for r in recent if r.id not in new_ids]
    pool_ids = [r.id for r in recent] + [i.id for i in items]
    pool_vecs = np.vstack([coord.storage.vectors(part, [r.id for r in recent]), vecs]) if recent else vecs
    sims = vecs @ pool_vecs.T
    rows = np.arange(len(items))
    sims[rows, len(recent) + rows] = -1.0  # not linked to itself
    for item, (cols, vals) in zip(items, _top_links(sims)):
        for j, v in zip(cols, vals):
            if v >= LINK_MIN_SIM:
                add(item.id, pool_ids[j], "similar")
    # Shared named entities link facts across time.
    by_entity: dict[str, list[str]] = {}
    for r in recent:
        for e in r.metadata.get("entities", []):
            by_entity.setdefault(e, []).append(r.id)
    for item in items:
        for e in item.metadata.get("entities", []):
            for other in by_entity.get(e, [])[:LINKS_PER_ITEM]:
                add(item.id, other, "shares_entity")
            by_entity.setdefault(e, []).append(item.id)

    facts = [(row, i) for row, i in enumerate(items) if i.layer is Layer.SEMANTIC and i.kind is not Kind.SCHEMA]
    if facts and (coord._on("imad_debate") or coord._on("bayesian_confidence")):
        _check_facts(coord, tx, part, facts, vecs, now, add, report)

    if edges:
        tx.put_edges(part, list(edges.values()))
    report["edges"] = len(edges)
    return report


def _top_links(sims: np.ndarray) -> list[tuple[list[int], list[float]]]:
    """Per row of ``sims``: the columns of its LINKS_PER_ITEM largest values, in the order of
    ``np.argsort(-row)`` (ties included: a 2-D argsort sorts each row on its own with the
    same algorithm), and those values."""
    order = np.argsort(-sims, axis=1)[:, :LINKS_PER_ITEM]
    return list(zip(order.tolist(), np.take_along_axis(sims, order, axis=1).tolist()))


def _check_facts(coord, tx, part, facts, vecs, now, add, report) -> None:
    ip = coord.config.param("imad_debate", imad.IMADParams())
    flt = Filter(layers=frozenset({Layer.SEMANTIC}), contexts=frozenset({facts[0][1].context}))
    # The index holds committed memories only, and none is committed while this write
    # holds the database, so every fact's neighbours can be searched for at once.
    nearest = coord.storage.vector_search_many(part, vecs[[row for row, _ in facts]], FACT_NEIGHBOURS, flt)
    for (row, item), near in zip(facts, nearest):
        near = [(mid, s) for mid, s in near if mid != item.id]
        if not near:
            continue
        stored = {m.id: m for m in coord.storage.get(part, [mid for mid, _ in near])}
        near_vecs = coord.storage.vectors(part, [mid for mid, _ in near])
        cands = [imad.Fact.from_item(stored[mid], near_vecs[i]) for i, (mid, _) in enumerate(near) if mid in stored]
        contradictions = imad.find_contradictions(new_text=item.content, new_vec=vecs[row], candidates=cands, params=ip)
        contra_ids = {c.id for c in contradictions}
        for cid in contra_ids:
            add(item.id, cid, "contradicts")
        if coord._on("bayesian_confidence"):
            # Near-duplicates that do not conflict are evidence for each other.
            for mid, s in near:
                if s >= SUPPORT_MIN_SIM and mid not in contra_ids:
                    add(item.id, mid, "supports")
                    item.conf_alpha, item.conf_beta = bayesian.observe(item.conf_alpha, item.conf_beta, supports=True, strength=float(s))
        if coord._on("imad_debate") and imad.needs_debate(contradictions, params=ip):
            new_fact = imad.Fact(item.id, item.content, vecs[row], item.conf_alpha, item.conf_beta, 0, now)
            losers_pool = [f for f in cands if f.id in contra_ids]
            decision = imad.debate(new=new_fact, stored=losers_pool, now=now, chat=coord.chat, params=ip)
            post = {f.id: (f.alpha, f.beta) for f in losers_pool}
            post[item.id] = (item.conf_alpha, item.conf_beta)
            updates = imad.loser_updates(decision, post, params=ip)
            for mid, (a, b) in updates.items():
                if mid == item.id:
                    item.conf_alpha, item.conf_beta = float(a), float(b)
                    item.metadata["disputed"] = True
                else:
                    tx.update_columns(part, [mid], conf_alpha=[float(a)], conf_beta=[float(b)])
            entry = {
                "at": now,
                "new_id": item.id,
                "verdict": decision.verdict,
                "winners": list(decision.winner_ids),
                "losers": list(decision.loser_ids),
                "method": decision.method,
                "rationale": decision.rationale,
            }
            report["debates"].append(entry)
            log = coord.storage.kv_get(part, dyn.KV_DEBATES, []) or []
            tx.kv_put(part, dyn.KV_DEBATES, (log + [entry])[-500:])
            tx.log(part, HistoryEvent(item.id, now, "debated", entry))
