"""Spectral health of the knowledge graph: algebraic connectivity and bridging proposals.

The graph is the weighted edge graph made undirected: ``A = W + W^T`` (both directions of
a pair add up; self-loops dropped; weights floored at ``min_weight`` so a decayed but
present edge still connects). ``L = D - A`` (``scipy.sparse.csgraph.laplacian``). The
Fiedler value ``lambda_2`` (second-smallest eigenvalue of L) is 0 iff the graph is
disconnected and grows with how well it hangs together. Small graphs use a dense
solver of the two smallest eigenvalues (``dense_smallest``). Large ones use
``scipy.sparse.linalg.eigsh`` in shift-invert mode only when the factorisation is known
to be cheap (a band-like graph, e.g. a chain, whose reverse Cuthill-McKee envelope is
small); every other large graph goes to LOBPCG preconditioned by algebraic multigrid
(``fiedler_iterative``), which needs no factorisation: an LU of a well-mixed 100k-node
memory graph fills in and takes minutes and gigabytes.

``health`` reports lambda_2, the components and ``is_fragmented`` (lambda_2 below
``fragmentation_threshold``). On fragmentation, ``propose_bridges`` returns the most similar
node pair (cosine of the vectors passed in) between the largest component and each of the
next ones, as data for the caller to add as ``similar_to`` edges; ``compare`` reports the
change between two health checks (e.g. before and after sleep).

``pair_weights`` and ``rescaled_fiedler`` let a caller skip the eigensolver when a graph
kept its node pairs and its weights moved little since lambda_2 was last computed: if
every weight moved by a factor in [rho_min, rho_max], then rho_min L <= L' <= rho_max L
(the differences are Laplacians of non-negative weights), so by Courant-Fischer
rho_min lambda_2 <= lambda_2' <= rho_max lambda_2.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, laplacian, reverse_cuthill_mckee
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh, lobpcg

from ..errors import ValidationError
from .spectral_params import SpectralParams

if TYPE_CHECKING:
    from scipy.sparse._base import _spbase

# Any scipy sparse matrix or array (csr, coo, dia, ...): the base class of them all. (The
# public sp.spmatrix is only a mixin of the matrix classes and lacks their methods.)
SparseMatrix: TypeAlias = "_spbase"


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


# Sum of the squared envelope row widths (in reverse Cuthill-McKee order) up to which a
# large Laplacian is factorised: about the flops of its envelope Cholesky, a second or less.
FACTOR_MAX_WORK = 1e9
# From this many nodes up to dense_max_nodes, the exact lambda_2 comes from shift-invert
# ARPACK rather than a dense solve: about 2/3 of the time at 300 nodes, 1/2 at 500, while
# below ~250 the dense solve is faster.
SPARSE_EXACT_MIN_NODES = 256
ITER_BLOCK = 4  # LOBPCG block size (lambda_2 and the next few, which speed its convergence)
ITER_RTOL = 1e-6  # bound on the relative error of lambda_2 at which LOBPCG stops
# LOBPCG iterations at most (the estimate is then an upper bound). Preconditioned by
# multigrid, a 200k-node memory graph needs 10-15 to the report's 0.1 %.
ITER_MAX = 500
_ITER_CHUNK = 5  # iterations between two checks of the error bound


def fiedler_value(a: SparseMatrix | np.ndarray, *, params: SpectralParams = SpectralParams(),
                  rtol: float = ITER_RTOL, decide: float | None = None) -> float:
    """Second-smallest Laplacian eigenvalue of a symmetric adjacency; 0.0 for fewer than 2 nodes.

    Up to ``dense_max_nodes`` nodes: exact, by a dense solve below ``SPARSE_EXACT_MIN_NODES``
    nodes and by shift-invert ``eigsh`` (converged to machine precision) from there, where
    it is the cheaper of the two (a sparse LU of a few hundred nodes costs little); the
    dense solve is the fallback should ARPACK fail. Above: shift-invert ``eigsh`` when the
    Laplacian's envelope is small (``cheap_to_factor``), else ``fiedler_iterative`` (meant
    for a connected graph, as ``health_of`` passes it; 0.0 for a disconnected one) to the
    relative error ``rtol``, and past ``decide`` if given.
    """
    n = a.shape[0]
    if n < 2:
        return 0.0
    lap = laplacian(sp.csr_matrix(a, dtype=np.float64))
    if not sp.issparse(lap):  # a sparse graph has a sparse Laplacian
        raise TypeError(f"laplacian() of a sparse matrix returned {type(lap).__name__}")
    if n <= params.dense_max_nodes:
        vals = None
        if n >= SPARSE_EXACT_MIN_NODES:
            try:
                vals = shift_invert_smallest(lap, params.shift)
            except (ArpackError, ArpackNoConvergence, RuntimeError, np.linalg.LinAlgError):
                vals = None
        if vals is None:
            vals = dense_smallest(lap.toarray())
    elif cheap_to_factor(lap):
        vals = shift_invert_smallest(lap, params.shift)
    else:
        return fiedler_iterative(lap, rtol=rtol, decide=decide).value  # 0.0 for a disconnected graph
    return float(max(0.0, vals[1]))


def shift_invert_smallest(lap: SparseMatrix, shift: float) -> np.ndarray:
    """The two smallest eigenvalues (ascending) of a sparse Laplacian: ``eigsh`` in
    shift-invert mode around ``-shift`` (the eigenvalues nearest it are the two smallest),
    to ARPACK's default tolerance (machine precision)."""
    n = lap.shape[0]
    v0 = np.linspace(1.0, 2.0, n)  # fixed start vector: same input, same answer
    vals = eigsh(sp.csc_matrix(lap), k=2, sigma=-shift, which="LM", v0=v0, return_eigenvectors=False)
    return np.sort(vals)


