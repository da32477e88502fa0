"""The sleep-only stages: neuromodulator homeostasis, Two-Factor edge decay, Simulation-
Selection replay, TripleCopy promotion, Bayesian propagation, spectral health,
compositional context, curiosity and the metacognitive HyperAgent.

Each function takes the coordinator, the partition's :class:`Snapshot` and ``now``, writes
its changes in one transaction (keeping the snapshot current) and returns its report
entry. ``lifecycle.run_sleep`` sequences them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from ...clock import DAY
from ...config import LifecycleLimits
from ...engine import Engine
from ...mechanisms import bayesian, compositional, sleep_selection, spectral, two_factor
from ...model import Edge, HistoryEvent, Layer, MemoryItem
from ...pma import curiosity, hyperagent, metacognition, neuromodulator, triple_copy
from ...state import (
    CONF_HISTORY,
    CONF_LOCAL,
    CONF_WRITTEN,
    COPIES,
    KV_COMPOSITIONAL,
    KV_CURIOSITY,
    KV_EDGE_DECAY,
    KV_HYPER,
    KV_NEURO,
    KV_SPECTRAL,
    META_REWARD,
    META_TD_ERROR,
    OUTCOMES,
    PROVENANCE,
    RELATION_BRIDGE,
    RELATION_COUNTERFACTUAL,
)
from .. import monitor_log
from ..retrievability import copy_state
from .common import Snapshot, edge_entry, num, skipped, vectors


# ---------------------------------------------------------------------------- neuromodulator
def neuromodulator_stage(
    engine: Engine, part: Any, now: float
) -> tuple[dict[str, Any], neuromodulator.NeuromodulatorOutputs]:
    """Homeostasis: relax the tonic levels to ``now``; return the outputs other stages read."""
    if not engine.on("neuromodulator"):
        return skipped(), neuromodulator.NEUTRAL_OUTPUTS
    params = engine.param("neuromodulator", neuromodulator.DEFAULT_PARAMS)
    raw = engine.store.kv_get(part, KV_NEURO)
    try:
        before = neuromodulator.NeuromodulatorState.from_dict(raw) if raw else None
    except (KeyError, TypeError, ValueError):
        before = None
    state = before or neuromodulator.initial_state(now=now, params=params)
    after = neuromodulator.homeostasis(state, now=now, params=params)
    out = neuromodulator.outputs(after, now=now, params=params)
    with engine.store.transaction() as tx:
        tx.kv_put(part, {KV_NEURO: after.to_dict()})
    return {
        "initialised": before is None,
        "hours_since_update": num(max(0.0, now - state.updated_at) / 3600.0),
        "tonic": {c: [num(state.tonic[c]), num(after.tonic[c])] for c in neuromodulator.CHANNELS},
        "bursts": [len(state.bursts), len(after.bursts)],
        "outputs": {k: num(v) for k, v in asdict(out).items()},
    }, out


# ---------------------------------------------------------------------------- Two-Factor decay
def edge_decay_stage(
    engine: Engine, snap: Snapshot, now: float, *, detail: bool = True, defer: bool = False
) -> dict[str, Any]:
    """Importance-gated decay of every association edge since the last pass; prune the dead.

    The time decayed is measured from the later of the edge's last change and the last
    edge-decay pass (kv ``edge_decay``), so repeated sleeps never decay a span twice. An
    edge without a timestamp starts counting at the first pass. Provenance edges
    (``evidence_of``) are not associations and do not decay.

    ``detail=False`` reports the number of decayed edges (``decayed_count``) instead of
    one entry per edge; pruned edges are always listed. ``defer=True`` leaves the writes
    (edges and the pass time) to the snapshot's next edge write (``Snapshot.defer_edges``),
    so an edge that replay changes next is written once.
    """
    if not engine.on("two_factor_hebbian"):
        return skipped()
    params = engine.param("two_factor_hebbian", two_factor.DEFAULTS)
    part = snap.part
    last = engine.store.kv_get(part, KV_EDGE_DECAY) or {}
    last_at = last.get("at")
    keyed = [(k, e) for k, e in snap.edges.items() if k[2] not in PROVENANCE]
    edges = [e for _, e in keyed]
    report: dict[str, Any] = {"edges": len(edges), "last_pass": last_at}
    decayed: list[Edge] = []
    decayed_keyed: dict[tuple[str, str, str], Edge] = {}
    dead_keys: list[tuple[str, str, str]] = []
    decayed_entries: list[dict[str, Any]] = []
    pruned_entries: list[dict[str, Any]] = []
    if edges:
        n = len(edges)
        upd = np.fromiter((e.updated_at for e in edges), float, n)
        if last_at is None:
            start = np.where(upd > 0, upd, now)
        else:
            start = np.maximum(upd, float(last_at))
        days = np.maximum(0.0, now - start) / DAY
        w = np.fromiter((e.weight for e in edges), float, n)
        var = np.fromiter((e.variance for e in edges), float, n)
        new_w, prune = two_factor.decay(w, var, days=days, params=params)
        new_w, prune = np.asarray(new_w, float).reshape(-1), np.asarray(prune, bool).reshape(-1)
        changed = np.flatnonzero(~prune & (np.abs(new_w - w) > 1e-12)).tolist()
        dead = np.flatnonzero(prune).tolist()
        nl = new_w.tolist()
        # The snapshot's edges change in place (as its memories do); the store follows below.
        decayed_keyed = dict(keyed[j] for j in changed)
        decayed = list(decayed_keyed.values())
        for e, x in zip(decayed, (nl[j] for j in changed)):
            e.weight = x
        dead_keys = [keyed[j][0] for j in dead]
        if detail or dead:
            imp = (1.0 / np.maximum(var, 1e-12)).tolist()
            wl, dl = w.tolist(), days.tolist()
            pruned_entries = [
                {"src": e.src, "dst": e.dst, "relation": e.relation, "weight": [wl[j], nl[j]], "importance": imp[j]}
                for j in dead for e in (edges[j],)
            ]
            if detail:
                decayed_entries = [
                    {"src": e.src, "dst": e.dst, "relation": e.relation, "weight": [wl[j], nl[j]],
                     "importance": imp[j], "days": dl[j]}
                    for j, e in zip(changed, decayed)
                ]
    if detail:
        report["decayed"] = decayed_entries
    else:
        report["decayed_count"] = len(decayed)
    report["pruned"] = pruned_entries
    # Puts and deletions name different edges, so deleting first is the same as after.
    snap.defer_edges(puts=decayed_keyed, deletes=dead_keys, kv={KV_EDGE_DECAY: {"at": now}})
    if not defer:
        snap.flush()
    return report


# ---------------------------------------------------------------------------- Simulation-Selection
def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v, dtype=np.float64), where=n > 1e-12)


def episode_signals(items: list[MemoryItem], limits: LifecycleLimits) -> tuple[np.ndarray, np.ndarray]:
    """(reward, |delta_TD|) per episode.

    reward: ``metadata.reward`` if set, else the success rate of recorded outcomes
    (state ``outcomes``), else usage, ``min(1, recalls / reward_saturation)``.
    |delta_TD|: ``metadata.td_error`` if set, else the gap between the reward and what
    the memory's confidence predicted, ``|reward - alpha / (alpha + beta)|``.
    """
    # Python floats per item (the same double arithmetic as on array elements, less overhead).
    reward: list[float] = []
    td: list[float] = []
    saturation = limits.reward_saturation
    for it in items:
        meta = it.metadata
        r = meta.get(META_REWARD)
        out = it.state.get(OUTCOMES)
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            rv = float(r)
        elif isinstance(out, dict) and int(out.get("ok", 0)) + int(out.get("fail", 0)) > 0:
            ok, fail = int(out.get("ok", 0)), int(out.get("fail", 0))
            rv = ok / (ok + fail)
        else:
            rv = min(1.0, it.access_count / saturation)
        rk = float(min(1.0, max(0.0, rv)))
        reward.append(rk)
        t = meta.get(META_TD_ERROR)
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            td.append(min(1.0, abs(float(t))))
        else:
            td.append(abs(rk - it.confidence))
    return np.array(reward, dtype=float).reshape(-1), np.array(td, dtype=float).reshape(-1)


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
    base = engine.param("simulation_selection_sleep", sleep_selection.DEFAULTS)
    shift = limits.patience_gain * (neuro.consolidation_patience - 0.5)
    theta = float(min(0.95, max(0.05, base.select_threshold + shift)))
    ltd = float(min(theta, max(0.0, base.ltd_threshold + (theta - base.select_threshold))))
    params = replace(base, select_threshold=theta, ltd_threshold=ltd)
    tf = engine.param("two_factor_hebbian", two_factor.DEFAULTS)

    part = snap.part
    eps = sorted(snap.select(layers=[Layer.EPISODIC]), key=lambda i: (i.created_at, i.id), reverse=True)
    eps = eps[: int(limits.sleep_max_episodes)]
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

    with engine.store.transaction() as tx:
        changed_ids = list(plan.strengths)
        tx.update_columns(part, changed_ids, strength=[plan.strengths[m] for m in changed_ids])
        for mid in changed_ids:
            eps[index[mid]].strength = float(plan.strengths[mid])
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
        for (src, dst), w in plan.new_edges.items():
            e = Edge(src, dst, RELATION_COUNTERFACTUAL, float(w), tf.initial_variance, 0, now)
            upd[(src, dst, RELATION_COUNTERFACTUAL)] = e
            report["edges_created"].append(edge_entry(e))
        report["edges_pruned"] = [edge_entry(by_key[k]) for k in plan.pruned_edges]
        # One write with any deferred Two-Factor decay: each edge is written once.
        snap.write_edges(tx, puts=upd, deletes=list(plan.pruned_edges))
    report["summary"] = plan.summary()
    return report, replayed


# ---------------------------------------------------------------------------- TripleCopy
def triple_copy_stage(
    engine: Engine, snap: Snapshot, now: float, replayed: dict[str, float], *, detail: bool = True
) -> dict[str, Any]:
    """Replayed memories consolidate: their deep copy's target grows (``triple_copy.consolidate``).

    ``detail=False`` leaves out the per-memory ``memories`` entries (``promoted`` counts them).
    """
    if not engine.on("triple_copy"):
        return skipped()
    params = engine.param("triple_copy", triple_copy.DEFAULT_PARAMS)
    report: dict[str, Any] = {"promoted": 0, "memories": {}} if detail else {"promoted": 0}
    if not replayed:
        report["note"] = "no memory was replayed"
        return report
    part = snap.part
    items = [snap.items[m] for m in replayed if m in snap.items]
    with engine.store.transaction() as tx:
        for it in items:
            st = copy_state(it, params)
            new = triple_copy.consolidate(st, now=now, amount=replayed[it.id], params=params)
            it.state[COPIES] = new.to_dict()
            if detail:
                report["memories"][it.id] = {
                    "amount": num(replayed[it.id]),
                    "deep_target": [num(st.deep_target), num(new.deep_target)],
                }
        tx.update_states(part, {it.id: it.state for it in items})
    report["promoted"] = len(items)
    return report


# ---------------------------------------------------------------------------- Bayesian
def bayesian_stage(engine: Engine, snap: Snapshot, now: float, *, detail: bool = True) -> dict[str, Any]:
    """Loopy belief propagation over the semantic facts' typed edges.

    The local evidence of each fact (the unary factor) is kept in state ``conf_local``;
    observations added since the last pass (conf_alpha/conf_beta moved away from what
    propagation wrote, ``conf_written``) are added to it, so the graph is never counted twice.
    ``detail=False`` reports the number of changed facts (``changed_count``) instead of
    one entry per fact.
    """
    if not engine.on("bayesian_confidence"):
        return skipped()
    params = engine.param("bayesian_confidence", bayesian.BayesianParams())
    part = snap.part
    facts = snap.select(layers=[Layer.SEMANTIC])
    report: dict[str, Any] = {"facts": len(facts), "edges": 0}
    report.update({"changed": {}} if detail else {"changed_count": 0})
    if not facts:
        return report
    n = len(facts)
    cur_a = np.fromiter((f.conf_alpha for f in facts), float, n)
    cur_b = np.fromiter((f.conf_beta for f in facts), float, n)
    loc_a, loc_b = cur_a.copy(), cur_b.copy()
    for k, f in enumerate(facts):
        local, written = f.state.get(CONF_LOCAL), f.state.get(CONF_WRITTEN)
        if isinstance(local, list) and isinstance(written, list) and len(local) == 2 and len(written) == 2:
            loc_a[k] = max(1e-3, float(local[0]) + cur_a[k] - float(written[0]))
            loc_b[k] = max(1e-3, float(local[1]) + cur_b[k] - float(written[1]))
    index = {f.id: k for k, f in enumerate(facts)}
    couplings = bayesian.relation_couplings(params)
    edges = [e for e in snap.edges.values() if e.relation in couplings and e.src in index and e.dst in index]
    src, dst, rel, w = bayesian.edge_arrays(edges, index)
    report["edges"] = int(src.size)
    res = bayesian.propagate(alpha=loc_a, beta=loc_b, src=src, dst=dst, relation=rel, weight=w,
                             ids=[f.id for f in facts], params=params)
    report["iterations"] = int(res.iterations)
    report["converged"] = bool(res.converged)
    moved = np.flatnonzero((np.abs(res.alpha - cur_a) > 1e-9) | (np.abs(res.beta - cur_b) > 1e-9))
    if moved.size == 0:
        return report
    with engine.store.transaction() as tx:
        ids = [facts[k].id for k in moved]
        tx.update_columns(part, ids, conf_alpha=[float(res.alpha[k]) for k in moved],
                          conf_beta=[float(res.beta[k]) for k in moved])
        events: list[HistoryEvent] = []
        for k in moved:
            f = facts[k]
            f.conf_alpha, f.conf_beta = float(res.alpha[k]), float(res.beta[k])
            f.state[CONF_LOCAL] = [float(loc_a[k]), float(loc_b[k])]
            f.state[CONF_WRITTEN] = [float(res.alpha[k]), float(res.beta[k])]
            before = float(cur_a[k] / (cur_a[k] + cur_b[k]))
            after = float(res.belief[k])
            entry = {"confidence": [before, after], "local": float(res.local[k]),
                     "alpha": [float(cur_a[k]), float(res.alpha[k])], "beta": [float(cur_b[k]), float(res.beta[k])]}
            if abs(after - before) >= params.log_threshold:
                events.append(HistoryEvent(f.id, now, "confidence", entry))
            if detail:
                report["changed"][f.id] = entry
        # The states and the history rows, each in one statement (the same rows, in order).
        tx.update_states(part, {facts[k].id: facts[k].state for k in moved})
        tx.log(part, events)
    if not detail:
        report["changed_count"] = int(moved.size)
    return report


# ---------------------------------------------------------------------------- spectral health
def spectral_stage(engine: Engine, snap: Snapshot, now: float, context: str) -> dict[str, Any]:
    """Fiedler value of each context's memory graph; bridge fragments; store the last lambda_2."""
    if not engine.on("spectral_kg_health"):
        return skipped()
    params = engine.param("spectral_kg_health", spectral.SpectralParams())
    part = snap.part
    active = {i.id: i.context for i in snap.select()}
    per_ctx: dict[str, list[Edge]] = defaultdict(list)
    for e in snap.edges.values():
        c1 = active.get(e.src)
        if c1 is not None and e.src != e.dst and active.get(e.dst) == c1:
            per_ctx[c1].append(e)
    report: dict[str, Any] = {"contexts": {}, "bridges": []}
    new_edges: list[Edge] = []
    for ctx in sorted(per_ctx):
        edges = per_ctx[ctx]
        nodes = sorted({e.src for e in edges} | {e.dst for e in edges})
        pos = {m: k for k, m in enumerate(nodes)}
        s = np.fromiter((pos[e.src] for e in edges), np.int64, len(edges))
        d = np.fromiter((pos[e.dst] for e in edges), np.int64, len(edges))
        w = np.fromiter((e.weight for e in edges), float, len(edges))
        before = spectral.health(n=len(nodes), src=s, dst=d, weight=w, params=params)
        bridges: list[spectral.Bridge] = []
        if before.is_fragmented and before.n_components > 1:
            vec = vectors(engine, part, nodes).astype(np.float64)
            bridges = spectral.propose_bridges(report=before, vectors=vec, params=params)
        after = before
        if bridges:
            s2, d2, w2 = spectral.with_bridges(src=s, dst=d, weight=w, bridges=bridges)
            after = spectral.health(n=len(nodes), src=s2, dst=d2, weight=w2, params=params)
            for b in bridges:
                e = Edge(nodes[b.src], nodes[b.dst], RELATION_BRIDGE, float(b.similarity), 1.0, 0, now)
                new_edges.append(e)
                report["bridges"].append({**edge_entry(e), "context": ctx, "similarity": num(b.similarity),
                                          "components": list(b.components)})
        change = spectral.compare(before, after)
        report["contexts"][ctx] = {
            "fiedler": [num(change.fiedler_before), num(change.fiedler_after)],
            "components": [change.components_before, change.components_after],
            "nodes": before.n_nodes, "edges": before.n_edges,
            "fragmented": [before.is_fragmented, after.is_fragmented],
        }
    scoped = report["contexts"].get(context)
    kv = {
        "at": now,
        "fiedler": scoped["fiedler"][1] if scoped else 0.0,
        "context": context,
        "by_context": {
            c: {"fiedler": v["fiedler"][1], "components": v["components"][1]} for c, v in report["contexts"].items()
        },
    }
    report["fiedler"] = kv["fiedler"]
    with engine.store.transaction() as tx:
        snap.put_edges(tx, new_edges)
        tx.kv_put(part, {KV_SPECTRAL: kv})
    return report


