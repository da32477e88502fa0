"""Bayesian confidence: Beta posteriors per fact, loopy belief propagation over the graph.

Model
-----
Each fact ``i`` has a latent reliability ``theta_i``: the probability that an independent
check of the fact confirms it. Its posterior is ``Beta(alpha_i, beta_i)``; a supporting
observation of strength ``s`` adds ``s`` to ``alpha``, a contradicting one adds ``s`` to
``beta`` (conjugate Bernoulli update; a fractional ``s`` is a tempered likelihood). The
confidence that the fact is true is the posterior predictive ``alpha / (alpha + beta)``,
which is Bayes' rule under this model, not the linear rule of the authors' code.

The knowledge graph adds a pairwise likelihood over the binary truth values ``x_i``. Every
relation is a co-truth factor ``psi(x_i, x_j) = exp(c * x_i * x_j)``: ``c > 0`` for
``supports`` (and, weaker, ``causes``, ``requires``, ``part_of``, ``similar_to``), ``c < 0``
for ``contradicts`` (two facts that cannot both be true). A false neighbour is silent; a
true one pushes up (support) or down (contradiction). This is exactly the likelihood of a
graph whose relation types are drawn given whether both ends are true, so with couplings
``c = log P(rel | both true) / P(rel | not both true)`` the marginals are the exact posterior
on a tree and a good approximation on sparse loopy graphs.

Marginals come from loopy belief propagation in log-odds form, vectorised over directed
edge arrays, damped and iterated to convergence with a cap. The local Beta posteriors are
the unary factors, so propagation must always start from the *local* evidence (the
counts written by ``observe``): feeding its output back in would count the graph twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

# Log-odds are clipped here so that beliefs stay strictly inside (0, 1) in float64.
_MAX_LOGODDS = 30.0


@dataclass(frozen=True)
class BayesianParams(Params):
    prior_alpha: float = bounded(1.0, 0.1, 1000.0, "Beta prior pseudo-count for 'true' given to a new fact")
    prior_beta: float = bounded(1.0, 0.1, 1000.0, "Beta prior pseudo-count for 'false' given to a new fact")
    credible_level: float = bounded(0.95, 0.8, 0.999, "mass of the equal-tailed credible interval (>= 0.8 keeps the mean inside it)")
    supports_coupling: float = bounded(1.5, 0.0, 10.0, "log-odds gained by a fact when a supporting neighbour is surely true (weight 1)")
    contradicts_coupling: float = bounded(2.0, 0.0, 10.0, "log-odds lost by a fact when a contradicting neighbour is surely true (weight 1)")
    factor_causes: float = bounded(0.8, 0.0, 1.0, "coupling of 'causes' relative to 'supports'")
    factor_requires: float = bounded(0.6, 0.0, 1.0, "coupling of 'requires' relative to 'supports'")
    factor_part_of: float = bounded(0.3, 0.0, 1.0, "coupling of 'part_of' relative to 'supports'")
    factor_similar_to: float = bounded(0.2, 0.0, 1.0, "coupling of 'similar_to' relative to 'supports'")
    max_weight: float = bounded(5.0, 0.0, 100.0, "edge weights are clipped to [0, max_weight] before scaling a coupling")
    damping: float = bounded(0.5, 0.0, 0.95, "share of the previous message kept at each iteration")
    max_iterations: int = bounded(100, 1, 10_000, "cap on message-passing sweeps")
    tolerance: float = bounded(1e-6, 1e-12, 1.0, "stop when no message moves by more than this (log-odds)")
    log_threshold: float = bounded(0.01, 0.0, 1.0, "confidence change at or above which a node enters the change log")

    def __post_init__(self) -> None:
        super().__post_init__()
        if int(self.max_iterations) != self.max_iterations:
            raise ConfigError("BayesianParams.max_iterations must be an integer")


def relation_couplings(params: BayesianParams) -> dict[str, float]:
    """Signed log-potential per relation type at weight 1. Unknown relations couple with 0."""
    s = params.supports_coupling
    return {
        "supports": s,
        "contradicts": -params.contradicts_coupling,
        "causes": params.factor_causes * s,
        "requires": params.factor_requires * s,
        "part_of": params.factor_part_of * s,
        "similar_to": params.factor_similar_to * s,
    }


# --------------------------------------------------------------------------- local evidence


def _as_float_array(name: str, x: Any) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{name} must be finite")
    return arr


def _check_beta_params(alpha: np.ndarray, beta: np.ndarray) -> None:
    if np.any(alpha <= 0) or np.any(beta <= 0):
        raise ValidationError("Beta parameters alpha and beta must be > 0")


def prior(*, params: BayesianParams = BayesianParams()) -> tuple[float, float]:
    """(alpha, beta) for a fact with no evidence yet."""
    return params.prior_alpha, params.prior_beta


def observe(alpha: Any, beta: Any, *, supports: Any, strength: Any = 1.0) -> tuple[Any, Any]:
    """Conjugate update with one observation (or arrays of them, element-wise).

    ``supports`` says whether the evidence confirms the fact; ``strength`` >= 0 is its weight
    in pseudo-observations (e.g. source reliability times extraction confidence).
    """
    a = _as_float_array("alpha", alpha)
    b = _as_float_array("beta", beta)
    s = _as_float_array("strength", strength)
    _check_beta_params(a, b)
    if np.any(s < 0):
        raise ValidationError("strength must be >= 0")
    sup = np.asarray(supports, dtype=bool)
    new_a = a + np.where(sup, s, 0.0)
    new_b = b + np.where(sup, 0.0, s)
    if new_a.ndim == 0:
        return float(new_a), float(new_b)
    return new_a, new_b


def mean(alpha: Any, beta: Any) -> Any:
    """Posterior probability that the fact is true: alpha / (alpha + beta)."""
    a = _as_float_array("alpha", alpha)
    b = _as_float_array("beta", beta)
    _check_beta_params(a, b)
    m = a / (a + b)
    return float(m) if m.ndim == 0 else m


def credible_interval(
    alpha: Any, beta: Any, *, level: float | None = None, params: BayesianParams = BayesianParams()
) -> tuple[Any, Any]:
    """Equal-tailed credible interval of Beta(alpha, beta) (``scipy.stats.beta.ppf``);
    ``level`` defaults to ``params.credible_level``."""
    level = params.credible_level if level is None else level
    if not 0.0 < level < 1.0:
        raise ValidationError("level must be in (0, 1)")
    a = _as_float_array("alpha", alpha)
    b = _as_float_array("beta", beta)
    _check_beta_params(a, b)
    tail = (1.0 - level) / 2.0
    from scipy.stats import beta as beta_dist

    lo = beta_dist.ppf(tail, a, b)
    hi = beta_dist.ppf(1.0 - tail, a, b)
    if np.ndim(lo) == 0:
        return float(lo), float(hi)
    return lo, hi


# --------------------------------------------------------------------------- graph propagation


@dataclass(frozen=True)
class BeliefChange:
    index: int
    id: str | None
    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass
class PropagationResult:
    """Beliefs after propagation and their projection back onto Beta posteriors.

    ``alpha``/``beta`` keep each fact's evidence mass ``alpha + beta`` and move its mean to
    the propagated belief: the graph shifts what we believe, it does not add observations.
    """

    belief: np.ndarray  # P(true | local evidence, graph)
    local: np.ndarray  # P(true | local evidence)
    alpha: np.ndarray
    beta: np.ndarray
    iterations: int
    converged: bool
    max_residual: float
    changes: list[BeliefChange] = field(default_factory=list)


def edge_arrays(
    edges: Sequence[Any], index: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(src, dst, relation, weight) arrays from objects with ``src, dst, relation, weight``
    (e.g. ``zenbrain.model.Edge``); edges whose ends are not in ``index`` are skipped."""
    src, dst, rel, w = [], [], [], []
    for e in edges:
        i, j = index.get(e.src), index.get(e.dst)
        if i is None or j is None:
            continue
        src.append(i)
        dst.append(j)
        rel.append(str(e.relation))
        w.append(float(e.weight))
    return (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), rel, np.asarray(w, dtype=np.float64))


