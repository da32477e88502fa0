"""Two-Factor knowledge-graph dynamics and Bayesian confidence propagation on the real system.

**Part A, Two-Factor KG** (the paper: 50 entities in 5 clusters, 200 co-activation events,
80 % within a cluster). 50 memories are stored; an entity's vector is its cluster's
direction plus an equally strong private direction (cosine about 0.3-0.4 within a
cluster, about 0 across), so clusters are a property of the data, not of the graph. An
event co-activates two entities the way zenbrain learns associations: a recall (k = 2,
``touch=True``) whose query is the normalised sum of the two entities' vectors; the
coordinator's Hebbian step then updates the ``co_recall`` edge between the recalled
memories (weight by tag x amplitude, amplitude = their cosine; variance shrinks with
each activation). Events are a minute apart (200 events span 3 h 20 min, so
forgetting, with S0 = 1 day, barely moves the ranking). Afterwards each entity's neighbours are
ranked by the learned edges and compared with the ground-truth clusters (fixed before
anything runs): precision@5 (same-cluster among the top 5, over 5) and recall@5 (over
the 9 other members). Rankings: ``weighted`` (weight x importance 1/variance, the
quantity the recall boost uses), ``weight`` (weight only), ``uniform`` (every learned
edge equal; ties broken by a seeded shuffle), and ``embedding`` (cosine of the vectors,
no graph). Also the mean weight of intra- vs inter-cluster edges, and the same run with
``two_factor_hebbian`` switched off.

**Part B, Bayesian propagation** (the paper: 30 facts, 40 typed relations, pairwise AUC
before/after). 30 semantic facts, half of them true (labels drawn first). Each fact's
local evidence is three noisy observations, each pointing to the truth with probability
0.6 (Beta(1 + agreeing, 1 + disagreeing)). 40 relations between random pairs: two true
facts or two false facts ``supports``, a true and a false one ``contradicts``; 10 % of
relation types are flipped (noise). The observations are recorded with
``coord.record_evidence`` and the relations declared with ``coord.relate``; the propagation
itself is the real ``sleep()`` (its ``bayesian_confidence`` stage). AUC (probability that
a random true fact has a higher confidence than a random false one; Mann-Whitney U /
(n1 n2), computed with scipy) before (local evidence) and after; the mean confidence
change of true and of false facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sst

from zenbrain.clock import HOUR
from zenbrain.config import Config
from zenbrain.ids import seeded_ids
from zenbrain.model import Kind, Layer
from zenbrain.registry import Mechanisms

from .harness import open_run
from .synthetic import DIM, SyntheticEmbedder, unit_rows

__all__ = ["bayes_run", "jobs", "kg_run", "summarize"]

N_ENT, N_CLUSTERS, N_EVENTS, INTRA = 50, 5, 200, 0.8
EVENT_GAP_S = 60.0  # one co-activation a minute: 200 events span 3h20, so forgetting (S0 = 1 day) barely acts


def _entities(seed: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([int(seed), 10])
    centres = unit_rows(rng.normal(size=(k, DIM)))
    labels = np.arange(n) % k
    private = unit_rows(rng.normal(size=(n, DIM)))
    return unit_rows(0.7 * centres[labels] + 0.7 * private), labels


def kg_run(seed: int, hebbian: bool = True, n_entities: int = N_ENT, n_events: int = N_EVENTS) -> dict[str, Any]:
    vecs, labels = _entities(seed, n_entities, N_CLUSTERS)
    rng = np.random.default_rng([int(seed), 11])
    texts = [f"ent{i:03d}" for i in range(n_entities)]
    events = []
    for e in range(n_events):
        if rng.random() < INTRA:
            c = int(rng.integers(N_CLUSTERS))
            a, b = rng.choice(np.flatnonzero(labels == c), size=2, replace=False)
        else:
            a, b = rng.choice(n_entities, size=2, replace=False)
        events.append((int(a), int(b)))
    qtexts = [f"co{e:04d}" for e in range(n_events)]
    table = dict(zip(texts, vecs))
    table.update({t: unit_rows(vecs[a] + vecs[b]) for t, (a, b) in zip(qtexts, events)})
    mech = Mechanisms() if hebbian else Mechanisms(disabled=frozenset({"two_factor_hebbian"}))
    with seeded_ids(seed):
        run = open_run(SyntheticEmbedder(table), Config(mechanisms=mech, seed=int(seed)))
        try:
            run.store_facts(texts)
            both_top = 0
            for e, (a, b) in enumerate(events):
                run.clock.advance(EVENT_GAP_S)
                hits = run.coord.recall(qtexts[e], run.scope, k=2, touch=True)
                got = {run.index_of.get(h.item.id) for h in hits}
                both_top += int(got == {a, b})
            edges = [x for x in run.coord.storage.edges(run.part) if x.relation == "co_recall"]
        finally:
            run.close()
    idx = run.index_of
    W = np.zeros((n_entities, n_entities))
    I = np.zeros((n_entities, n_entities))
    for x in edges:
        i, j = idx.get(x.src), idx.get(x.dst)
        if i is None or j is None or i == j:
            continue
        W[i, j] = W[j, i] = max(W[i, j], x.weight)
        I[i, j] = I[j, i] = max(I[i, j], 1.0 / max(x.variance, 1e-12))
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    has = W > 0
    tie = np.random.default_rng([int(seed), 12]).random((n_entities, n_entities))
    cos = vecs @ vecs.T

    def score(name: str) -> np.ndarray:
        if name == "weighted":
            s = np.where(has, W * I, -np.inf)
        elif name == "weight":
            s = np.where(has, W, -np.inf)
        elif name == "uniform":
            s = np.where(has, 1.0 + 1e-9 * tie, -np.inf)
        else:
            s = cos.copy()
        np.fill_diagonal(s, -np.inf)
        return s

    out: dict[str, Any] = {}
    members = same.sum(axis=1)
    for name in ("weighted", "weight", "uniform", "embedding"):
        s = score(name)
        order = np.argsort(-s, axis=1, kind="stable")[:, :5]
        valid = np.take_along_axis(np.isfinite(s), order, axis=1)
        hit = np.take_along_axis(same, order, axis=1) & valid
        out[f"precision5_{name}"] = float((hit.sum(axis=1) / 5.0).mean())
        out[f"recall5_{name}"] = float((hit.sum(axis=1) / np.maximum(members, 1)).mean())
    iu = np.triu_indices(n_entities, 1)
    w_intra = W[iu][same[iu] & has[iu]]
    w_inter = W[iu][~same[iu] & has[iu]]
    out.update({
        "edges": int(has[iu].sum()),
        "intra_edges": int(w_intra.size),
        "inter_edges": int(w_inter.size),
        "mean_weight_intra": float(w_intra.mean()) if w_intra.size else 0.0,
        "mean_weight_inter": float(w_inter.mean()) if w_inter.size else 0.0,
        "intra_inter_ratio": float(w_intra.mean() / w_inter.mean()) if w_intra.size and w_inter.size else None,
        "events_pair_on_top": both_top,
    })
    return out


def bayes_run(seed: int, bayesian: bool = True, n_facts: int = 30, n_relations: int = 40) -> dict[str, Any]:
    rng = np.random.default_rng([int(seed), 13])
    truth = np.zeros(n_facts, dtype=bool)
    truth[rng.choice(n_facts, size=n_facts // 2, replace=False)] = True
    agree = rng.random((n_facts, 3)) < 0.6
    says_true = np.where(truth[:, None], agree, ~agree).sum(axis=1)
    pairs: list[tuple[int, int]] = []
    seen = set()
    while len(pairs) < n_relations:
        a, b = (int(x) for x in rng.choice(n_facts, size=2, replace=False))
        if (a, b) in seen or (b, a) in seen:
            continue
        seen.add((a, b))
        pairs.append((a, b))
    flips = rng.random(n_relations) < 0.1
    rels = []
    for (a, b), flip in zip(pairs, flips):
        consistent = truth[a] == truth[b]
        rel = "supports" if consistent else "contradicts"
        if flip:
            rel = "contradicts" if rel == "supports" else "supports"
        rels.append((a, b, rel))
    vecs = unit_rows(np.random.default_rng([int(seed), 14]).normal(size=(n_facts, DIM)))
    texts = [f"bf{i:03d}" for i in range(n_facts)]
    mech = Mechanisms() if bayesian else Mechanisms(disabled=frozenset({"bayesian_confidence"}))
    with seeded_ids(seed):
        run = open_run(SyntheticEmbedder(dict(zip(texts, vecs))), Config(mechanisms=mech, seed=int(seed)))
        try:
            run.store_facts(texts, layer=Layer.SEMANTIC, kind=Kind.FACT)
            ids = run.fact_ids
            # Each fact's three noisy observations as evidence for and against it (Beta(1, 1) + votes).
            for mid, votes_for in zip(ids, says_true.tolist()):
                if votes_for > 0:
                    run.coord.record_evidence(mid, run.scope, supports=True, strength=float(votes_for))
                if votes_for < 3:
                    run.coord.record_evidence(mid, run.scope, supports=False, strength=float(3 - votes_for))
            for a, b, rel in rels:
                run.coord.relate(ids[a], ids[b], rel, run.scope)
            before = np.array([i.confidence for i in run.coord.storage.get(run.part, ids)])
            run.clock.advance(HOUR)
            rep = run.coord.sleep(run.scope).stages.get("bayesian_confidence") or {}
            by_id = {i.id: i for i in run.coord.storage.get(run.part, ids)}
            after = np.array([by_id[i].confidence for i in ids])
        finally:
            run.close()

    def auc(s: np.ndarray) -> float:
        u = sst.mannwhitneyu(s[truth], s[~truth], alternative="two-sided").statistic
        return float(u / (truth.sum() * (~truth).sum()))

    return {
        "auc_before": auc(before),
        "auc_after": auc(after),
        "delta_conf_true": float((after - before)[truth].mean()),
        "delta_conf_false": float((after - before)[~truth].mean()),
        "iterations": rep.get("iterations"),
        "edges_used": rep.get("edges"),
    }


def jobs(seeds: Sequence[int], quick: bool = False) -> list:
    from .pool import Job

    n_events = 60 if quick else N_EVENTS
    out = []
    for s in seeds:
        out.append(Job(("kg", "hebbian", int(s)), f"{__name__}:kg_run", dict(seed=int(s), n_events=n_events), cost=n_events * 30))
        out.append(Job(("kg", "no_hebbian", int(s)), f"{__name__}:kg_run", dict(seed=int(s), hebbian=False, n_events=n_events),
                       cost=n_events * 25))
        out.append(Job(("bayes", "on", int(s)), f"{__name__}:bayes_run", dict(seed=int(s)), cost=300))
        out.append(Job(("bayes", "off", int(s)), f"{__name__}:bayes_run", dict(seed=int(s), bayesian=False), cost=300))
    return out


def summarize(results: dict, seeds: Sequence[int], quick: bool = False) -> dict[str, Any]:
    from ..stats import compare_paired, describe

    def col(kind: str, arm: str, key: str) -> list[float]:
        return [float(results[(kind, arm, int(s))][key]) for s in seeds]

    kg: dict[str, Any] = {"seeds": [int(s) for s in seeds], "n_entities": N_ENT, "n_clusters": N_CLUSTERS,
                          "n_events": 60 if quick else N_EVENTS, "intra_share": INTRA}
    for arm in ("hebbian", "no_hebbian"):
        block: dict[str, Any] = {}
        for name in ("weighted", "weight", "uniform", "embedding"):
            block[f"precision5_{name}"] = describe(col("kg", arm, f"precision5_{name}"))
            block[f"recall5_{name}"] = describe(col("kg", arm, f"recall5_{name}"))
        for key in ("edges", "intra_edges", "inter_edges", "mean_weight_intra", "mean_weight_inter", "events_pair_on_top"):
            block[key] = describe(col("kg", arm, key))
        ratios = [results[("kg", arm, int(s))]["intra_inter_ratio"] for s in seeds]
        block["intra_inter_ratio"] = describe([r for r in ratios if r is not None]) if any(r is not None for r in ratios) else None
        kg[arm] = block
    kg["weighted_vs_uniform"] = compare_paired(col("kg", "hebbian", "precision5_weighted"),
                                               col("kg", "hebbian", "precision5_uniform"), seed=30)
    kg["weighted_vs_embedding"] = compare_paired(col("kg", "hebbian", "precision5_weighted"),
                                                 col("kg", "hebbian", "precision5_embedding"), seed=31)
    bayes: dict[str, Any] = {"seeds": [int(s) for s in seeds], "n_facts": 30, "n_relations": 40}
    for arm in ("on", "off"):
        bayes[arm] = {k: describe(col("bayes", arm, k)) for k in ("auc_before", "auc_after", "delta_conf_true", "delta_conf_false")}
    bayes["after_vs_before"] = compare_paired(col("bayes", "on", "auc_after"), col("bayes", "on", "auc_before"), seed=32)
    return {"two_factor": kg, "bayesian": bayes}