# ---------------------------------------------------------------------------- compositional
def compositional_stage(engine: Engine, snap: Snapshot, now: float) -> dict[str, Any]:
    """Fit the shared and per-context bases over the partition's vectors; save them in kv."""
    if not engine.on("compositional_context"):
        return skipped()
    limits = engine.config.lifecycle
    params = engine.param("compositional_context", compositional.CompositionalParams())
    part = snap.part
    by_ctx: dict[str, list[MemoryItem]] = defaultdict(list)
    for it in sorted(snap.select(), key=lambda i: (i.created_at, i.id), reverse=True):
        if len(by_ctx[it.context]) < limits.compositional_max_per_context:
            by_ctx[it.context].append(it)
    ids = [i.id for c in sorted(by_ctx) for i in by_ctx[c]]
    ctxs = [c for c in sorted(by_ctx) for _ in by_ctx[c]]
    vec = vectors(engine, part, ids).astype(np.float64)
    keep = np.linalg.norm(vec, axis=1) > 0
    vec, ctxs = vec[keep], [c for c, k in zip(ctxs, keep) if k]
    if vec.shape[0] == 0:
        return {"memories": 0, "note": "no vectors"}
    state = compositional.fit(vectors=vec, contexts=ctxs, params=params)
    data = state.to_json()
    data["fitted_at"] = now
    with engine.store.transaction() as tx:
        tx.kv_put(part, {KV_COMPOSITIONAL: data})
    return {
        "memories": int(vec.shape[0]),
        "context_sizes": dict(state.context_sizes),
        "shared_dim": state.shared_dim,
        "agreement": [num(a) for a in state.agreement],
        "specific_dims": {c: int(m.shape[1]) for c, m in sorted(state.specific.items())},
    }


