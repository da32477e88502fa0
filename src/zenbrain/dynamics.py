"""Shared memory dynamics: how retrievable each memory is now, and the keys of the
per-memory and per-partition state that mechanisms keep.

Retrievability combines the forgetting mechanisms that are switched on:
Ebbinghaus R = exp(-t / (S m)) and the TripleCopy composite max(fast, medium, deep).
With both on, a memory is as retrievable as its best trace; with neither, nothing
fades. Core memories never decay.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from .clock import DAY
from .mechanisms import ebbinghaus
from .model import Layer, MemoryItem
from .pma import triple_copy

try:  # the ufunc np.clip ends in for float arrays, without np.clip's Python-level dispatch
    from numpy._core.umath import clip as _clip
except ImportError:  # an older numpy layout
    _clip = np.clip

if TYPE_CHECKING:
    from .registry import Mechanisms

# Per-memory state keys (MemoryItem.state).
FSRS = "fsrs"  # FSRS card state (fsrs_schedule.CardState)
COPIES = "copies"  # TripleCopy CopyState.to_dict()
PRIORITY = "priority"  # PriorityMap score in [0, 1]
SIGNIFICANCE = "significance"  # emotional significance in [0, 1]
LABILE_UNTIL = "labile_until"  # end of the reconsolidation window (epoch seconds)
REVIEW_CTX = "review_ctx"  # context vector at the last review (vmPFC), float16 hex
OUTCOMES = "outcomes"  # procedural use: {"ok": n, "fail": n}
RESCUED = "rescued"  # STC rescue count

# Per-partition key-value state.
KV_NEURO = "neuromodulator"
KV_METACOG = "metacognition"
KV_HYPER = "hyperagent"
KV_COMPOSITIONAL = "compositional"
KV_INTENTIONS = "intentions"  # one list per context: see intentions_key
KV_WORKSPACE = "workspace"
KV_CONTEXT = "context_vector"
KV_DEBATES = "debates"
KV_SPECTRAL = "spectral"
KV_CURIOSITY = "curiosity"


def intentions_key(context: str) -> str:
    """Intentions belong to the context they were made in, and fire only there."""
    return f"{KV_INTENTIONS}:{context}"


def encode_vec(v: np.ndarray) -> str:
    return np.asarray(v, dtype=np.float16).tobytes().hex()


def decode_vec(s: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(s), dtype=np.float16).astype(np.float32)


_COPY_FIELDS = operator.itemgetter("s0", "anchor", "deep_base", "deep_target", "deep_anchor")  # CopyState's order
_DECAY_FIELDS = operator.attrgetter("last_access", "stability", "arousal", "valence")


def _copy_row(item: MemoryItem, params: triple_copy.TripleCopyParams) -> tuple[float, ...]:
    """The TripleCopy state of a memory as ``evaluate_many`` reads it (``CopyState``'s fields
    in order), straight from the stored dict. A memory stored while TripleCopy was off is
    read as if encoded at its last access."""
    if COPIES not in item.state:
        s = triple_copy.encode(s0=min(1.0, max(0.0, item.strength)), now=item.last_access, params=params)
        return (s.s0, s.anchor, s.deep_base, s.deep_target, s.deep_anchor)
    data = item.state[COPIES]
    return (float(data["s0"]), float(data["anchor"]), float(data["deep_base"]), float(data["deep_target"]),
            float(data["deep_anchor"]))


def _copy_composite(items: Sequence[MemoryItem], now: float, params: triple_copy.TripleCopyParams) -> Any:
    """``triple_copy.evaluate_many`` of the items' states (its composite), without building
    a ``CopyState`` per memory: the same columns into the same ``strengths``."""
    rows = [_COPY_FIELDS(i.state[COPIES]) if COPIES in i.state else _copy_row(i, params) for i in items]
    cols = np.fromiter(chain.from_iterable(rows), float, 5 * len(items)).reshape(-1, 5)
    return triple_copy.strengths_of_columns(cols, now=now, params=params).composite


def _decay_columns(items: Sequence[MemoryItem]) -> np.ndarray:
    """Rows last_access, stability, arousal, valence of the items (each row contiguous)."""
    flat = np.fromiter(chain.from_iterable(map(_DECAY_FIELDS, items)), float, 4 * len(items))
    return flat.reshape(-1, 4).T.copy()


def retrievability(
    items: Sequence[MemoryItem],
    now: float,
    mechanisms: Mechanisms,
    *,
    ebb: ebbinghaus.EbbinghausParams = ebbinghaus.DEFAULTS,
    copies: triple_copy.TripleCopyParams = triple_copy.DEFAULT_PARAMS,
) -> np.ndarray:
    """R in [0, 1] for every item, vectorised."""
    n = len(items)
    if n == 0:
        return np.zeros(0)
    use_ebb = mechanisms.on("ebbinghaus_decay")
    use_copies = mechanisms.on("triple_copy")
    if not use_ebb and not use_copies:
        return np.ones(n)
    has_core = any(i.layer is Layer.CORE for i in items)
    if use_ebb and use_copies:
        r = _both_retrievability(items, now, ebb, copies)
    else:
        r = _one_retrievability(items, now, use_ebb, use_copies, ebb, copies)
    if not has_core:  # the common case: nothing to pin at 1
        return r
    core = np.fromiter((i.layer is Layer.CORE for i in items), dtype=bool, count=n)
    return np.where(core, 1.0, r)


def _one_retrievability(items: Sequence[MemoryItem], now: float, use_ebb: bool, use_copies: bool,
                        ebb: ebbinghaus.EbbinghausParams, copies: triple_copy.TripleCopyParams) -> np.ndarray:
    """R (clipped to [0, 1], core memories not pinned) with one of the two mechanisms on."""
    n = len(items)
    r = np.zeros(n)
    if use_ebb:
        last_access, stability, arousal, valence = _decay_columns(items)
        elapsed = np.maximum(0.0, (now - last_access) / DAY)
        r = np.asarray(
            ebbinghaus.retrievability(
                elapsed_days=elapsed,
                stability=stability,
                arousal=arousal,
                valence=valence,
                significance=np.fromiter((float(i.state.get(SIGNIFICANCE, 0.0)) for i in items), float, n),
                params=ebb,
            ),
            dtype=float,
        )
    if use_copies:
        comp = np.asarray(_copy_composite(items, now, copies), dtype=float)
        r = np.maximum(r, comp)
    return _clip(r, 0.0, 1.0)


def _both_row(item: MemoryItem, params: triple_copy.TripleCopyParams) -> tuple[Any, ...]:
    """What R reads of a memory with both mechanisms on: last_access, stability, arousal,
    valence, significance, then the TripleCopy fields (as ``_copy_composite`` reads them)."""
    st = item.state
    copies = _COPY_FIELDS(st[COPIES]) if COPIES in st else _copy_row(item, params)
    return (*_DECAY_FIELDS(item), float(st.get(SIGNIFICANCE, 0.0)), *copies)


def _both_retrievability(items: Sequence[MemoryItem], now: float, ebb: ebbinghaus.EbbinghausParams,
                         cp: triple_copy.TripleCopyParams) -> np.ndarray:
    """R with Ebbinghaus and TripleCopy on (clipped, core memories not pinned): the
    operations of ``ebbinghaus.retrievability`` and ``triple_copy.strengths``, element by
    element the same, on columns gathered in one pass and with the three TripleCopy
    exponentials taken in one call (np.exp of each element does not depend on the array)."""
    n = len(items)
    c = np.fromiter(chain.from_iterable([_both_row(i, cp) for i in items]), float, 10 * n).reshape(n, 10).T
    last_access, stability, arousal, valence, significance = c[0], c[1], c[2], c[3], c[4]
    # Ebbinghaus: exp(-t / (S m)); max(0, elapsed) again would change nothing.
    t = np.maximum(0.0, (now - last_access) / DAY)
    s = _clip(stability, ebb.min_stability, ebb.max_stability)
    intensity = _clip(np.maximum(np.maximum(np.abs(valence), arousal), significance), 0.0, 1.0)
    m = 1.0 + (ebb.emotional_cap - 1.0) * intensity
    r = np.exp(-t / (s * m))
    # TripleCopy: rows fast, medium (age since anchor) and deep (age since deep_anchor).
    s0 = _clip(c[5], 0.0, 1.0)
    ages = np.maximum(now - c[_AGE_ROWS], 0.0)
    decay = np.exp(-ages / np.array(((cp.tau_fast_s,), (cp.tau_medium_s,), (cp.tau_deep_s,))))
    target = _clip(c[8], 0.0, 1.0)
    base = _clip(c[7], 0.0, 1.0)
    fast = _clip(s0 * decay[0], 0.0, 1.0)
    medium = _clip(cp.medium_share * s0 * decay[1], 0.0, 1.0)
    deep = _clip(target - (target - base) * decay[2], 0.0, 1.0)
    composite = np.maximum(np.maximum(fast, medium), deep)
    return _clip(np.maximum(r, composite), 0.0, 1.0)


_AGE_ROWS = np.array([6, 6, 9])  # anchor, anchor, deep_anchor in _both_row's order
