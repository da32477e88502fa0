"""StabilityProtector: established memories resist being overwritten.

Lock score and rigidity, as in the paper::

    L   = 0.3 * log2(1 + min(a, 10)) / log2(11) + 0.3 * c + 0.2 * min(d / 365, 1) + 0.2 * core
    rho = 1 + 0.1 * log2(1 + d)
    threshold = min(0.5 + 0.3 * L * rho, max_threshold)
    update allowed  iff  PE >= threshold

with ``a`` the access count, ``c`` the confidence (Beta posterior mean), ``d`` the
age in days and ``core`` 1 for core/identity memories.

Choice against the paper: without a cap the threshold of an old, well-used core
memory exceeds 1 (L = 1, d = 365 gives 1.055), so no prediction error, not even an
explicit user correction (PE = 1), could ever change it. The threshold is capped at
``max_threshold`` = 0.95 so a correction always passes while everything short of a
near-total contradiction is still refused. ``max_threshold=2`` restores the
paper's uncapped rule.

All functions accept scalars or numpy arrays (broadcast together) and return a
float/bool for scalar input, an array otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..params import Params, bounded

DAY = 86400.0


@dataclass(frozen=True)
class StabilityParams(Params):
    base_threshold: float = bounded(0.5, 0.0, 1.0, "PE an unlocked memory needs to be updated")
    lock_gain: float = bounded(0.3, 0.0, 1.0, "how much L * rho raises the threshold")
    rigidity_growth: float = bounded(0.1, 0.0, 1.0, "rho = 1 + rigidity_growth * log2(1 + age days)")
    max_threshold: float = bounded(
        0.95, 0.0, 2.0, "cap on the threshold; below 1 an explicit correction (PE = 1) always passes"
    )
    access_saturation: float = bounded(10.0, 1.0, 1000.0, "access count at which its lock term saturates")
    age_saturation_days: float = bounded(365.0, 1.0, 36500.0, "age at which its lock term saturates")
    w_access: float = bounded(0.3, 0.0, 1.0, "lock weight of the access count")
    w_confidence: float = bounded(0.3, 0.0, 1.0, "lock weight of the confidence")
    w_age: float = bounded(0.2, 0.0, 1.0, "lock weight of the age")
    w_core: float = bounded(0.2, 0.0, 1.0, "lock weight of the core flag")
    gate_min_lock: float = bounded(
        0.3, 0.0, 1.0, "lock score from which revisions are gated (a fresh memory stays editable by small corrections)"
    )


DEFAULT_PARAMS = StabilityParams()


def _out(x: np.ndarray) -> Any:
    if np.ndim(x) == 0:
        v = x.item()
        return v
    return x


def lock_score(
    *,
    access_count: Any,
    confidence: Any,
    age_days: Any,
    core: Any = False,
    params: StabilityParams = DEFAULT_PARAMS,
) -> Any:
    """Lock score L in [0, 1] (weights summing to 1)."""
    a = np.clip(np.asarray(access_count, dtype=float), 0.0, params.access_saturation)
    c = np.clip(np.asarray(confidence, dtype=float), 0.0, 1.0)
    d = np.maximum(np.asarray(age_days, dtype=float), 0.0)
    k = np.asarray(core, dtype=float)
    lock = (
        params.w_access * np.log2(1.0 + a) / math.log2(1.0 + params.access_saturation)
        + params.w_confidence * c
        + params.w_age * np.minimum(d / params.age_saturation_days, 1.0)
        + params.w_core * k
    )
    return _out(lock)


def rigidity(*, age_days: Any, params: StabilityParams = DEFAULT_PARAMS) -> Any:
    """rho = 1 + growth * log2(1 + age_days): older memories are more rigid."""
    d = np.maximum(np.asarray(age_days, dtype=float), 0.0)
    return _out(1.0 + params.rigidity_growth * np.log2(1.0 + d))


def update_threshold(
    *,
    access_count: Any,
    confidence: Any,
    age_days: Any,
    core: Any = False,
    params: StabilityParams = DEFAULT_PARAMS,
) -> Any:
    """The prediction error a memory needs before it may be changed (capped)."""
    lock = np.asarray(
        lock_score(access_count=access_count, confidence=confidence, age_days=age_days, core=core, params=params)
    )
    rho = np.asarray(rigidity(age_days=age_days, params=params))
    thr = np.minimum(params.base_threshold + params.lock_gain * lock * rho, params.max_threshold)
    return _out(thr)


def update_allowed(
    *,
    pe: Any,
    access_count: Any,
    confidence: Any,
    age_days: Any,
    core: Any = False,
    params: StabilityParams = DEFAULT_PARAMS,
) -> Any:
    """True where the prediction error reaches the memory's update threshold."""
    thr = np.asarray(
        update_threshold(
            access_count=access_count, confidence=confidence, age_days=age_days, core=core, params=params
        )
    )
    return _out(np.asarray(pe, dtype=float) >= thr)


@dataclass(frozen=True)
class StabilityAssessment:
    lock: float
    rigidity: float
    threshold: float
    allowed: bool
    pe: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "lock": self.lock,
            "rigidity": self.rigidity,
            "threshold": self.threshold,
            "allowed": self.allowed,
            "pe": self.pe,
        }


def assess(
    *,
    pe: float,
    access_count: int,
    confidence: float,
    created_at: float,
    now: float,
    core: bool = False,
    params: StabilityParams = DEFAULT_PARAMS,
) -> StabilityAssessment:
    """One memory, with its age computed from ``created_at``; for logging why an update was refused."""
    age = max(0.0, (now - created_at) / DAY)
    lock = float(lock_score(access_count=access_count, confidence=confidence, age_days=age, core=core, params=params))
    rho = float(rigidity(age_days=age, params=params))
    thr = float(update_threshold(access_count=access_count, confidence=confidence, age_days=age, core=core,
                                 params=params))
    return StabilityAssessment(lock=lock, rigidity=rho, threshold=thr, allowed=bool(pe >= thr), pe=float(pe))


__all__ = [
    "DEFAULT_PARAMS",
    "StabilityAssessment",
    "StabilityParams",
    "assess",
    "lock_score",
    "rigidity",
    "update_allowed",
    "update_threshold",
]