def _co_truth_message(cavity: np.ndarray, c: np.ndarray) -> np.ndarray:
    """log-odds message of a factor exp(c x_i x_j) given the sender's cavity log-odds h:
    log(1 - p + p e^c) with p = sigmoid(h), computed without overflow. Lies in [min(0,c), max(0,c)]."""
    log_p = -np.logaddexp(0.0, -cavity)
    log_q = -np.logaddexp(0.0, cavity)
    return np.logaddexp(log_q, log_p + c)


def propagate(
    *,
    alpha: Any,
    beta: Any,
    src: Any,
    dst: Any,
    relation: Sequence[str],
    weight: Any = None,
    ids: Sequence[str] | None = None,
    params: BayesianParams = BayesianParams(),
) -> PropagationResult:
    """Marginal P(true) of every fact given its local Beta posterior and the typed edges.

    ``alpha``/``beta``: local posteriors, shape (n,). ``src``/``dst``: node indices, shape (m,);
    ``relation``: m relation names; ``weight``: m non-negative edge weights (default 1).
    Self-loops and relations without a coupling are ignored.
    """
    a = _as_float_array("alpha", alpha).reshape(-1)
    b = _as_float_array("beta", beta).reshape(-1)
    if a.shape != b.shape:
        raise ValidationError("alpha and beta must have the same length")
    _check_beta_params(a, b)
    n = a.shape[0]
    s = np.asarray(src, dtype=np.int64).reshape(-1)
    d = np.asarray(dst, dtype=np.int64).reshape(-1)
    m = s.shape[0]
    if d.shape[0] != m or len(relation) != m:
        raise ValidationError("src, dst and relation must have the same length")
    w = np.ones(m) if weight is None else _as_float_array("weight", weight).reshape(-1)
    if w.shape[0] != m:
        raise ValidationError("weight must have one entry per edge")
    if m and (s.min() < 0 or d.min() < 0 or s.max() >= n or d.max() >= n):
        raise ValidationError("edge endpoints must be node indices in [0, n)")
    if ids is not None and len(ids) != n:
        raise ValidationError("ids must have one entry per node")

    couplings = relation_couplings(params)
    c = np.array([couplings.get(r, 0.0) for r in relation], dtype=np.float64) * np.clip(w, 0.0, params.max_weight)
    keep = (s != d) & (c != 0.0)
    s, d, c = s[keep], d[keep], c[keep]
    k = s.shape[0]

    local = a / (a + b)
    field_ = np.log(a) - np.log(b)  # logit of the local posterior mean

    # Directed messages: 0..k-1 carry s->d, k..2k-1 carry d->s; rev[e] is the opposite direction.
    senders = np.concatenate([s, d])
    receivers = np.concatenate([d, s])
    cc = np.concatenate([c, c])
    rev = np.concatenate([np.arange(k, 2 * k), np.arange(k)])
    # scipy is imported where it is used: importing zenbrain stays fast (scipy.sparse ~0.3 s).
    import scipy.sparse as sp
    from scipy.special import expit

    gather = sp.csr_matrix((np.ones(2 * k), (receivers, np.arange(2 * k))), shape=(n, 2 * k))

    msg = np.zeros(2 * k)
    iterations, residual, converged = 0, 0.0, k == 0
    for iterations in range(1, params.max_iterations + 1):
        if k == 0:
            iterations = 0
            break
        total = field_ + gather @ msg
        cavity = total[senders] - msg[rev]
        new = _co_truth_message(cavity, cc)
        new = params.damping * msg + (1.0 - params.damping) * new
        residual = float(np.max(np.abs(new - msg)))
        msg = new
        if residual < params.tolerance:
            converged = True
            break

    logodds = np.clip(field_ + gather @ msg, -_MAX_LOGODDS, _MAX_LOGODDS)
    belief = expit(logodds)
    mass = a + b
    new_a, new_b = belief * mass, (1.0 - belief) * mass

    changed = np.flatnonzero(np.abs(belief - local) >= params.log_threshold) if n else np.array([], dtype=int)
    changes = [
        BeliefChange(int(i), None if ids is None else ids[i], float(local[i]), float(belief[i])) for i in changed
    ]
    return PropagationResult(
        belief=belief,
        local=local,
        alpha=new_a,
        beta=new_b,
        iterations=iterations,
        converged=converged,
        max_residual=residual,
        changes=changes,
    )