# ---------------------------------------------------------------------------- curiosity
def curiosity_stage(engine: Engine, snap: Snapshot, now: float) -> dict[str, Any]:
    """Rank the semantic facts by uncertainty and learning progress; store the queue in kv.

    Each fact keeps a short confidence history (state ``conf_history``) for the slope.
    """
    if not engine.on("curiosity"):
        return skipped()
    limits = engine.config.lifecycle
    params = engine.param("curiosity", curiosity.DEFAULT_PARAMS)
    part = snap.part
    facts = snap.select(layers=[Layer.SEMANTIC])
    histories: list[tuple[list[float], list[float]]] = []
    touched: list[MemoryItem] = []
    for f in facts:
        h = [p for p in (f.state.get(CONF_HISTORY) or []) if isinstance(p, list) and len(p) == 2]
        if not h or now - float(h[-1][0]) >= limits.curiosity_min_interval_s:
            h = (h + [[float(now), float(f.confidence)]])[-int(limits.curiosity_history):]
            f.state[CONF_HISTORY] = h
            touched.append(f)
        histories.append(([float(p[0]) for p in h], [float(p[1]) for p in h]))
    gaps = curiosity.rank_gaps(
        ids=[f.id for f in facts],
        alpha=np.fromiter((f.conf_alpha for f in facts), float, len(facts)),
        beta=np.fromiter((f.conf_beta for f in facts), float, len(facts)),
        now=now,
        histories=histories,
        limit=int(limits.curiosity_queue_size),
        params=params,
    ) if facts else ()
    queue = [g.to_dict() for g in gaps]
    with engine.store.transaction() as tx:
        tx.update_states(part, {f.id: f.state for f in touched})
        # A list of gaps, highest priority first: the shape review_queue reads.
        tx.kv_put(part, {KV_CURIOSITY: queue})
    return {"facts": len(facts), "queued": len(queue), "queue": queue}


