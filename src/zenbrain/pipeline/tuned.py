"""Parameters the metacognitive HyperAgent tunes at sleep (bounded, logged changes).

The HyperAgent keeps its current values in the partition's ``hyperagent`` record; an
operation that reads such a parameter asks here, and gets the configured default when
the HyperAgent has not moved it or is switched off.
"""

from __future__ import annotations

from typing import Any

from ..engine import Engine
from ..state import KV_HYPER
from ..storage.base import Partition


def tuned_value(raw: Any, name: str, default: float) -> float:
    """``name`` as the stored HyperAgent record ``raw`` (None when unset) has it."""
    values = (raw or {}).get("values") or {}
    return float(values.get(name, default))


def tuned(engine: Engine, part: Partition, name: str, default: float) -> float:
    """A parameter as the HyperAgent last set it, or ``default``."""
    if not engine.on("metacognitive_hyperagent"):
        return default
    return tuned_value(engine.store.kv_get(part, KV_HYPER), name, default)


def tuned_from(engine: Engine, raw: Any, name: str, default: float) -> float:
    """``tuned`` from the HyperAgent record ``raw`` a caller has read already."""
    return tuned_value(raw, name, default) if engine.on("metacognitive_hyperagent") else default
