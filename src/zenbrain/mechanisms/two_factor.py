"""Two-Factor Hebbian knowledge-graph edges: weight w plus consolidation variance sigma^2.

Co-activation (recall or store of two linked memories)::

    k'   = k + 1
    eta  = learning_rate * (1 - lock_gate * L)               L: StabilityProtector lock in [0, 1]
    w'   = clip(w + eta * tag * amplitude, min_weight, max_weight)
    s2'  = max(min_variance, s2 * (1 - maturation_rate / (1 + maturation_decay * k')))
    I    = 1 / s2                                            Fisher-information proxy

EWC: a proposed change dw to an edge costs lambda/2 * I * dw^2. ``constrain_change``
accepts the change that minimises (1/2) p (dw_acc - dw)^2 + (lambda/2) I dw_acc^2, i.e.
dw_acc = dw * p / (p + lambda I) (p: evidence precision): the exact MAP step under the
paper's quadratic penalty, so a fresh edge (I = 1) keeps 2/3 of a change and a mature
one (I = 100) keeps 2%.

Decay (sleep / decay()): r_eff = r / (1 + gain * I); w' = w (1 - r_eff)^days; edges
that fall below ``prune_threshold`` are reported for pruning (the paper prunes; the
authors' code floors at 0.05 and keeps dead edges forever).

Recall boost: 1 + boost_alpha * w / (w + w_half) * I^0.1, in [1, 1 + boost_alpha *
min_variance^-0.1) = [1, 1.317) by default; ``boost_alpha`` is the paper's alpha_boost
(0.2). The saturating w / (w + w_half) replaces the raw weight of the paper (which
would give boosts up to 1 + 0.2 * 10 * 1.58) and the plain w / w_max (under which a
fresh edge of weight 1 would boost by only 2%).

Association lift (what recall multiplies in): c = recall_boost - 1 is the share of the gap
to a better-matching associate that a memory makes up, own' = own + c * (associate - own),
the multiplier 1 + c * (associate / own - 1) (``association_lift``). It flows only downhill,
so the paper's boost of every linked memory, which rewards being well connected whatever
the query, becomes spreading activation from the query's better matches.

All functions broadcast over numpy arrays of edges and return floats for scalars.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded


@dataclass(frozen=True)
class TwoFactorParams(Params):
    learning_rate: float = bounded(0.1, 0.0, 1.0, "eta: weight step per co-activation (paper table 0.1)")
    maturation_rate: float = bounded(0.15, 0.0, 0.99, "beta: variance shrink per co-activation")
    maturation_decay: float = bounded(0.1, 0.0, 10.0, "n(k) = 1 / (1 + maturation_decay * k)")
    min_variance: float = bounded(0.01, 1e-6, 1.0, "sigma^2 floor, so importance <= 1 / min_variance")
    initial_weight: float = bounded(1.0, 0.0, 100.0, "weight of a new edge")
    initial_variance: float = bounded(1.0, 1e-6, 100.0, "variance of a new edge")
    min_weight: float = bounded(0.05, 0.0, 100.0, "floor for weights after a co-activation update")
    max_weight: float = bounded(10.0, 0.01, 1000.0, "cap for weights")
    lock_gate: float = bounded(0.5, 0.0, 1.0, "eta_eff = eta * (1 - lock_gate * L)")
    ewc_lambda: float = bounded(0.5, 0.0, 100.0, "lambda of the EWC penalty")
    evidence_precision: float = bounded(1.0, 1e-3, 1e3, "p: how strongly a proposed change is trusted")
    decay_rate: float = bounded(0.02, 0.0, 1.0, "base weight decay per day (authors' production rate)")
    decay_importance_gain: float = bounded(0.1, 0.0, 10.0, "r_eff = r / (1 + gain * I)")
    prune_threshold: float = bounded(0.05, 0.0, 100.0, "decayed edges below this weight are pruned")
    boost_alpha: float = bounded(0.2, 0.0, 2.0, "the paper's alpha_boost: recall boost = 1 + boost_alpha * f(w) * I^0.1")
    boost_half_weight: float = bounded(1.0, 0.01, 100.0, "weight at which the boost is half its maximum")
    boost_importance_exponent: float = bounded(0.1, 0.0, 1.0, "exponent of I in the recall boost")
    legacy_variance_slope: float = bounded(0.5, 0.0, 10.0, "legacy sigma^2 = 1 / (1 + slope * w)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_weight > self.max_weight:
            raise ConfigError("TwoFactorParams.min_weight must not exceed max_weight")
        if not self.min_weight <= self.initial_weight <= self.max_weight:
            raise ConfigError("TwoFactorParams.initial_weight must lie in [min_weight, max_weight]")
        if self.initial_variance < self.min_variance:
            raise ConfigError("TwoFactorParams.initial_variance must be at least min_variance")


DEFAULTS = TwoFactorParams()


def _out(x: np.ndarray, *inputs: Any) -> Any:
    if all(np.ndim(v) == 0 for v in inputs):
        return x.item()
    return x


def new_edge(*, params: TwoFactorParams = DEFAULTS, encoding_multiplier: float = 1.0) -> tuple[float, float, int]:
    """(weight, variance, count) of a freshly created edge.

    ``encoding_multiplier`` m >= 1 (emotional tagging's, of the memory being encoded):
    weight x m and variance / m, within [min_weight, max_weight] and >= min_variance, so
    an emotional memory's associations start stronger and, with importance 1 / variance,
    decay more slowly (paper: arousal "boosts initial edge weights and reduces
    variance-based decay")."""
    m = float(encoding_multiplier)
    if not (math.isfinite(m) and m >= 1.0):
        raise ValidationError(f"encoding_multiplier must be a finite number >= 1, got {encoding_multiplier!r}")
    if m == 1.0:
        return params.initial_weight, params.initial_variance, 0
    weight = min(params.max_weight, max(params.min_weight, params.initial_weight * m))
    return weight, max(params.min_variance, params.initial_variance / m), 0


def importance(variance: Any) -> Any:
    """I = 1 / sigma^2 (the Fisher-information proxy)."""
    v = np.maximum(np.asarray(variance, dtype=float), 1e-12)
    return _out(1.0 / v, variance)


def variance_lock(variance: Any) -> Any:
    """The StabilityProtector's variance lock L = 1 - clip(sigma^2, 0, 1): mature edges lock."""
    return _out(1.0 - np.clip(np.asarray(variance, dtype=float), 0.0, 1.0), variance)


def update(
    weight: Any,
    variance: Any,
    count: Any,
    tag: Any,
    amplitude: Any,
    lock: Any = 0.0,
    *,
    params: TwoFactorParams = DEFAULTS,
) -> tuple[Any, Any, Any]:
    """One co-activation of the edge(s): returns (weight, variance, count).

    ``tag`` is the co-activation score and ``amplitude`` the cosine-based co-activation
    strength, both clipped to [0, 1]; ``lock`` is the StabilityProtector lock (0 = none).
    """
    w = np.asarray(weight, dtype=float)
    s2 = np.asarray(variance, dtype=float)
    k = np.asarray(count)
    t = np.clip(np.asarray(tag, dtype=float), 0.0, 1.0)
    a = np.clip(np.asarray(amplitude, dtype=float), 0.0, 1.0)
    lk = np.clip(np.asarray(lock, dtype=float), 0.0, 1.0)
    k_new = k + 1
    eta = params.learning_rate * (1.0 - params.lock_gate * lk)
    w_new = np.clip(w + eta * t * a, params.min_weight, params.max_weight)
    n = 1.0 / (1.0 + params.maturation_decay * k_new)
    s2_new = np.maximum(params.min_variance, s2 * (1.0 - params.maturation_rate * n))
    ins = (weight, variance, count, tag, amplitude, lock)
    return _out(w_new, *ins), _out(s2_new, *ins), _out(np.asarray(k_new), *ins)


def ewc_penalty(
    variance: Any, delta_w: Any, *, lam: float | None = None, params: TwoFactorParams = DEFAULTS
) -> Any:
    """EWC cost of changing the weight by ``delta_w``: lambda/2 * I * delta_w^2 (lambda from params
    unless ``lam`` is given)."""
    i = np.asarray(importance(variance), dtype=float)
    d = np.asarray(delta_w, dtype=float)
    lam = params.ewc_lambda if lam is None else float(lam)
    return _out(0.5 * lam * i * d * d, variance, delta_w)


def constrain_change(variance: Any, delta_w: Any, *, params: TwoFactorParams = DEFAULTS) -> Any:
    """The part of a proposed change that survives the EWC penalty (same sign, never larger).

    delta_acc = delta_w * p / (p + lambda * I): the minimiser of
    p/2 (x - delta_w)^2 + lambda/2 I x^2. Use it for changes that do not come from
    co-activation (sleep LTP/LTD, reconsolidation, contradiction handling).
    """
    i = np.asarray(importance(variance), dtype=float)
    d = np.asarray(delta_w, dtype=float)
    p = params.evidence_precision
    return _out(d * (p / (p + params.ewc_lambda * i)), variance, delta_w)


def decay(
    weight: Any, variance: Any, *, days: Any = 1.0, params: TwoFactorParams = DEFAULTS
) -> tuple[Any, Any]:
    """Importance-gated decay over ``days``: returns (new weight, prune mask).

    w' = w * (1 - r / (1 + gain * I)) ** days. Edges with w' < prune_threshold should be
    deleted by the caller; the others are returned unfloored (they are >= the threshold).
    """
    w = np.asarray(weight, dtype=float)
    i = np.asarray(importance(variance), dtype=float)
    d = np.maximum(0.0, np.asarray(days, dtype=float))
    r_eff = params.decay_rate / (1.0 + params.decay_importance_gain * i)
    w_new = np.minimum(w * (1.0 - r_eff) ** d, params.max_weight)
    prune = w_new < params.prune_threshold
    return _out(w_new, weight, variance, days), _out(prune, weight, variance, days)


def recall_boost(weight: Any, variance: Any, *, params: TwoFactorParams = DEFAULTS) -> Any:
    """Score multiplier for a recalled memory reached through an edge of this weight/variance.

    1 + alpha * w / (w + w_half) * I^e; exactly 1 for w <= 0 (no edge); below
    1 + alpha * min_variance^-e. Pass the strongest edge linking the memory to the
    query's other hits (or 0 when it has none).
    """
    w = np.maximum(0.0, np.asarray(weight, dtype=float))
    s2 = np.maximum(np.asarray(variance, dtype=float), params.min_variance)
    f = w / (w + params.boost_half_weight)
    b = 1.0 + params.boost_alpha * f * (1.0 / s2) ** params.boost_importance_exponent
    return _out(b, weight, variance)


def association_lift(
    weight: Any, variance: Any, own: Any, associate: Any, *, params: TwoFactorParams = DEFAULTS
) -> Any:
    """Score multiplier for a memory whose associate (through an edge of this weight/variance)
    scored ``associate`` for the query against the memory's own score ``own``.

    The memory moves the share c = recall_boost(w, sigma^2) - 1 of the way up to its
    associate's score: own' = own + c * (associate - own), i.e. the multiplier
    1 + c * (associate / own - 1). An associate that scored no higher lifts nothing (1),
    and the lifted score stays below the associate's (c < 1); a memory with no score of
    its own (own <= 0) is not lifted.
    """
    c = np.asarray(recall_boost(weight, variance, params=params), dtype=float) - 1.0
    o = np.asarray(own, dtype=float)
    a = np.asarray(associate, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(o > 0, np.maximum(0.0, a / np.where(o > 0, o, 1.0) - 1.0), 0.0)
    return _out(1.0 + c * gap, weight, variance, own, associate)


def max_recall_boost(*, params: TwoFactorParams = DEFAULTS) -> float:
    """The supremum of ``recall_boost`` (never reached: w / (w + w_half) < 1)."""
    return 1.0 + params.boost_alpha * params.min_variance ** (-params.boost_importance_exponent)


def from_legacy_weight(weight: Any, *, params: TwoFactorParams = DEFAULTS) -> tuple[Any, Any, Any]:
    """(weight, variance, count) for an edge that only had a weight: heavier = more mature.

    sigma^2 = max(min_variance, 1 / (1 + slope * w)); count 0.
    """
    w = np.clip(np.asarray(weight, dtype=float), params.min_weight, params.max_weight)
    s2 = np.maximum(params.min_variance, 1.0 / (1.0 + params.legacy_variance_slope * np.maximum(w, 0.0)))
    return _out(w, weight), _out(s2, weight), _out(np.zeros_like(w, dtype=np.int64), weight)


__all__ = [
    "TwoFactorParams",
    "association_lift",
    "constrain_change",
    "decay",
    "ewc_penalty",
    "from_legacy_weight",
    "importance",
    "max_recall_boost",
    "new_edge",
    "recall_boost",
    "update",
    "variance_lock",
]
