"""Sleep stage: the curiosity engine's queue of knowledge gaps."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...engine import Engine
from ...model import Layer, MemoryItem
from ...pma import curiosity
from ...state import (
    CONF_HISTORY,
    KV_CURIOSITY,
)
from .common import Snapshot, skipped


def curiosity_stage(engine: Engine, snap: Snapshot, now: float) -> dict[str, Any]:
    """Rank the semantic facts by uncertainty and learning progress; store the queue in kv.

    Each fact keeps a short confidence history (state ``conf_history``) for the slope.
    """
    if not engine.on("curiosity"):
        return skipped()
    limits = engine.config.lifecycle
    params = engine.config.params.curiosity
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
