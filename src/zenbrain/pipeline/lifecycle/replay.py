"""Sleep stage: Simulation-Selection replay (real episodes and counterfactuals; LTP/LTD on
strengths and edges). A memory's strength change reaches its forgetting: its Ebbinghaus
stability and TripleCopy encoding strength scale by the same factor."""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Any

import numpy as np

from ...config import LifecycleLimits
from ...engine import Engine
from ...mechanisms import sleep_selection
from ...model import Edge, HistoryEvent, Layer, MemoryItem
from ...pma import neuromodulator, triple_copy
from ...state import (
    COPIES,
    META_REWARD,
    META_TD_ERROR,
    OUTCOMES,
    PROVENANCE,
    RELATION_COUNTERFACTUAL,
    MemoryState,
)
from ..retrievability import copy_state
from .common import Snapshot, edge_entry, num, skipped, vectors


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v, dtype=np.float64), where=n > 1e-12)


def episode_signals(items: list[MemoryItem], limits: LifecycleLimits) -> tuple[np.ndarray, np.ndarray]:
    """(reward, |delta_TD|) per episode.

    reward: ``metadata.reward`` if set, else the success rate of recorded outcomes
    (state ``outcomes``), else usage, ``min(1, recalls / reward_saturation)``.
    |delta_TD|: ``metadata.td_error`` if set, else the gap between the reward and what the
    memory predicted. Without outcomes that prediction is its confidence,
    ``alpha / (alpha + beta)``. Once outcomes are recorded, being recalled again and again
    predicted a good outcome too, so the prediction is the larger of the confidence and
    the usage reward: an episode recalled five times that then fails is a surprising
    failure (|delta_TD| = 1), while one that was never recalled or believed in is not.
    (With the confidence alone, 0.5 by default, a failure's |delta_TD| stays at or below
    0.5 and never reaches ``failed_td``.)
    """
    # Python floats per item (the same double arithmetic as on array elements, less overhead).
    reward: list[float] = []
    td: list[float] = []
    saturation = limits.reward_saturation
    for it in items:
        meta = it.metadata
        r = meta.get(META_REWARD)
        out = it.state.get(OUTCOMES)
        usage = min(1.0, it.access_count / saturation)
        predicted = it.confidence
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            rv = float(r)
        elif isinstance(out, dict) and int(out.get("ok", 0)) + int(out.get("fail", 0)) > 0:
            ok, fail = int(out.get("ok", 0)), int(out.get("fail", 0))
            rv = ok / (ok + fail)
            predicted = max(predicted, usage)
        else:
            rv = usage
        rk = float(min(1.0, max(0.0, rv)))
        reward.append(rk)
        t = meta.get(META_TD_ERROR)
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            td.append(min(1.0, abs(float(t))))
        else:
            td.append(abs(rk - predicted))
    return np.array(reward, dtype=float).reshape(-1), np.array(td, dtype=float).reshape(-1)


def _traces_after_replay(engine: Engine, items: list[MemoryItem], strengths: list[float], now: float,
                         moved: dict[str, dict[str, Any]]) -> tuple[dict[str, list[Any]], dict[str, MemoryState]]:
    """LTP / LTD reach forgetting: each changed memory's Ebbinghaus stability and TripleCopy
    encoding strength scale by new strength / old strength (``sleep_selection.trace_factor``),
    so retrievability (``pipeline.retrievability``, the one formula for ranking and
    archiving) follows the replay. Updates ``items`` and their ``moved`` entries in place;
    returns the columns and states to write."""
    if not items:
        return {"strength": []}, {}
    new = np.asarray(strengths, dtype=float)
    factor = np.atleast_1d(sleep_selection.trace_factor(
        old_strength=np.fromiter((i.strength for i in items), float, len(items)), new_strength=new))
    columns: dict[str, list[Any]] = {"strength": new.tolist()}
    if engine.on("ebbinghaus_decay"):
        ebb = engine.config.params.ebbinghaus_decay
        old_s = np.fromiter((i.stability for i in items), float, len(items))
        new_s = np.clip(old_s * factor, ebb.min_stability, ebb.max_stability)
        columns["stability"] = new_s.tolist()
        for it, a, b in zip(items, old_s.tolist(), new_s.tolist()):
            it.stability = b
            moved[it.id]["stability"] = [num(a), num(b)]
    states: dict[str, MemoryState] = {}
    if engine.on("triple_copy"):
        tc = engine.config.params.triple_copy
        for it, f in zip(items, factor.tolist()):
            if COPIES in it.state:  # without a stored state the copies follow the strength column
                it.state[COPIES] = triple_copy.rescale(copy_state(it, tc), factor=f, now=now, params=tc).to_dict()
                states[it.id] = it.state
    for it, s_new in zip(items, new.tolist()):
        it.strength = s_new
    return columns, states


