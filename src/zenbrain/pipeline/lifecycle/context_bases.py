"""Sleep stage: compositional context (shared and per-context bases over the partition's vectors)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ...engine import Engine
from ...mechanisms import compositional
from ...model import MemoryItem
from ...state import (
    KV_COMPOSITIONAL,
)
from .common import Snapshot, num, skipped, vectors


def compositional_stage(engine: Engine, snap: Snapshot, now: float) -> dict[str, Any]:
    """Fit the shared and per-context bases over the partition's vectors; save them in kv."""
    if not engine.on("compositional_context"):
        return skipped()
    limits = engine.config.lifecycle
    params = engine.config.params.compositional_context
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
