"""Compositional context: a shared subspace across contexts, a specific part per context.

Fitting. Each context ``c`` with enough memories contributes the span ``U_c`` of its top
``per_context_dim`` principal directions (uncentred SVD of its unit vectors: cosine
similarity is uncentred too). The average projector ``P = mean_c U_c U_c^T`` has an
eigenvalue in [0, 1] for each direction: the mean squared cosine between that direction
and the contexts' subspaces. Directions with eigenvalue >= ``agreement`` lie in (nearly)
every context's principal subspace; they form the orthonormal shared basis ``B``
(eigenvectors of P, computed as the left singular vectors of ``[U_1 ... U_C]``). Each
context's specific basis ``S_c`` is the top of the SVD of its residuals ``X_c - X_c B B^T``,
so ``S_c`` is orthogonal to ``B``.

Use. ``encode(v, c)`` returns ``shared = B B^T v`` and ``specific = S_c S_c^T (v - shared)``
(the whole residual for a context that was not fitted). Cross-context recall compares
only shared components (``cross_context_similarity``) and only between contexts that the
policy allows (``allowed``). The state is plain numpy arrays with a JSON form.

The authors' code keeps the first ``sharedDim`` coordinates and rescales the rest per
context, which is not a projection; this module learns the subspace instead.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

Policy = str | Collection[tuple[str, str]] | None


@dataclass(frozen=True)
class CompositionalParams(Params):
    per_context_dim: int = bounded(16, 1, 4096, "principal directions taken from each context")
    agreement: float = bounded(0.8, 0.55, 1.0, "mean squared cosine with the contexts' subspaces a shared direction needs")
    max_shared_dim: int = bounded(64, 0, 4096, "most shared directions kept")
    specific_dim: int = bounded(16, 0, 4096, "directions of each context-specific basis")
    min_context_size: int = bounded(3, 1, 1_000_000, "fewest memories a context needs to take part in fitting")
    rank_tol: float = bounded(1e-8, 0.0, 1.0, "relative singular value below which a direction is noise")
    min_similarity: float = bounded(0.3, -1.0, 1.0, "shared-component cosine a cross-context hit needs")
    top_k: int = bounded(10, 1, 100_000, "cross-context hits returned")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("per_context_dim", "max_shared_dim", "specific_dim", "min_context_size", "top_k"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"CompositionalParams.{name} must be an integer")


@dataclass
class CompositionalState:
    dim: int
    shared: np.ndarray  # (dim, s) orthonormal columns; s may be 0
    agreement: np.ndarray  # (s,) eigenvalue of the average projector per shared direction
    specific: dict[str, np.ndarray] = field(default_factory=dict)  # context -> (dim, k_c), orthogonal to shared
    context_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def shared_dim(self) -> int:
        return int(self.shared.shape[1])

    def to_json(self) -> dict[str, Any]:
        """Plain lists and numbers; ``json.dumps`` round-trips it exactly."""
        return {
            "version": 1,
            "dim": self.dim,
            "shared": self.shared.T.tolist(),  # one row per basis vector
            "agreement": self.agreement.tolist(),
            "specific": {c: m.T.tolist() for c, m in sorted(self.specific.items())},
            "context_sizes": dict(sorted(self.context_sizes.items())),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompositionalState:
        try:
            if data.get("version") != 1:
                raise ValidationError(f"unsupported compositional state version {data.get('version')!r}")
            dim = int(data["dim"])

            def basis(rows: Any) -> np.ndarray:
                m = np.asarray(rows, dtype=np.float64).reshape(-1, dim).T
                if not np.all(np.isfinite(m)):
                    raise ValidationError("basis must be finite")
                return m

            shared = basis(data["shared"])
            agreement = np.asarray(data["agreement"], dtype=np.float64).reshape(-1)
            if agreement.shape[0] != shared.shape[1]:
                raise ValidationError("one agreement value per shared direction")
            specific = {str(c): basis(rows) for c, rows in data.get("specific", {}).items()}
            sizes = {str(c): int(v) for c, v in data.get("context_sizes", {}).items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"malformed compositional state: {exc}") from exc
        return cls(dim, shared, agreement, specific, sizes)


def _unit_rows(x: Any) -> np.ndarray:
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 2:
        raise ValidationError("vectors must be a 2-D array")
    if not np.all(np.isfinite(v)):
        raise ValidationError("vectors must be finite")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


def _canonical_signs(m: np.ndarray) -> np.ndarray:
    """Flip each column so its largest-magnitude entry is positive: SVD signs are arbitrary."""
    if m.size == 0:
        return m
    idx = np.argmax(np.abs(m), axis=0)
    signs = np.sign(m[idx, np.arange(m.shape[1])])
    signs[signs == 0] = 1.0
    return m * signs


def _top_directions(x: np.ndarray, k: int, rank_tol: float) -> np.ndarray:
    """Top-k right singular vectors of x as (dim, k') columns, dropping null directions."""
    if k == 0 or x.shape[0] == 0:
        return np.zeros((x.shape[1], 0))
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    keep = s[:k] > rank_tol * max(s[0], 1e-300) if s.size else np.zeros(0, dtype=bool)
    keep &= s[:k] > 1e-12
    return vt[:k][keep].T


def fit(
    *, vectors: Any, contexts: Sequence[str], params: CompositionalParams = CompositionalParams()
) -> CompositionalState:
    """Learn the shared basis and the per-context specific bases from labelled vectors.

    Contexts with fewer than ``min_context_size`` vectors are ignored; with fewer than two
    qualifying contexts nothing is shared (the shared basis is empty). Keep ``per_context_dim``
    well below the vector width: if each context's span covers the whole space, every
    direction looks shared.
    """
    x = _unit_rows(vectors)
    if len(contexts) != x.shape[0]:
        raise ValidationError("one context per vector")
    dim = x.shape[1]
    labels = np.asarray([str(c) for c in contexts], dtype=object)
    names = sorted(set(labels.tolist()))
    groups = {c: x[labels == c] for c in names}
    sizes = {c: int(g.shape[0]) for c, g in groups.items()}
    fitted = [c for c in names if sizes[c] >= params.min_context_size]

    shared = np.zeros((dim, 0))
    agreement = np.zeros(0)
    if len(fitted) >= 2 and params.max_shared_dim > 0:
        spans = [_top_directions(groups[c], int(params.per_context_dim), params.rank_tol) for c in fitted]
        stacked = np.concatenate(spans, axis=1)
        q, sv, _ = np.linalg.svd(stacked, full_matrices=False)
        eig = sv**2 / len(fitted)  # eigenvalues of the average projector
        chosen = np.flatnonzero(eig >= params.agreement)[: int(params.max_shared_dim)]
        shared = _canonical_signs(q[:, chosen])
        agreement = eig[chosen]

    specific = {}
    for c in fitted:
        g = groups[c]
        resid = g - (g @ shared) @ shared.T
        s_c = _top_directions(resid, int(params.specific_dim), params.rank_tol)
        s_c = s_c - shared @ (shared.T @ s_c)  # remove round-off leakage into the shared span
        if s_c.shape[1]:
            s_c, _ = np.linalg.qr(s_c)
        specific[c] = _canonical_signs(s_c)
    return CompositionalState(dim, shared, agreement, specific, sizes)


def encode(vec: Any, context: str, *, state: CompositionalState) -> tuple[np.ndarray, np.ndarray]:
    """(shared, specific) components of one vector (shape (dim,)) or of rows (shape (n, dim))."""
    v = np.asarray(vec, dtype=np.float64)
    if v.shape[-1] != state.dim or v.ndim not in (1, 2):
        raise ValidationError(f"vector width must be {state.dim}")
    b = state.shared
    shared = (v @ b) @ b.T
    resid = v - shared
    s_c = state.specific.get(context)
    specific = resid if s_c is None else (resid @ s_c) @ s_c.T
    return shared, specific


def cross_context_similarity(q: Any, d: Any, *, state: CompositionalState) -> Any:
    """Cosine of the shared components of ``q`` (dim,) and ``d`` (dim,) or (n, dim); 0 if either is empty."""
    qv = np.asarray(q, dtype=np.float64).reshape(-1)
    dv = np.asarray(d, dtype=np.float64)
    if qv.shape[0] != state.dim or dv.shape[-1] != state.dim:
        raise ValidationError(f"vector width must be {state.dim}")
    qc = qv @ state.shared
    dc = dv @ state.shared
    norms = np.linalg.norm(dc, axis=-1) * np.linalg.norm(qc)
    dots = dc @ qc
    out = np.divide(dots, norms, out=np.zeros_like(np.asarray(dots, dtype=np.float64)), where=norms > 1e-12)
    return float(out) if np.ndim(out) == 0 else out


def allowed(src_context: str, dst_context: str, policy: Policy) -> bool:
    """May a query from ``src_context`` read memories of ``dst_context``?

    Same context: always. ``policy`` "*": any pair. Otherwise a collection of directed
    (src, dst) pairs where either side may be "*"; None or empty allows nothing.
    """
    if src_context == dst_context:
        return True
    if policy is None:
        return False
    if isinstance(policy, str):
        if policy == "*":
            return True
        raise ConfigError("a string cross-context policy must be '*'")
    for pair in policy:
        if len(pair) != 2:
            raise ConfigError(f"policy entries must be (src, dst) pairs, got {pair!r}")
        s, d = pair
        if s in ("*", src_context) and d in ("*", dst_context):
            return True
    return False


def cross_context_recall(
    *,
    query_vec: Any,
    query_context: str,
    vectors: Any,
    contexts: Sequence[str],
    state: CompositionalState,
    policy: Policy,
    params: CompositionalParams = CompositionalParams(),
) -> list[tuple[int, float]]:
    """(row index, shared similarity) of the best memories from *other* contexts the policy
    allows, at or above ``min_similarity``, best first, at most ``top_k``."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] != len(contexts):
        raise ValidationError("one context per vector row")
    if v.shape[0] == 0 or state.shared_dim == 0:
        return []
    names = sorted(set(contexts))
    ok = {c for c in names if c != query_context and allowed(query_context, c, policy)}
    mask = np.fromiter((c in ok for c in contexts), dtype=bool, count=len(contexts))
    if not mask.any():
        return []
    rows = np.flatnonzero(mask)
    sims = np.atleast_1d(cross_context_similarity(query_vec, v[rows], state=state))
    order = np.argsort(-sims, kind="stable")
    out = []
    for i in order[: int(params.top_k)]:
        if sims[i] < params.min_similarity:
            break
        out.append((int(rows[i]), float(sims[i])))
    return out


__all__ = [
    "CompositionalParams",
    "CompositionalState",
    "Policy",
    "allowed",
    "cross_context_recall",
    "cross_context_similarity",
    "encode",
    "fit",
]
