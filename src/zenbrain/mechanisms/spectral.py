"""Spectral health of the knowledge graph: algebraic connectivity and bridging proposals.

The graph is the weighted edge graph made undirected: ``A = W + W^T`` (both directions of
a pair add up; self-loops dropped; weights floored at ``min_weight`` so a decayed but
present edge still connects). ``L = D - A`` (``scipy.sparse.csgraph.laplacian``). The
Fiedler value ``lambda_2`` (second-smallest eigenvalue of L) is 0 iff the graph is
disconnected and grows with how well it hangs together. Small graphs use a dense
``numpy.linalg.eigvalsh``; large ones ``scipy.sparse.linalg.eigsh`` in shift-invert mode.

``health`` reports lambda_2, the components and ``is_fragmented`` (lambda_2 below
``fragmentation_threshold``). On fragmentation, ``propose_bridges`` returns the most similar
node pair (cosine of the vectors passed in) between the largest component and each of the
next ones, as data for the caller to add as ``similar_to`` edges; ``compare`` reports the
change between two health checks (e.g. before and after sleep).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, laplacian
from scipy.sparse.linalg import eigsh

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded


@dataclass(frozen=True)
class SpectralParams(Params):
    fragmentation_threshold: float = bounded(0.01, 0.0, 1e6, "lambda_2 below which the graph counts as fragmented")
    min_weight: float = bounded(0.01, 0.0, 1e6, "floor applied to every edge weight")
    dense_max_nodes: int = bounded(500, 2, 20_000, "largest graph solved with a dense eigensolver")
    shift: float = bounded(1e-3, 1e-9, 1.0, "shift-invert offset for the sparse eigensolver (L + shift I is invertible)")
    max_bridges: int = bounded(1, 0, 1000, "bridges proposed: largest component to each of the next ones")
    min_bridge_similarity: float = bounded(0.3, -1.0, 1.0, "cosine below which no bridge is proposed")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("dense_max_nodes", "max_bridges"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"SpectralParams.{name} must be an integer")


def adjacency(
    *, n: int, src: Any, dst: Any, weight: Any = None, params: SpectralParams = SpectralParams()
) -> sp.csr_matrix:
    """Symmetric weighted adjacency (n x n, CSR) of directed edge arrays."""
    s = np.asarray(src, dtype=np.int64).reshape(-1)
    d = np.asarray(dst, dtype=np.int64).reshape(-1)
    if s.shape != d.shape:
        raise ValidationError("src and dst must have the same length")
    w = np.ones(s.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64).reshape(-1)
    if w.shape != s.shape:
        raise ValidationError("weight must have one entry per edge")
    if not np.all(np.isfinite(w)):
        raise ValidationError("weights must be finite")
    if s.size and (min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= n):
        raise ValidationError("edge endpoints must be node indices in [0, n)")
    keep = s != d
    s, d, w = s[keep], d[keep], np.maximum(w[keep], params.min_weight)
    a = sp.coo_matrix((w, (s, d)), shape=(n, n)).tocsr()
    return (a + a.T).tocsr()


def fiedler_value(a: sp.spmatrix, *, params: SpectralParams = SpectralParams()) -> float:
    """Second-smallest Laplacian eigenvalue of a symmetric adjacency; 0.0 for fewer than 2 nodes."""
    n = a.shape[0]
    if n < 2:
        return 0.0
    lap = laplacian(sp.csr_matrix(a, dtype=np.float64))
    if n <= params.dense_max_nodes:
        vals = np.linalg.eigvalsh(lap.toarray())
    else:
        # Shift-invert around -shift: the eigenvalues nearest it are the two smallest of L.
        v0 = np.linspace(1.0, 2.0, n)  # fixed start vector: same input, same answer
        vals = eigsh(lap.tocsc(), k=2, sigma=-params.shift, which="LM", v0=v0, return_eigenvectors=False)
        vals = np.sort(vals)
    return float(max(0.0, vals[1]))


@dataclass
class SpectralHealth:
    fiedler: float
    n_nodes: int  # nodes analysed (isolated nodes excluded unless asked for)
    n_edges: int  # undirected node pairs with an edge
    n_components: int
    component_sizes: list[int]  # largest first
    labels: np.ndarray  # component label per analysed node (0 = largest)
    nodes: np.ndarray  # indices (into the caller's 0..n-1) of the analysed nodes
    is_fragmented: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "fiedler": self.fiedler,
            "n_nodes": self.n_nodes,
            "n_edges": self.n_edges,
            "n_components": self.n_components,
            "component_sizes": list(self.component_sizes),
            "is_fragmented": self.is_fragmented,
        }


def health(
    *,
    n: int,
    src: Any,
    dst: Any,
    weight: Any = None,
    include_isolated: bool = False,
    params: SpectralParams = SpectralParams(),
) -> SpectralHealth:
    """Spectral health of a graph given as edge arrays over node indices 0..n-1.

    Isolated nodes (memories with no edge) are left out by default: they are not part of
    the graph's structure and would pin lambda_2 at 0 for any store with an unlinked item.
    """
    if n < 0:
        raise ValidationError("n must be >= 0")
    a = adjacency(n=n, src=src, dst=dst, weight=weight, params=params)
    if include_isolated:
        nodes = np.arange(n)
    else:
        nodes = np.flatnonzero(np.asarray(a.getnnz(axis=1)).reshape(-1) > 0)
        a = a[nodes][:, nodes]
    m = len(nodes)
    if m == 0:
        return SpectralHealth(0.0, 0, 0, 0, [], np.zeros(0, dtype=np.int64), nodes, False)
    n_comp, raw = connected_components(a, directed=False)
    sizes = np.bincount(raw, minlength=n_comp)
    # Relabel so that 0 is the largest component; ties by smallest member index.
    first = np.full(n_comp, m)
    np.minimum.at(first, raw, np.arange(m))
    rank = np.lexsort((first, -sizes))
    relabel = np.empty(n_comp, dtype=np.int64)
    relabel[rank] = np.arange(n_comp)
    labels = relabel[raw]
    # lambda_2 of a disconnected graph is exactly 0; report that, not solver round-off.
    lam = 0.0 if n_comp > 1 else fiedler_value(a, params=params)
    fragmented = m >= 2 and (n_comp > 1 or lam < params.fragmentation_threshold)
    return SpectralHealth(
        fiedler=lam,
        n_nodes=m,
        n_edges=int(sp.triu(a, k=1).nnz),
        n_components=int(n_comp),
        component_sizes=[int(x) for x in sizes[rank]],
        labels=labels,
        nodes=nodes,
        is_fragmented=bool(fragmented),
    )


@dataclass(frozen=True)
class Bridge:
    src: int  # node index (into the caller's 0..n-1)
    dst: int
    similarity: float
    components: tuple[int, int]  # component labels joined (0 = largest)
    relation: str = "similar_to"


def propose_bridges(
    *, report: SpectralHealth, vectors: Any, params: SpectralParams = SpectralParams()
) -> list[Bridge]:
    """Most similar node pair between the largest component and each of the next
    ``max_bridges`` components (by size), if its cosine reaches ``min_bridge_similarity``.

    ``vectors``: one row per node index 0..n-1 of the graph given to ``health``.
    """
    if report.n_components < 2 or params.max_bridges == 0:
        return []
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] <= int(report.nodes.max(initial=-1)):
        raise ValidationError("vectors must have one row per node index")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    base = report.nodes[report.labels == 0]
    out = []
    for comp in range(1, min(report.n_components, int(params.max_bridges) + 1)):
        other = report.nodes[report.labels == comp]
        sims = unit[base] @ unit[other].T
        flat = int(np.argmax(sims))  # first maximum: deterministic
        i, j = divmod(flat, sims.shape[1])
        if sims[i, j] >= params.min_bridge_similarity:
            out.append(Bridge(int(base[i]), int(other[j]), float(sims[i, j]), (0, comp)))
    return out


def with_bridges(
    *, src: Any, dst: Any, weight: Any = None, bridges: Sequence[Bridge]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge arrays with the bridges appended (bridge weight = its similarity)."""
    s = np.asarray(src, dtype=np.int64).reshape(-1)
    d = np.asarray(dst, dtype=np.int64).reshape(-1)
    w = np.ones(s.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64).reshape(-1)
    bs = np.array([b.src for b in bridges], dtype=np.int64)
    bd = np.array([b.dst for b in bridges], dtype=np.int64)
    bw = np.array([b.similarity for b in bridges], dtype=np.float64)
    return np.concatenate([s, bs]), np.concatenate([d, bd]), np.concatenate([w, bw])


@dataclass(frozen=True)
class HealthChange:
    fiedler_before: float
    fiedler_after: float
    components_before: int
    components_after: int
    improved: bool  # lambda_2 did not fall and components did not grow
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def delta(self) -> float:
        return self.fiedler_after - self.fiedler_before


def compare(before: SpectralHealth, after: SpectralHealth) -> HealthChange:
    """Before/after comparison of two health checks (e.g. around sleep or bridging)."""
    improved = after.fiedler >= before.fiedler and after.n_components <= before.n_components
    return HealthChange(
        before.fiedler,
        after.fiedler,
        before.n_components,
        after.n_components,
        bool(improved),
        {"before": before.as_dict(), "after": after.as_dict()},
    )


__all__ = [
    "Bridge",
    "HealthChange",
    "SpectralHealth",
    "SpectralParams",
    "adjacency",
    "compare",
    "fiedler_value",
    "health",
    "propose_bridges",
    "with_bridges",
]