# ---------------------------------------------------------------------------- HyperAgent
def hyperagent_stage(engine: Engine, part: Any, now: float) -> dict[str, Any]:
    """Read the MetacognitiveMonitor's log, step the HyperAgent, store its state and changes."""
    if not engine.on("metacognitive_hyperagent"):
        return skipped()
    params = engine.param("metacognitive_hyperagent", hyperagent.DEFAULT_PARAMS)
    raw = engine.store.kv_get(part, KV_HYPER)
    state = None
    if isinstance(raw, dict):
        try:
            state = hyperagent.HyperAgentState.from_dict(raw)
        except (KeyError, TypeError, ValueError):
            state = None
    if state is None:
        lw = min(hyperagent.TUNABLES["lexical_weight"].hi, engine.config.recall.lexical_weight)
        state = hyperagent.initial_state(values={"lexical_weight": lw})
    report: dict[str, Any] = {"signals": None, "changes": [], "values": dict(state.values)}
    mparams = engine.param("metacognitive_monitor", metacognition.DEFAULT_PARAMS)
    monitor = monitor_log.load(engine.store, part, mparams, since=now - mparams.window_s)
    changes: tuple[hyperagent.ParamChange, ...] = ()
    if monitor.retrievals or monitor.evidence or monitor.surprises:
        sig = metacognition.signals(monitor, now=now, params=mparams)
        state, changes = hyperagent.step(state, signals=sig, now=now, params=params)
        report["signals"] = {
            "n_retrievals": sig.n_retrievals, "n_evidence": sig.n_evidence, "hit_rate": sig.hit_rate,
            "ece": sig.ece, "recency_bias": sig.recency_bias, "confirmation_bias": sig.confirmation_bias,
            "alerts": sorted(sig.alert_kinds()),
        }
    else:
        report["note"] = "no metacognition log yet"
    report["changes"] = [asdict(c) for c in changes]
    report["values"] = dict(state.values)
    with engine.store.transaction() as tx:
        tx.kv_put(part, {KV_HYPER: state.to_dict()})
    return report


__all__ = [
    "bayesian_stage",
    "compositional_stage",
    "curiosity_stage",
    "edge_decay_stage",
    "episode_signals",
    "hyperagent_stage",
    "neuromodulator_stage",
    "selection_stage",
    "spectral_stage",
    "triple_copy_stage",
]