def dense_smallest(lap: np.ndarray, k: int = 2) -> np.ndarray:
    """The ``k`` smallest eigenvalues (ascending) of a dense symmetric matrix.

    LAPACK's MRRR driver (``dsyevr``) on the index range 0..k-1: the same tridiagonal
    reduction as ``numpy.linalg.eigvalsh`` but only the wanted eigenvalues of the
    tridiagonal matrix (about a quarter less work at a few hundred nodes; the values agree
    with the full solve to round-off).
    """
    k = min(k, lap.shape[0])
    return scipy.linalg.eigh(
        lap, eigvals_only=True, subset_by_index=[0, k - 1], driver="evr", overwrite_a=True, check_finite=False
    )


def cheap_to_factor(lap: SparseMatrix, max_work: float | None = None) -> bool:
    """Whether a sparse factorisation of ``lap`` is cheap: in reverse Cuthill-McKee order the
    sum of its squared envelope row widths (the flops of an envelope Cholesky) is at most
    ``max_work`` (``FACTOR_MAX_WORK``). True for chains and other band-like graphs and for
    any graph of a few thousand nodes, false for large well-mixed ones."""
    if max_work is None:
        max_work = FACTOR_MAX_WORK
    m = sp.csr_matrix(lap)
    perm = reverse_cuthill_mckee(m, symmetric_mode=True)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    c = m.tocoo()
    r, k = inv[c.row], inv[c.col]
    low = np.arange(m.shape[0])
    np.minimum.at(low, r, k)  # leftmost column per row (the diagonal at most)
    width = (np.arange(m.shape[0]) - low).astype(np.float64)
    return float(width @ width) <= max_work


def multigrid_preconditioner(lap: sp.csr_matrix) -> Any:
    """One V-cycle of smoothed-aggregation algebraic multigrid (pyamg) on a graph Laplacian,
    as an operator that approximately solves ``L x = b``.

    The slow part of lambda_2 on a large memory graph is its smooth, long-range eigenvector:
    the temporal chain of a store filled over time makes the graph a long band, and
    Jacobi-preconditioned LOBPCG moved along it a few nodes an iteration (3,000 iterations,
    2.5 % short of lambda_2, on a 200k-node graph). Multigrid corrects it on coarser graphs:
    10 iterations to 1e-8 on that graph. Choices, measured on the Laplacians of 200k- and
    400k-memory stores (lambda_2 to 0.1 %, then to 1e-6):

    * connections weaker than ``MULTIGRID_STRENGTH`` of their ends' geometric mean degree do
      not join aggregates, so that aggregates follow the chain and not the weak links
      (weights floored at ``min_weight``): 10 iterations at both sizes instead of 25-40,
      15.7 s instead of 50.4 s at 400k;
    * one forward Gauss-Seidel sweep before and one backward after (symmetric, as LOBPCG
      needs), not a symmetric sweep each: half the relaxation work per cycle;
    * the prolongator's Jacobi smoothing is weighted row by row (``weighting="local"``)
      rather than by a spectral radius estimated from a random vector, so that the same
      graph gives the same lambda_2 bit for bit;
    * the coarsest level is solved by pseudo-inverse, as the Laplacian is singular.
    """
    import pyamg

    solver = pyamg.smoothed_aggregation_solver(
        lap,
        max_coarse=MULTIGRID_MAX_COARSE,
        strength=("symmetric", {"theta": MULTIGRID_STRENGTH}),
        smooth=("jacobi", {"weighting": "local"}),
        presmoother=("gauss_seidel", {"sweep": "forward"}),
        postsmoother=("gauss_seidel", {"sweep": "backward"}),
    )
    return solver.aspreconditioner(cycle="V")


