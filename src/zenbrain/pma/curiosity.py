"""Curiosity engine: rank knowledge gaps by uncertainty and learning progress.

A gap is a memory or a topic (a KG cluster, an entity) with

* uncertainty ``U`` in [0, 1], a weighted mean of
  - the normalised variance of its Beta confidence posterior,
    ``12 * a * b / ((a + b)^2 (a + b + 1))`` (1 for the flat prior a = b = 1,
    towards 0 as evidence accumulates), and
  - the miss rate of the queries about it (queries that found little / queries),
    used only when there were queries;
* learning progress: the least-squares slope (per day) of its confidence or recall
  success over the last ``window_s`` (14 days), needing ``min_points`` (3)
  observations; ``p = clip((max(slope, 0) + 0.5 * max(-slope, 0)) / 0.05, 0, 1)``.
  A falling curve (forgetting) counts half: it is also learnable, but the paper
  asks for positive slopes first.

``priority = U * (1 + w * p) / (1 + w)`` with ``w = 1``: a gap needs both
uncertainty and progress to rank first (as the paper describes: "high
uncertainty and positive recent learning slope"), a flat or unknown curve halves
its priority, and certain knowledge ranks last whatever its slope. The authors'
gap detector has no slope at all. The ranked gaps feed the review queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

DAY = 86400.0


@dataclass(frozen=True)
class CuriosityParams(Params):
    window_s: float = bounded(14 * DAY, 60.0, 3650 * DAY, "observations older than this do not count for progress")
    min_points: int = bounded(3, 2, 1000, "observations needed to fit a slope")
    progress_scale_per_day: float = bounded(0.05, 1e-6, 10.0, "slope (per day) at which progress saturates")
    negative_slope_weight: float = bounded(0.5, 0.0, 1.0, "how much a falling curve counts as progress")
    progress_weight: float = bounded(1.0, 0.0, 100.0, "w in priority = U (1 + w p) / (1 + w)")
    w_variance: float = bounded(0.6, 0.0, 1.0, "weight of the posterior variance in the uncertainty")
    w_miss: float = bounded(0.4, 0.0, 1.0, "weight of the query miss rate in the uncertainty")
    min_priority: float = bounded(0.0, 0.0, 1.0, "gaps below this priority are left out")

    def __post_init__(self) -> None:
        super().__post_init__()
        if int(self.min_points) != self.min_points:
            raise ConfigError("CuriosityParams.min_points must be a whole number")
        if self.w_variance + self.w_miss <= 0:
            raise ConfigError("CuriosityParams: w_variance + w_miss must be positive")


DEFAULT_PARAMS = CuriosityParams()


@dataclass(frozen=True)
class Gap:
    id: str
    priority: float
    uncertainty: float
    slope_per_day: float
    progress: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _out(x: np.ndarray) -> Any:
    return x.item() if np.ndim(x) == 0 else x


def beta_uncertainty(*, alpha: Any, beta: Any) -> Any:
    """Beta posterior variance scaled so the flat prior (1, 1) gives 1."""
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    if np.any(a <= 0) or np.any(b <= 0) or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValidationError("Beta parameters must be finite and positive")
    s = a + b
    return _out(np.clip(12.0 * a * b / (s * s * (s + 1.0)), 0.0, 1.0))


def learning_progress(
    *, times: Sequence[float], values: Sequence[float], now: float, params: CuriosityParams = DEFAULT_PARAMS
) -> float:
    """Least-squares slope of ``values`` over ``times`` (per day) inside the window; 0 if under-determined."""
    t = np.asarray(times, dtype=float).reshape(-1)
    y = np.asarray(values, dtype=float).reshape(-1)
    if t.shape != y.shape:
        raise ValidationError("times and values must have the same length")
    keep = (t >= now - params.window_s) & (t <= now) & np.isfinite(t) & np.isfinite(y)
    t, y = t[keep] / DAY, y[keep]
    if t.size < params.min_points:
        return 0.0
    tc = t - t.mean()
    den = float(tc @ tc)
    if den <= 0.0:
        return 0.0
    return float(tc @ (y - y.mean()) / den)


def progress_score(slope_per_day: Any, *, params: CuriosityParams = DEFAULT_PARAMS) -> Any:
    """Slope mapped to [0, 1]; a falling curve counts ``negative_slope_weight``."""
    s = np.asarray(slope_per_day, dtype=float)
    eff = np.maximum(s, 0.0) + params.negative_slope_weight * np.maximum(-s, 0.0)
    return _out(np.clip(eff / params.progress_scale_per_day, 0.0, 1.0))


def rank_gaps(
    *,
    ids: Sequence[str],
    alpha: Any,
    beta: Any,
    now: float,
    queries: Any = None,
    misses: Any = None,
    histories: Sequence[tuple[Sequence[float], Sequence[float]] | None] | None = None,
    limit: int | None = None,
    params: CuriosityParams = DEFAULT_PARAMS,
) -> tuple[Gap, ...]:
    """Rank gaps, highest priority first (ties by id).

    ``alpha``/``beta``: the Beta confidence posterior per id (``MemoryItem.conf_alpha``/``conf_beta``,
    or summed over a topic). ``queries``/``misses``: how many queries touched the id and how many of
    them found little. ``histories``: per id ``(times, values)`` of confidence or recall success.
    """
    n = len(ids)
    a = np.broadcast_to(np.asarray(alpha, dtype=float), (n,))
    b = np.broadcast_to(np.asarray(beta, dtype=float), (n,))
    var = np.atleast_1d(beta_uncertainty(alpha=a, beta=b)) if n else np.zeros(0)
    q = np.zeros(n) if queries is None else np.broadcast_to(np.asarray(queries, dtype=float), (n,))
    m = np.zeros(n) if misses is None else np.broadcast_to(np.asarray(misses, dtype=float), (n,))
    if np.any(q < 0) or np.any(m < 0) or np.any(m > q):
        raise ValidationError("need 0 <= misses <= queries")
    has_q = q > 0
    miss = np.divide(m, q, out=np.zeros(n), where=has_q)
    wv, wm = params.w_variance, params.w_miss
    den = wv + wm * has_q
    unc = np.divide(wv * var + wm * miss, den, out=np.zeros(n), where=den > 0)
    if histories is not None and len(histories) != n:
        raise ValidationError("histories must have one entry (or None) per id")
    slopes = np.zeros(n)
    for i in range(n):
        h = None if histories is None else histories[i]
        if h is not None:
            slopes[i] = learning_progress(times=h[0], values=h[1], now=now, params=params)
    prog = np.atleast_1d(progress_score(slopes, params=params)) if n else np.zeros(0)
    w = params.progress_weight
    pri = unc * (1.0 + w * prog) / (1.0 + w)
    gaps = []
    for i in range(n):
        if pri[i] < params.min_priority:
            continue
        qtxt = f", {int(m[i])}/{int(q[i])} queries found little" if has_q[i] else ""
        trend = "improving" if slopes[i] > 0 else ("fading" if slopes[i] < 0 else "flat or unknown")
        reason = (f"uncertainty {unc[i]:.2f} (posterior variance {var[i]:.2f}{qtxt}); "
                  f"learning progress {slopes[i]:+.3f}/day ({trend})")
        gaps.append(Gap(str(ids[i]), float(pri[i]), float(unc[i]), float(slopes[i]), float(prog[i]), reason))
    gaps.sort(key=lambda g: (-g.priority, g.id))
    if limit is not None:
        gaps = gaps[: max(0, int(limit))]
    return tuple(gaps)


def review_queue(gaps: Sequence[Gap]) -> list[tuple[str, float, str]]:
    """(id, priority, reason) triples, the shape the review queue takes."""
    return [(g.id, g.priority, g.reason) for g in gaps]


__all__ = [
    "DEFAULT_PARAMS",
    "CuriosityParams",
    "Gap",
    "beta_uncertainty",
    "learning_progress",
    "progress_score",
    "rank_gaps",
    "review_queue",
]
