"""Sleep stage: neuromodulator homeostasis (the tonic levels relax to baseline; their outputs steer replay)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ...engine import Engine
from ...pma import neuromodulator
from ...state import (
    KV_NEURO,
)
from .common import num, skipped


def neuromodulator_stage(
    engine: Engine, part: Any, now: float
) -> tuple[dict[str, Any], neuromodulator.NeuromodulatorOutputs]:
    """Homeostasis: relax the tonic levels to ``now``; return the outputs other stages read."""
    if not engine.on("neuromodulator"):
        return skipped(), neuromodulator.NEUTRAL_OUTPUTS
    params = engine.config.params.neuromodulator
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
