"""Sleep stage: the metacognitive HyperAgent's bounded step from the monitor's signals."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ...engine import Engine
from ...pma import hyperagent, metacognition
from ...state import (
    KV_HYPER,
)
from .. import monitor_log
from .common import skipped


def hyperagent_stage(engine: Engine, part: Any, now: float) -> dict[str, Any]:
    """Read the MetacognitiveMonitor's log, step the HyperAgent, store its state and changes."""
    if not engine.on("metacognitive_hyperagent"):
        return skipped()
    params = engine.config.params.metacognitive_hyperagent
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
    mparams = engine.config.params.metacognitive_monitor
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
