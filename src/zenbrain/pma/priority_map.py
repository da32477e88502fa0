"""PriorityMap: how much a memory deserves attention, from four plain signals.

::

    P = w_s * s + w_e * |v| + w_r * r + w_g * g          (weights renormalised to sum 1)
    P = max(P, 0.5)  when |v| > 0.6                       (amygdala fast path)

``s`` saliency, ``v`` emotional valence in [-1, 1] (``MemoryItem.valence``), ``r``
reward relevance, ``g`` goal alignment, all in [0, 1]; default weights
(0.2, 0.25, 0.25, 0.3). Neuromodulator levels rescale the weights before the
renormalisation (REFERENCE 2.18; 0.5 is neutral)::

    w_s *= 1 + 0.3 (DA - 0.5) + 0.2 (ACh - 0.5)
    w_e *= 1 + 0.3 (NE - 0.5)
    w_r *= 1 + 0.2 (ACh - 0.5)
    w_g *= 1 + 0.3 (5HT - 0.5)

Where the inputs come from (helpers below, all vectorised):

* saliency = novelty = ``1 - max cosine`` of the memory's embedding against the
  memories already stored (1 for the first memory);
* reward = posterior mean of explicit feedback, ``(pos + prior/2) / (pos + neg + prior)``:
  0.5 with no feedback, towards 1 with thumbs up, towards 0 with thumbs down;
* goal alignment = cosine with the current goal embedding, clipped to [0, 1];
  0.5 (neutral) when there is no goal.

Renormalising to a sum of 1 keeps P in [0, 1] whatever the levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded
from ..vecmath import row_cosines


@dataclass(frozen=True)
class PriorityParams(Params):
    w_saliency: float = bounded(0.2, 0.0, 1.0, "weight of saliency")
    w_emotion: float = bounded(0.25, 0.0, 1.0, "weight of |valence|")
    w_reward: float = bounded(0.25, 0.0, 1.0, "weight of reward relevance")
    w_goal: float = bounded(0.3, 0.0, 1.0, "weight of goal alignment")
    fast_path_valence: float = bounded(0.6, 0.0, 1.0, "|valence| above which the fast path applies")
    fast_path_floor: float = bounded(0.5, 0.0, 1.0, "minimum priority on the fast path")
    da_saliency_gain: float = bounded(0.3, 0.0, 2.0, "DA gain on the saliency weight")
    ach_saliency_gain: float = bounded(0.2, 0.0, 2.0, "ACh gain on the saliency weight")
    ne_emotion_gain: float = bounded(0.3, 0.0, 2.0, "NE gain on the emotion weight")
    ach_reward_gain: float = bounded(0.2, 0.0, 2.0, "ACh gain on the reward weight")
    serotonin_goal_gain: float = bounded(0.3, 0.0, 2.0, "5HT gain on the goal weight")
    reward_prior: float = bounded(2.0, 1e-6, 1000.0, "pseudo-count of the neutral prior on feedback")
    neutral_goal: float = bounded(0.5, 0.0, 1.0, "goal alignment when there is no goal")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.w_saliency + self.w_emotion + self.w_reward + self.w_goal <= 0.0:
            raise ConfigError("PriorityParams: at least one weight must be positive")


DEFAULT_PARAMS = PriorityParams()


def _out(x: np.ndarray) -> Any:
    return x.item() if np.ndim(x) == 0 else x


def modulated_weights(
    *, levels: Mapping[str, float] | None = None, params: PriorityParams = DEFAULT_PARAMS
) -> tuple[float, float, float, float]:
    """(w_s, w_e, w_r, w_g) after neuromodulator gains, renormalised to sum 1.

    ``levels`` uses the neuromodulator's keys ``DA``, ``NE``, ``5HT``, ``ACh``;
    a missing key (or ``levels=None``) means the neutral 0.5.
    """
    lv = {"DA": 0.5, "NE": 0.5, "5HT": 0.5, "ACh": 0.5}
    if levels is not None:
        for k, v in levels.items():
            if k in lv:
                if not np.isfinite(v):
                    raise ValidationError(f"neuromodulator level {k} must be finite, got {v!r}")
                lv[k] = float(min(1.0, max(0.0, v)))
    p = params
    gains = (
        1.0 + p.da_saliency_gain * (lv["DA"] - 0.5) + p.ach_saliency_gain * (lv["ACh"] - 0.5),
        1.0 + p.ne_emotion_gain * (lv["NE"] - 0.5),
        1.0 + p.ach_reward_gain * (lv["ACh"] - 0.5),
        1.0 + p.serotonin_goal_gain * (lv["5HT"] - 0.5),
    )
    raw = [max(0.0, w * g) for w, g in zip((p.w_saliency, p.w_emotion, p.w_reward, p.w_goal), gains)]
    total = sum(raw)
    if total <= 0.0:  # every weighted channel switched off by extreme gains: fall back to base weights
        raw = [p.w_saliency, p.w_emotion, p.w_reward, p.w_goal]
        total = sum(raw)
    w_saliency, w_emotion, w_reward, w_goal = raw
    return (w_saliency / total, w_emotion / total, w_reward / total, w_goal / total)


def priority(
    *,
    saliency: Any,
    valence: Any,
    reward: Any,
    goal: Any,
    levels: Mapping[str, float] | None = None,
    params: PriorityParams = DEFAULT_PARAMS,
) -> Any:
    """Priority in [0, 1] for one memory or arrays of memories (inputs broadcast)."""
    ws, we, wr, wg = modulated_weights(levels=levels, params=params)
    s = np.clip(np.asarray(saliency, dtype=float), 0.0, 1.0)
    v = np.clip(np.abs(np.asarray(valence, dtype=float)), 0.0, 1.0)
    r = np.clip(np.asarray(reward, dtype=float), 0.0, 1.0)
    g = np.clip(np.asarray(goal, dtype=float), 0.0, 1.0)
    if not all(np.all(np.isfinite(x)) for x in (s, v, r, g)):
        raise ValidationError("priority inputs must be finite")
    p = ws * s + we * v + wr * r + wg * g
    p = np.where(v > params.fast_path_valence, np.maximum(p, params.fast_path_floor), p)
    return _out(np.clip(p, 0.0, 1.0))


def _unit_rows(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def unit_queries(embeddings: Any) -> np.ndarray:
    """One vector (d,) or a batch (m, d) as unit float32 rows (m, d), normalised in float64."""
    return _unit_rows(np.atleast_2d(np.asarray(embeddings, dtype=float))).astype(np.float32)


def novelty_from_cosines(cosines: np.ndarray) -> np.ndarray:
    """1 - the largest cosine of each row of (m, n) cosines, in [0, 1]; 1 when n is 0."""
    c = np.atleast_2d(cosines)
    if c.shape[1] == 0:
        return np.ones(c.shape[0])
    return np.clip(1.0 - c.max(axis=1).astype(float), 0.0, 1.0)


def novelty_saliency(*, embeddings: Any, existing: Any) -> Any:
    """1 - (max cosine to any existing memory), in [0, 1]; 1 when nothing is stored yet.

    ``embeddings`` is one vector (d,) or a batch (m, d); ``existing`` is (n, d).
    """
    single = np.asarray(embeddings).ndim == 1
    q = unit_queries(embeddings)
    ex = np.atleast_2d(np.asarray(existing, dtype=np.float32))
    # In float32 and divided by the norms after the product (``row_cosines``): the sample
    # is a thousand stored vectors (float16 values), and normalising them as float64
    # first took most of a store's novelty test.
    out = novelty_from_cosines(row_cosines(q, ex) if ex.size else np.zeros((len(q), 0), np.float32))
    return float(out[0]) if single else out


def reward_relevance(*, positive: Any, negative: Any, params: PriorityParams = DEFAULT_PARAMS) -> Any:
    """Posterior mean of explicit feedback counts under a neutral prior (0.5 with no feedback)."""
    pos = np.maximum(np.asarray(positive, dtype=float), 0.0)
    neg = np.maximum(np.asarray(negative, dtype=float), 0.0)
    a = params.reward_prior / 2.0
    return _out((pos + a) / (pos + neg + params.reward_prior))


def goal_alignment(*, embeddings: Any, goal: Any | None, params: PriorityParams = DEFAULT_PARAMS) -> Any:
    """Cosine with the goal vector clipped to [0, 1]; ``neutral_goal`` when there is no goal."""
    e = np.asarray(embeddings, dtype=float)
    single = e.ndim == 1
    e2 = np.atleast_2d(e)
    if goal is None:
        out = np.full(e2.shape[0], params.neutral_goal)
    else:
        gv = _unit_rows(np.asarray(goal, dtype=float).reshape(1, -1))[0]
        if not np.any(gv):
            out = np.full(e2.shape[0], params.neutral_goal)
        else:
            out = np.clip(_unit_rows(e2) @ gv, 0.0, 1.0)
    return float(out[0]) if single else out


__all__ = [
    "DEFAULT_PARAMS",
    "PriorityParams",
    "goal_alignment",
    "modulated_weights",
    "novelty_from_cosines",
    "novelty_saliency",
    "priority",
    "reward_relevance",
    "unit_queries",
]