# --------------------------------------------------------------------------- calibration


def _check_pred(p: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    p = _as_float_array("p", p).reshape(-1)
    y = _as_float_array("y", y).reshape(-1)
    if p.shape != y.shape or p.size == 0:
        raise ValidationError("p and y must be non-empty and of equal length")
    if np.any((p < 0) | (p > 1)):
        raise ValidationError("probabilities must lie in [0, 1]")
    if np.any((y != 0) & (y != 1)):
        raise ValidationError("labels must be 0 or 1")
    return p, y


def brier_score(p: Any, y: Any) -> float:
    """Mean squared error between predicted probabilities and 0/1 outcomes."""
    p, y = _check_pred(p, y)
    return float(np.mean((p - y) ** 2))


@dataclass(frozen=True)
class ReliabilityCurve:
    edges: np.ndarray  # bins + 1 bin edges on [0, 1]
    mean_predicted: np.ndarray  # per bin; nan where empty
    frequency: np.ndarray  # observed rate of y = 1 per bin; nan where empty
    counts: np.ndarray


def reliability_curve(p: Any, y: Any, *, bins: int = 10) -> ReliabilityCurve:
    """Equal-width bins on [0, 1]; p = 1 falls in the last bin."""
    p, y = _check_pred(p, y)
    if bins < 1:
        raise ValidationError("bins must be >= 1")
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    counts = np.bincount(idx, minlength=bins).astype(np.float64)
    sum_p = np.bincount(idx, weights=p, minlength=bins)
    sum_y = np.bincount(idx, weights=y, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.where(counts > 0, sum_p / counts, np.nan)
        freq = np.where(counts > 0, sum_y / counts, np.nan)
    return ReliabilityCurve(edges=edges, mean_predicted=mean_p, frequency=freq, counts=counts.astype(np.int64))


def expected_calibration_error(p: Any, y: Any, *, bins: int = 10) -> float:
    """ECE: bin-size-weighted mean of |observed rate - mean prediction| over equal-width bins."""
    curve = reliability_curve(p, y, bins=bins)
    filled = curve.counts > 0
    gaps = np.abs(curve.frequency[filled] - curve.mean_predicted[filled])
    return float(np.sum(gaps * curve.counts[filled]) / np.sum(curve.counts))


def roc_auc(scores: Any, y: Any) -> float:
    """Probability that a random positive outscores a random negative (ties count 1/2)."""
    s = _as_float_array("scores", scores).reshape(-1)
    y = _as_float_array("y", y).reshape(-1)
    if s.shape != y.shape:
        raise ValidationError("scores and y must have equal length")
    pos = y == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValidationError("AUC needs at least one positive and one negative")
    from scipy.stats import rankdata

    ranks = rankdata(s)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


__all__ = [
    "BayesianParams",
    "BeliefChange",
    "PropagationResult",
    "ReliabilityCurve",
    "brier_score",
    "credible_interval",
    "edge_arrays",
    "expected_calibration_error",
    "mean",
    "observe",
    "prior",
    "propagate",
    "relation_couplings",
    "reliability_curve",
    "roc_auc",
]
