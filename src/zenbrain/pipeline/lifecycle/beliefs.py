"""Sleep stage: Bayesian confidence propagation over the semantic facts' typed edges."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...engine import Engine
from ...mechanisms import bayesian
from ...model import HistoryEvent, Layer
from ...state import (
    CONF_LOCAL,
    CONF_WRITTEN,
)
from .common import Snapshot, skipped


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
    params = engine.config.params.bayesian_confidence
    part = snap.part
    facts = snap.select(layers=[Layer.SEMANTIC])
    report: dict[str, Any] = {"facts": len(facts), "edges": 0}
    if detail:
        report["changed"] = {}
    else:
        report["changed_count"] = 0
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
        for k in moved.tolist():
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
