"""Sleep stage: importance-gated decay of the Two-Factor association edges, and pruning."""

from __future__ import annotations

from itertools import compress
from typing import Any

import numpy as np

from ...clock import DAY
from ...engine import Engine
from ...mechanisms import two_factor
from ...model import Edge
from ...state import (
    KV_EDGE_DECAY,
    PROVENANCE,
)
from .common import Snapshot, skipped


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
    params = engine.config.params.two_factor_hebbian
    part = snap.part
    last = engine.store.kv_get(part, KV_EDGE_DECAY) or {}
    last_at = last.get("at")
    # Keys and edges as two lists (not a list of pairs): the whole graph passes through here.
    keys: list[tuple[str, str, str]] = []
    edges: list[Edge] = []
    for k, e in snap.edges.items():
        if k[2] not in PROVENANCE:
            keys.append(k)
            edges.append(e)
    report: dict[str, Any] = {"edges": len(edges), "last_pass": last_at}
    decayed_keys: list[tuple[str, str, str]] = []
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
        changed_mask = ~prune & (np.abs(new_w - w) > 1e-12)
        # The snapshot's edges change in place (as its memories do); the store follows below.
        mask = changed_mask.tolist()
        decayed_keys = list(compress(keys, mask))
        for e, x in zip(compress(edges, mask), new_w[changed_mask].tolist()):
            e.weight = x
        dead = np.flatnonzero(prune).tolist()
        dead_keys = [keys[j] for j in dead]
        if detail or dead:
            nl = new_w.tolist()
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
                    for j in np.flatnonzero(changed_mask).tolist() for e in (edges[j],)
                ]
    if detail:
        report["decayed"] = decayed_entries
    else:
        report["decayed_count"] = len(decayed_keys)
    report["pruned"] = pruned_entries
    # Puts and deletions name different edges, so deleting first is the same as after.
    snap.defer_edges(changed=decayed_keys, deletes=dead_keys, kv={KV_EDGE_DECAY: {"at": now}})
    if not defer:
        snap.flush()
    return report
