"""Sleep stage: spectral health of each context's memory graph; fragments get bridge edges."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ...engine import Engine
from ...model import Edge
from ...state import (
    KV_SPECTRAL,
    RELATION_BRIDGE,
)
from .common import Snapshot, edge_entry, num, skipped, vectors


def spectral_stage(engine: Engine, snap: Snapshot, now: float, context: str) -> dict[str, Any]:
    """Fiedler value of each context's memory graph; bridge fragments; store the last lambda_2."""
    if not engine.on("spectral_kg_health"):
        return skipped()
    # scipy's sparse eigensolvers are imported when sleep first needs them, not with zenbrain.
    from ...mechanisms import spectral

    params = engine.config.params.spectral_kg_health
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
