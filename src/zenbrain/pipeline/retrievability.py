"""How retrievable each memory is now: the forgetting mechanisms that are switched on.

Ebbinghaus gives R = exp(-t / (S m)) (``mechanisms.ebbinghaus.retrievability``) and
TripleCopy the composite max(fast, medium, deep) (``pma.triple_copy.strengths``). With
both on, a memory is as retrievable as its best trace; with neither, nothing fades. Core
memories never decay. Both formulas live in their mechanism modules; this module only
gathers the columns they read, once for many memories.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..clock import DAY
from ..engine import Engine
from ..mechanisms import ebbinghaus
from ..model import Layer, MemoryItem
from ..pma import triple_copy
from ..state import COPIES, SIGNIFICANCE


def copy_state(item: MemoryItem, params: triple_copy.TripleCopyParams) -> triple_copy.CopyState:
    """The memory's TripleCopy state; for a memory stored while TripleCopy was off (or with
    an unreadable state), the state of an encoding at its last access with its strength."""
    raw = item.state.get(COPIES)
    if raw is not None:
        try:
            return triple_copy.CopyState.from_dict(raw)
        except (KeyError, TypeError, ValueError):
            pass
    return triple_copy.encode(s0=min(1.0, max(0.0, float(item.strength))), now=float(item.last_access), params=params)


def copy_composite(items: Sequence[MemoryItem], now: float, params: triple_copy.TripleCopyParams) -> np.ndarray:
    """TripleCopy's composite strength of every item at ``now``."""
    rows = []
    for i in items:
        try:
            rows.append(triple_copy.row_of(i.state[COPIES]))
        except (KeyError, TypeError, ValueError):
            rows.append(copy_state(i, params).row())
    return np.asarray(triple_copy.evaluate_rows(rows, now=now, params=params).composite,
                      dtype=float).reshape(len(items))


def ebbinghaus_r(items: Sequence[MemoryItem], now: float, params: ebbinghaus.EbbinghausParams) -> np.ndarray:
    """Ebbinghaus R of every item at ``now`` (core memories not pinned here)."""
    n = len(items)
    last_access = np.fromiter((i.last_access for i in items), float, n)
    return np.asarray(
        ebbinghaus.retrievability(
            elapsed_days=np.maximum(0.0, (now - last_access) / DAY),
            stability=np.fromiter((i.stability for i in items), float, n),
            arousal=np.fromiter((i.arousal for i in items), float, n),
            valence=np.fromiter((i.valence for i in items), float, n),
            significance=np.fromiter((float(i.state.get(SIGNIFICANCE, 0.0)) for i in items), float, n),
            params=params,
        ),
        dtype=float,
    ).reshape(n)


def retrievability(engine: Engine, items: Sequence[MemoryItem], now: float) -> np.ndarray:
    """R in [0, 1] of every item, vectorised; 1 for core memories and when nothing fades."""
    n = len(items)
    use_ebb = engine.on("ebbinghaus_decay")
    use_copies = engine.on("triple_copy")
    if n == 0:
        return np.zeros(0)
    if not (use_ebb or use_copies):
        return np.ones(n)
    r = np.zeros(n)
    if use_ebb:
        r = ebbinghaus_r(items, now, engine.config.params.ebbinghaus_decay)
    if use_copies:
        r = np.maximum(r, copy_composite(items, now, engine.config.params.triple_copy))
    r = np.clip(r, 0.0, 1.0)
    core = np.fromiter((i.layer is Layer.CORE for i in items), dtype=bool, count=n)
    return np.where(core, 1.0, r)