def selection_stage(
    engine: Engine,
    snap: Snapshot,
    now: float,
    neuro: neuromodulator.NeuromodulatorOutputs,
    *,
    detail: bool = True,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Replay real episodes and generated counterfactuals; LTP/LTD on strengths and edges; prune.

    Returns the report entry and the replayed memories with a replay amount (their TAG)
    for TripleCopy promotion. ``detail=False`` leaves out the per-memory ``ltp``/``ltd``
    entries, ``skipped_ids`` and ``edges_changed`` (their counts are in ``summary``).
    """
    if not engine.on("simulation_selection_sleep"):
        return skipped(), {}
    limits = engine.config.lifecycle
    base = engine.config.params.simulation_selection_sleep
    shift = limits.patience_gain * (neuro.consolidation_patience - 0.5)
    theta = float(min(0.95, max(0.05, base.select_threshold + shift)))
    ltd = float(min(theta, max(0.0, base.ltd_threshold + (theta - base.select_threshold))))
    params = replace(base, select_threshold=theta, ltd_threshold=ltd)
    tf = engine.config.params.two_factor_hebbian

    part = snap.part
    # The newest first, as sorted(..., reverse=True)[:n], without a key for every episode at once.
    eps = heapq.nlargest(int(limits.sleep_max_episodes), snap.select(layers=[Layer.EPISODIC]),
                         key=lambda i: (i.created_at, i.id))
    report: dict[str, Any] = {
        "threshold": theta, "ltd_threshold": ltd, "patience": num(neuro.consolidation_patience),
        "candidates": {"real": len(eps), "counterfactual": 0},
    }
    if detail:
        report.update({"ltp": {}, "ltd": {}, "skipped_ids": []})
    report["counterfactuals"] = []
    if detail:
        report["edges_changed"] = []
    report.update({"edges_created": [], "edges_pruned": []})
    if not eps:
        return report, {}
    ids = [e.id for e in eps]
    index = {m: k for k, m in enumerate(ids)}
    # The snapshot's edges are keyed (src, dst, relation): those touching an episode, in order.
    by_key = {
        key: e for key, e in snap.edges.items()
        if (key[0] in index or key[1] in index) and key[2] not in PROVENANCE
    }
    keys = list(by_key)
    # Each edge's episode positions, shared with the plan; degree = edge ends at an episode.
    src, dst = sleep_selection.edge_end_positions(index, keys)
    degree = sleep_selection.end_counts(src, dst, len(ids))
    reward, td = episode_signals(eps, limits)
    emotion = np.fromiter((abs(e.valence) * e.arousal for e in eps), float, len(eps))
    vec = vectors(engine, part, ids).astype(np.float64)
    use_ewc = engine.on("two_factor_hebbian")
    edge_list = list(by_key.values())
    plan = sleep_selection.plan_sleep(
        memory_ids=ids,
        strengths=np.fromiter((e.strength for e in eps), float, len(eps)),
        td_errors=td,
        rewards=reward,
        related_counts=degree,
        rng=engine.rng,
        emotion=emotion,
        embeddings=vec,
        edges=keys,
        edge_weights=np.fromiter((e.weight for e in edge_list), float, len(keys)),
        edge_variances=np.fromiter((e.variance for e in edge_list), float, len(keys)) if use_ewc else None,
        params=params,
        two_factor_params=tf,
        edge_ends=(src, dst),
    )
    tags = plan.tags
    replayed: dict[str, float] = {}
    # Per-memory entries: every LTP/LTD memory in detail, else only those whose strength
    # changed (their entry is the history event's detail).
    moved: dict[str, dict[str, Any]] = {}
    for action, group in (("ltp", plan.ltp_ids), ("ltd", plan.ltd_ids)):
        out = report[action] if detail else None
        for mid in group:
            if action == "ltp":
                replayed[mid] = max(replayed.get(mid, 0.0), float(tags[mid]))
            new_s = plan.strengths.get(mid)
            if out is None and new_s is None:
                continue
            old = eps[index[mid]].strength
            entry = {"tag": num(tags[mid]), "strength": [num(old), num(old if new_s is None else new_s)]}
            if out is not None:
                out[mid] = entry
            if new_s is not None:
                moved[mid] = {"action": action, **entry}
    if detail:
        report["skipped_ids"] = list(plan.skipped_ids)
    unit = _unit(vec)
    for cf in plan.counterfactuals:
        entry = {
            "source_id": cf.source_id, "neighbour_id": cf.neighbour_id, "mix": num(cf.mix),
            "similarity": num(cf.similarity), "reward": num(cf.reward), "td_error": num(cf.td_error),
            "novelty": num(cf.novelty), "tag": num(cf.tag), "action": cf.action,
            "bridge": "existing" if cf.bridge_edges else ("new" if cf.action == sleep_selection.LTP else "none"),
        }
        if cf.vector is not None:
            v = _unit(np.asarray(cf.vector, dtype=np.float64))
            entry["cosine_to_source"] = num(v @ unit[index[cf.source_id]])
            entry["cosine_to_neighbour"] = num(v @ unit[index[cf.neighbour_id]])
        report["counterfactuals"].append(entry)
        if cf.action == sleep_selection.LTP:
            for mid in (cf.source_id, cf.neighbour_id):
                replayed[mid] = max(replayed.get(mid, 0.0), float(cf.tag))
    report["candidates"]["counterfactual"] = len(plan.counterfactuals)

    changed_ids = list(plan.strengths)
    columns, states = _traces_after_replay(engine, [eps[index[m]] for m in changed_ids],
                                           [plan.strengths[m] for m in changed_ids], now, moved)
    with engine.store.transaction() as tx:
        tx.update_columns(part, changed_ids, **columns)
        tx.update_states(part, states)
        tx.log(part, [HistoryEvent(mid, now, "replayed", moved[mid]) for mid in changed_ids])
        if detail:
            report["edges_changed"] = [
                {"src": e.src, "dst": e.dst, "relation": e.relation, "weight": [float(e.weight), float(w)]}
                for k, w in plan.edge_weights.items() for e in (by_key[k],)
            ]
        upd: dict[tuple[str, str, str], Edge] = {}
        for key, new_w in plan.edge_weights.items():  # the snapshot's edges change in place
            e = by_key[key]
            e.weight, e.updated_at = float(new_w), now
            upd[key] = e
        for (src_id, dst_id), w in plan.new_edges.items():
            e = Edge(src_id, dst_id, RELATION_COUNTERFACTUAL, float(w), tf.initial_variance, 0, now)
            upd[(src_id, dst_id, RELATION_COUNTERFACTUAL)] = e
            report["edges_created"].append(edge_entry(e))
        report["edges_pruned"] = [edge_entry(by_key[k]) for k in plan.pruned_edges]
        # One write with any deferred Two-Factor decay: each edge is written once.
        snap.write_edges(tx, puts=upd, deletes=list(plan.pruned_edges))
    report["summary"] = plan.summary()
    return report, replayed