MULTIGRID_MAX_COARSE = 500  # nodes of the coarsest level, solved directly
MULTIGRID_STRENGTH = 0.02  # relative weight below which a link does not join an aggregate


@dataclass(frozen=True)
class FiedlerEstimate:
    value: float  # lambda_2 (an upper bound on it: a Rayleigh quotient)
    block: np.ndarray  # the final LOBPCG block (n x k), a warm start for a similar graph
    error: float  # bound on the relative error of ``value`` (inf when unknown)
    iterations: int

    @property
    def converged(self) -> bool:
        return self.error <= ITER_RTOL


def _ritz(lap: sp.csr_matrix, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rayleigh-Ritz of ``lap`` on span(x) (x orthogonal to the constants): sorted Ritz values,
    their vectors and residual norms."""
    q, _ = np.linalg.qr(x)
    lq = lap @ q
    theta, s = np.linalg.eigh(q.T @ lq)
    v = q @ s
    res = np.linalg.norm(lq @ s - v * theta, axis=0)
    return theta, v, res


def fiedler_iterative(
    lap: SparseMatrix, start: np.ndarray | None = None, *, rtol: float = ITER_RTOL, max_iter: int = ITER_MAX,
    decide: float | None = None,
) -> FiedlerEstimate:
    """lambda_2 of a graph's Laplacian by LOBPCG, without factorising it (0.0 when disconnected).

    The constant vector (lambda_1 = 0) is a constraint, the preconditioner is one multigrid
    V-cycle on the Laplacian (``multigrid_preconditioner``), the block holds ``ITER_BLOCK``
    vectors from a fixed random start (or ``start``, n x k, e.g. the block of a similar
    graph). Every ``_ITER_CHUNK`` iterations
    the Kato-Temple bound r^2 / (theta_2 - r_2 - theta_1) (with the residual r of the
    lowest Ritz pair theta_1 and the next pair's lower bound theta_2 - r_2 standing for
    lambda_3), or r itself when that is smaller, bounds the error of theta_1; it stops
    when that bound is at most ``rtol`` * theta_1, else after ``max_iter`` iterations with
    theta_1 (a Rayleigh quotient: never below lambda_2) and its bound. With ``decide`` (a
    threshold such as the fragmentation threshold) it also goes on until the threshold lies
    outside [theta_1 (1 - bound), theta_1], so that which side lambda_2 is on is certain.
    """
    lap = sp.csr_matrix(lap, dtype=np.float64)
    n = lap.shape[0]
    if n < 3:
        return FiedlerEstimate(float(fiedler_value(sp.diags(lap.diagonal()) - lap)), np.zeros((n, 0)), 0.0, 0)
    if connected_components(lap, directed=False)[0] > 1:
        return FiedlerEstimate(0.0, np.zeros((n, 0)), 0.0, 0)  # exactly 0: no iteration gets there
    k = min(ITER_BLOCK, n - 2)
    pre = multigrid_preconditioner(lap)
    ones = np.full((n, 1), 1.0 / math.sqrt(n))
    x = np.random.default_rng(0).normal(size=(n, k))  # fixed start: same graph, same answer
    if start is not None and np.shape(start) == (n, k) and np.all(np.isfinite(start)):
        x = np.asarray(start, dtype=np.float64)
    x = x - ones @ (ones.T @ x)
    done, lam, err = 0, math.inf, math.inf
    while True:
        steps = min(_ITER_CHUNK, max_iter - done)
        if steps > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    _, x = lobpcg(  # type: ignore[assignment]  # stub: vectors of a real symmetric problem are real
                        lap, x, M=pre, Y=ones, largest=False, tol=1e-300, maxiter=steps
                    )
                except (np.linalg.LinAlgError, ValueError):
                    steps = max_iter - done  # no further progress possible: report what there is
            done += steps
        x = x - ones @ (ones.T @ x)
        theta, x, res = _ritz(lap, x)
        lam, r = float(theta[0]), float(res[0])
        if lam > 0.0:
            gap = float(theta[1] - res[1] - lam) if k > 1 else 0.0
            bound = min(r, r * r / gap) if gap > 0.0 else r
            err = bound / lam
        settled = decide is None or not lam * (1.0 - err) <= decide <= lam
        if (err <= rtol and settled) or done >= max_iter:
            return FiedlerEstimate(max(0.0, lam), x, err, done)


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
    return health_of(a, include_isolated=include_isolated, params=params)


def health_of(
    a: sp.csr_matrix,
    *,
    include_isolated: bool = False,
    params: SpectralParams = SpectralParams(),
    fiedler: Callable[[sp.csr_matrix], float] | None = None,
) -> SpectralHealth:
    """``health`` of a symmetric adjacency (``adjacency``'s output).

    ``fiedler`` computes lambda_2 of the analysed graph (its adjacency, connected, at least
    two nodes); ``fiedler_value`` by default.
    """
    n = a.shape[0]
    if include_isolated:
        nodes = np.arange(n)
    else:
        nodes = np.flatnonzero(np.asarray(a.getnnz(axis=1)).reshape(-1) > 0)
        if nodes.size < n or not _canonical(a):  # else the submatrix would be a copy of a
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
    if n_comp > 1:
        lam = 0.0
    elif fiedler is None or m < 2:
        # A report needs lambda_2 to params.report_rtol and its side of the threshold for
        # sure; 1e-6 took a 215k-memory store's sleep 3,000 LOBPCG iterations (224 s), 1e-3 ~150.
        lam = fiedler_value(a, params=params, rtol=params.report_rtol, decide=params.fragmentation_threshold)
    else:
        lam = float(fiedler(a))
    fragmented = m >= 2 and (n_comp > 1 or lam < params.fragmentation_threshold)
    return SpectralHealth(
        fiedler=lam,
        n_nodes=m,
        n_edges=_upper_count(a),
        n_components=int(n_comp),
        component_sizes=[int(x) for x in sizes[rank]],
        labels=labels,
        nodes=nodes,
        is_fragmented=bool(fragmented),
    )


def _canonical(a: object) -> bool:
    """A CSR matrix with sorted indices and no duplicates (what ``adjacency`` returns)."""
    return isinstance(a, (sp.csr_matrix, sp.csr_array)) and bool(a.has_canonical_format)


def _rows(a: sp.csr_matrix) -> np.ndarray:
    """Row index of every stored entry of a CSR matrix."""
    return np.repeat(np.arange(a.shape[0], dtype=a.indices.dtype), np.diff(a.indptr))


def _upper_count(a: Any) -> int:
    """Stored entries above the diagonal: ``sp.triu(a, k=1).nnz`` without building it."""
    if not _canonical(a):
        return int(sp.triu(a, k=1).nnz)
    return int(np.count_nonzero(a.indices > _rows(a)))


def _upper(a: Any) -> sp.csr_matrix:
    """The strict upper triangle, canonical CSR, float64. From a canonical CSR matrix its
    entries are taken in place (row-major, columns sorted: what triu, sum_duplicates and
    sort_indices give)."""
    if not _canonical(a):
        u = sp.triu(sp.csr_matrix(a, dtype=np.float64), k=1).tocsr()
        u.sum_duplicates()
        u.sort_indices()
        return u
    rows = _rows(a)
    keep = a.indices > rows
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=a.shape[0]))])
    return sp.csr_matrix(
        (np.asarray(a.data[keep], dtype=np.float64), a.indices[keep], indptr), shape=a.shape
    )


def pair_weights(a: SparseMatrix) -> tuple[str, np.ndarray]:
    """(digest of the node pairs, their weights) of a symmetric adjacency.

    The pairs are the upper triangle in row-major order; two graphs over the same nodes
    have the same digest iff they link the same pairs, and then the weights align.
    """
    u = _upper(a)
    h = hashlib.sha1()
    h.update(np.asarray(u.shape, dtype=np.int64).tobytes())
    h.update(u.indptr.astype(np.int64).tobytes())
    h.update(u.indices.astype(np.int64).tobytes())
    return h.hexdigest(), np.array(u.data, dtype=np.float64)


def rescaled_fiedler(fiedler: float, old: Any, new: Any) -> tuple[float, float]:
    """lambda_2 of a graph whose pair weights moved from ``old`` to ``new`` (aligned, same
    pairs), from the lambda_2 computed on ``old``: (estimate, bound on its relative error).

    With rho = new / old in [lo, hi], the true value lies in [lo, hi] * ``fiedler``; the
    estimate is its geometric middle, ``sqrt(lo * hi) * fiedler``, within a factor
    ``sqrt(hi / lo)`` of the truth. Identical weights return ``fiedler`` itself with bound
    0; a zero or negative weight on either side returns bound ``inf``.
    """
    o = np.asarray(old, dtype=np.float64).reshape(-1)
    w = np.asarray(new, dtype=np.float64).reshape(-1)
    if o.shape != w.shape:
        raise ValidationError("old and new weights must align")
    if np.array_equal(o, w):
        return float(fiedler), 0.0
    if o.size == 0 or not (np.all(o > 0) and np.all(w > 0) and np.all(np.isfinite(w))):
        return float(fiedler), math.inf
    rho = w / o
    lo, hi = float(rho.min()), float(rho.max())
    return float(fiedler) * math.sqrt(lo * hi), math.sqrt(hi / lo) - 1.0


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
    return propose_bridges_by_rows(report=report, rows=lambda idx: v[idx], params=params)


_SIMILARITY_DECIMALS = 12


def propose_bridges_by_rows(
    *, report: SpectralHealth, rows: Callable[[np.ndarray], Any], params: SpectralParams = SpectralParams(),
    block: int = 4096, max_cells: int = 1 << 22,
) -> list[Bridge]:
    """``propose_bridges`` with the vectors read a block of nodes at a time: ``rows(idx)``
    gives the vectors of the node indices ``idx``. Only the nodes of the components it
    compares are read, and the largest component's ``block`` rows at a time (fewer when a
    block's similarities would exceed ``max_cells``), so memory does not grow with the graph (the whole graph's vectors in float64 and their unit copies
    were three times its size). The same pairs: each block's first maximum, a later block
    taken only when strictly greater, is the first maximum of the whole product."""
    if report.n_components < 2 or params.max_bridges == 0:
        return []

    def unit(idx: np.ndarray) -> np.ndarray:
        v = np.asarray(rows(idx), dtype=np.float64)
        if v.ndim != 2 or v.shape[0] != idx.size:
            raise ValidationError("rows must give one vector per node index")
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)

    base = report.nodes[report.labels == 0]
    comps = list(range(1, min(report.n_components, int(params.max_bridges) + 1)))
    others = {c: report.nodes[report.labels == c] for c in comps}
    other_t = {c: unit(others[c]).T for c in comps}
    best: dict[int, tuple[float, int, int]] = {}
    widest = max(others[c].size for c in comps)
    step = max(2, min(int(block), int(max_cells) // max(1, widest)))
    starts = list(range(0, base.size, step))
    if len(starts) > 1 and base.size - starts[-1] < 2:
        starts.pop()  # no block of one row (a product with one row takes another BLAS path)
    for k, start in enumerate(starts):
        stop = starts[k + 1] if k + 1 < len(starts) else base.size
        u = unit(base[start:stop])
        for c in comps:
            # BLAS sums a product in an order that depends on the block's shape and the CPU,
            # so equal cosines (duplicate vectors) differ in their last bits from one block
            # size to another; rounded, ties stay ties and the first maximum is the same.
            sims = np.round(u @ other_t[c], _SIMILARITY_DECIMALS)
            flat = int(np.argmax(sims))  # first maximum: deterministic
            i, j = divmod(flat, sims.shape[1])
            if c not in best or sims[i, j] > best[c][0]:
                best[c] = (float(sims[i, j]), start + i, j)
    out = []
    for c in comps:
        sim, i, j = best[c]
        if sim >= params.min_bridge_similarity:
            out.append(Bridge(int(base[i]), int(others[c][j]), sim, (0, c)))
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
    "FiedlerEstimate",
    "HealthChange",
    "SpectralHealth",
    "SpectralParams",
    "adjacency",
    "cheap_to_factor",
    "compare",
    "dense_smallest",
    "fiedler_iterative",
    "fiedler_value",
    "health",
    "health_of",
    "pair_weights",
    "propose_bridges",
    "propose_bridges_by_rows",
    "rescaled_fiedler",
    "shift_invert_smallest",
    "with_bridges",
]
