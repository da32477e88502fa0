"""vmPFC coupling: a context prediction error reshapes the next FSRS interval.

    PE     = clip(1 - cos(c_prev, c_now), 0, 1)
    rho    = sigmoid(steepness * (PE - threshold))            steepness 6, threshold 0.5
    factor = clip(1 + alpha_v * (1 - 2 rho), min_factor, max_factor)
    due'   = last_review + max(interval * factor, min(interval, min_interval))

High PE (the context the memory lives in has shifted) shortens the interval, so the
memory is re-encoded soon; low PE (context stable) lengthens it. That is the sign of
the paper's prose and of the authors' code; the paper's printed formula
``1 + alpha_v (2 rho - 1)`` has the opposite sign and is not used.

Amplitude: alpha_v = 0.6 as in the paper's table, applied to (1 - 2 rho) in [-1, 1],
so with the default sigmoid the factor spans about [0.43, 1.57]; [0.3, 2.0] (the
table's min shortening / max extension) are hard clamps that bind only for larger
alpha_v. The authors' code is alpha_v = 0.3 (1 + 0.6 (0.5 - rho), about [0.73, 1.27]).

A missing context (zero vector) gives PE = 0.5, i.e. factor exactly 1: no evidence,
no adjustment. Everything broadcasts over numpy arrays; vectors are the last axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded


@dataclass(frozen=True)
class VmpfcParams(Params):
    alpha_v: float = bounded(0.6, 0.0, 1.0, "adaptation strength: factor = 1 + alpha_v (1 - 2 rho)")
    steepness: float = bounded(6.0, 0.1, 50.0, "sigmoid slope on PE")
    threshold: float = bounded(0.5, 0.0, 1.0, "PE at which rho = 0.5 (factor 1)")
    min_factor: float = bounded(0.3, 0.01, 1.0, "hard floor on the interval factor")
    max_factor: float = bounded(2.0, 1.0, 10.0, "hard cap on the interval factor")
    min_interval_seconds: float = bounded(60.0, 0.0, 86400.0, "never shorten an interval below this")
    missing_context_pe: float = bounded(0.5, 0.0, 1.0, "PE used when either context vector is zero")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_factor > self.max_factor:
            raise ConfigError("VmpfcParams.min_factor must not exceed max_factor")


DEFAULTS = VmpfcParams()


def _out(x: np.ndarray, *inputs: Any) -> Any:
    if all(np.ndim(v) == 0 for v in inputs):
        return x.item()
    return x


def prediction_error(*, c_prev: Any, c_now: Any, params: VmpfcParams = DEFAULTS) -> Any:
    """PE = clip(1 - cosine, 0, 1) along the last axis; a float for two 1-D vectors.

    Rows of 2-D inputs are paired (or broadcast). Anti-correlated contexts saturate at 1.
    """
    a = np.asarray(c_prev, dtype=float)
    b = np.asarray(c_now, dtype=float)
    if a.ndim == 0 or b.ndim == 0:
        raise ValidationError("context vectors must have at least one dimension")
    if a.shape[-1] != b.shape[-1]:
        raise ValidationError(f"context vectors differ in dimension: {a.shape[-1]} vs {b.shape[-1]}")
    if a.ndim == 1 and b.ndim == 1:  # the common case (one memory's review), without array temporaries
        norm1 = math.sqrt(float(a @ a)) * math.sqrt(float(b @ b))
        if norm1 <= 1e-12:
            return float(params.missing_context_pe)
        return min(1.0, max(0.0, 1.0 - float(a @ b) / norm1))
    dot = np.sum(a * b, axis=-1)
    norm = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    ok = norm > 1e-12
    cos = np.divide(dot, norm, out=np.zeros_like(dot, dtype=float), where=ok)
    pe = np.where(ok, np.clip(1.0 - cos, 0.0, 1.0), params.missing_context_pe)
    return pe.item() if pe.ndim == 0 else pe


def rho(*, pe: Any, params: VmpfcParams = DEFAULTS) -> Any:
    """Re-encoding drive rho = sigmoid(steepness (PE - threshold)) in (0, 1)."""
    # scipy is imported where it is used: importing zenbrain stays fast.
    from scipy.special import expit

    r = expit(params.steepness * (np.asarray(pe, dtype=float) - params.threshold))
    return _out(np.asarray(r), pe)


def interval_factor(*, pe: Any, params: VmpfcParams = DEFAULTS) -> Any:
    """Multiplier of the FSRS interval: > 1 when context is stable, < 1 after a context shift."""
    if isinstance(pe, (float, int)):
        x = params.steepness * (float(pe) - params.threshold)
        r1 = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))  # stable sigmoid
        return min(params.max_factor, max(params.min_factor, 1.0 + params.alpha_v * (1.0 - 2.0 * r1)))
    r = np.asarray(rho(pe=pe, params=params), dtype=float)
    f = np.clip(1.0 + params.alpha_v * (1.0 - 2.0 * r), params.min_factor, params.max_factor)
    return _out(f, pe)


def apply(due: Any, last_review: Any, factor: Any, *, params: VmpfcParams = DEFAULTS) -> Any:
    """New due time (epoch seconds): the interval since ``last_review`` scaled by ``factor``.

    Shortening never goes below ``min_interval_seconds`` (an interval already shorter than
    that, such as a learning step, is kept as is); a due time before ``last_review`` is
    treated as a zero interval.
    """
    if all(isinstance(v, (float, int)) for v in (due, last_review, factor)):
        if factor < 0 or not math.isfinite(factor):
            raise ValidationError("factor must be finite and non-negative")
        base1 = max(0.0, float(due) - float(last_review))
        return float(last_review) + max(base1 * float(factor), min(base1, params.min_interval_seconds))
    d = np.asarray(due, dtype=float)
    lr = np.asarray(last_review, dtype=float)
    f = np.asarray(factor, dtype=float)
    if np.any(f < 0) or not np.all(np.isfinite(f)):
        raise ValidationError("factor must be finite and non-negative")
    base = np.maximum(0.0, d - lr)
    floor = np.minimum(base, params.min_interval_seconds)
    new = lr + np.maximum(base * f, floor)
    return _out(new, due, last_review, factor)


__all__ = ["VmpfcParams", "apply", "interval_factor", "prediction_error", "rho"]
