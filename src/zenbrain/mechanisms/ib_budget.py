"""Information-Bottleneck budget: does a memory earn its keep through sleep?

    gain = 0.4 min(1, retrievals / 10) + 0.3 confidence + 0.3 max(0, 1 - days_since_access / 90)
    cost = 0.4 min(1, chars / 5000)    + 0.3 min(1, entities / 20) + 0.3 min(1, dispersion)
    keep  <=>  gain * beta(context) > cost

``beta`` is how much the context values retention over compactness (finance 0.8,
people 0.6, operations 0.4, strategy 0.3, anything else ``beta_default``); callers may
pass their own map. Recency is measured in *days since the last access* (the authors'
production code fed a 0-1 freshness score into this slot, which pinned the recency
term at its maximum). ``dispersion`` is how spread out the memory's representation is
(e.g. the mean squared distance of its chunk embeddings from their centroid; 0 for a
single vector).

A memory that is not kept is a candidate for archiving by the caller (recoverable),
never for erasure, and must not be marked as consolidated. Vectorised over memories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..params import Params, bounded


@dataclass(frozen=True)
class IBParams(Params):
    w_retrievals: float = bounded(0.4, 0.0, 1.0, "gain weight of the retrieval count")
    w_confidence: float = bounded(0.3, 0.0, 1.0, "gain weight of the confidence")
    w_recency: float = bounded(0.3, 0.0, 1.0, "gain weight of recency")
    retrievals_saturation: float = bounded(10.0, 1.0, 1e6, "retrievals at which that gain term saturates")
    recency_horizon_days: float = bounded(90.0, 1.0, 36500.0, "days since access at which recency gain is 0")
    w_length: float = bounded(0.4, 0.0, 1.0, "cost weight of the content length")
    w_entities: float = bounded(0.3, 0.0, 1.0, "cost weight of the entity count")
    w_dispersion: float = bounded(0.3, 0.0, 1.0, "cost weight of the embedding dispersion")
    length_saturation: float = bounded(5000.0, 1.0, 1e9, "characters at which the length cost saturates")
    entities_saturation: float = bounded(20.0, 1.0, 1e6, "entities at which the entity cost saturates")
    beta_finance: float = bounded(0.8, 0.0, 10.0, "beta for context 'finance'")
    beta_people: float = bounded(0.6, 0.0, 10.0, "beta for context 'people'")
    beta_operations: float = bounded(0.4, 0.0, 10.0, "beta for context 'operations'")
    beta_strategy: float = bounded(0.3, 0.0, 10.0, "beta for context 'strategy'")
    beta_default: float = bounded(0.5, 0.0, 10.0, "beta for any other context")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.w_retrievals + self.w_confidence + self.w_recency > 1.0 + 1e-9:
            raise ConfigError("IBParams gain weights must sum to at most 1")
        if self.w_length + self.w_entities + self.w_dispersion > 1.0 + 1e-9:
            raise ConfigError("IBParams cost weights must sum to at most 1")

    def betas(self) -> dict[str, float]:
        return {
            "finance": self.beta_finance,
            "people": self.beta_people,
            "operations": self.beta_operations,
            "strategy": self.beta_strategy,
        }


DEFAULTS = IBParams()


@dataclass(frozen=True)
class IBDecision:
    """Per-memory arrays: ``keep`` (bool), ``gain`` and ``cost`` in [0, 1], ``beta``."""

    keep: np.ndarray
    gain: np.ndarray
    cost: np.ndarray
    beta: np.ndarray

    @property
    def n_kept(self) -> int:
        return int(np.count_nonzero(self.keep))


def context_beta(
    context: str, *, params: IBParams = DEFAULTS, betas: Mapping[str, float] | None = None
) -> float:
    """beta for a context name (case-insensitive); ``betas`` entries override the params."""
    key = context.strip().lower()
    if betas is not None:
        for name, value in betas.items():
            if name.strip().lower() == key:
                return float(value)
    return params.betas().get(key, params.beta_default)


def gain(
    *, retrievals: Any, confidence: Any, days_since_access: Any, params: IBParams = DEFAULTS
) -> np.ndarray:
    """Expected value of keeping each memory, in [0, 1]."""
    r = np.minimum(1.0, np.maximum(0.0, np.asarray(retrievals, dtype=float)) / params.retrievals_saturation)
    c = np.clip(np.asarray(confidence, dtype=float), 0.0, 1.0)
    d = np.maximum(0.0, np.asarray(days_since_access, dtype=float))
    rec = np.maximum(0.0, 1.0 - d / params.recency_horizon_days)
    return np.asarray(params.w_retrievals * r + params.w_confidence * c + params.w_recency * rec, dtype=float)


def cost(*, chars: Any, entities: Any, dispersion: Any = 0.0, params: IBParams = DEFAULTS) -> np.ndarray:
    """Price of keeping each memory, in [0, 1]."""
    ln = np.minimum(1.0, np.maximum(0.0, np.asarray(chars, dtype=float)) / params.length_saturation)
    en = np.minimum(1.0, np.maximum(0.0, np.asarray(entities, dtype=float)) / params.entities_saturation)
    dv = np.clip(np.asarray(dispersion, dtype=float), 0.0, 1.0)
    return np.asarray(params.w_length * ln + params.w_entities * en + params.w_dispersion * dv, dtype=float)


def evaluate(
    *,
    retrievals: Any,
    confidence: Any,
    days_since_access: Any,
    chars: Any,
    entities: Any,
    contexts: str | Sequence[str],
    dispersion: Any = 0.0,
    params: IBParams = DEFAULTS,
    betas: Mapping[str, float] | None = None,
) -> IBDecision:
    """Keep mask, gain, cost and beta for each memory (inputs broadcast together).

    ``retrievals`` = access count, ``confidence`` in [0, 1], ``days_since_access`` =
    (now - last_access) / 86400, ``chars`` = len(content), ``entities`` = number of
    linked entities / edges, ``contexts`` = one context name or one per memory.
    """
    g = gain(retrievals=retrievals, confidence=confidence, days_since_access=days_since_access, params=params)
    c = cost(chars=chars, entities=entities, dispersion=dispersion, params=params)
    if isinstance(contexts, str):
        b = np.asarray(context_beta(contexts, params=params, betas=betas), dtype=float)
    else:
        cache: dict[str, float] = {}
        vals = []
        for ctx in contexts:
            if ctx not in cache:
                cache[ctx] = context_beta(ctx, params=params, betas=betas)
            vals.append(cache[ctx])
        b = np.asarray(vals, dtype=float)
    g, c, b = np.broadcast_arrays(g, c, b)
    keep = g * b > c
    return IBDecision(keep=np.atleast_1d(keep), gain=np.atleast_1d(g).astype(float),
                      cost=np.atleast_1d(c).astype(float), beta=np.atleast_1d(b).astype(float))


__all__ = ["IBDecision", "IBParams", "context_beta", "cost", "evaluate", "gain"]
