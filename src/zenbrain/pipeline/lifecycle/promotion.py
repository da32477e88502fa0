"""Sleep stage: TripleCopy promotion (replayed memories grow their deep copy)."""

from __future__ import annotations

from typing import Any

from ...engine import Engine
from ...pma import triple_copy
from ...state import (
    COPIES,
)
from ..retrievability import copy_state
from .common import Snapshot, num, skipped


def triple_copy_stage(
    engine: Engine, snap: Snapshot, now: float, replayed: dict[str, float], *, detail: bool = True
) -> dict[str, Any]:
    """Replayed memories consolidate: their deep copy's target grows (``triple_copy.consolidate``).

    ``detail=False`` leaves out the per-memory ``memories`` entries (``promoted`` counts them).
    """
    if not engine.on("triple_copy"):
        return skipped()
    params = engine.config.params.triple_copy
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
