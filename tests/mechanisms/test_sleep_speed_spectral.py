"""The factorisation-free lambda_2 of large graphs agrees with the exact solvers."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

from zenbrain.mechanisms import spectral as S


def _memory_like(n, seed=0):
    """A temporal chain, a 'similar' link to an earlier memory of the same topic for half
    the memories, a few random co-recall links; node order unrelated to time."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, max(2, n // 36), n)
    order = np.argsort(topic, kind="stable")
    prev = np.full(n, -1)
    same = topic[order[1:]] == topic[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    pick = (prev >= 0) & (rng.random(n) < 0.5)
    m = n // 100
    src = np.concatenate([np.arange(n - 1), np.flatnonzero(pick), rng.integers(0, n, m)])
    dst = np.concatenate([np.arange(1, n), prev[pick], rng.integers(0, n, m)])
    w = np.concatenate([np.ones(n - 1), rng.uniform(1.0, 1.3, pick.sum()), np.ones(m)])
    perm = rng.permutation(n)
    return S.adjacency(n=n, src=perm[src], dst=perm[dst], weight=w)


def _exact_sparse(a):
    lap = S.laplacian(a).tocsc()
    vals = eigsh(lap, k=2, sigma=-1e-3, which="LM", v0=np.linspace(1.0, 2.0, a.shape[0]),
                 return_eigenvectors=False)
    return float(np.sort(vals)[1])


def test_envelope_work_tells_band_like_from_well_mixed_graphs():
    n = 20000
    path = S.adjacency(n=n, src=np.arange(n - 1), dst=np.arange(1, n))
    assert S.cheap_to_factor(S.laplacian(path))
    assert not S.cheap_to_factor(S.laplacian(_memory_like(n, 0)))
    small = S.laplacian(_memory_like(3000, 0))
    assert S.cheap_to_factor(small) and not S.cheap_to_factor(small, max_work=1e6)


@pytest.mark.parametrize("n, seed", [(4000, 0), (3000, 1)])
def test_iterative_lambda2_agrees_with_shift_invert(n, seed, monkeypatch):
    monkeypatch.setattr(S, "FACTOR_MAX_WORK", 0.0)  # as at 100k nodes: no factorisation
    a = _memory_like(n, seed)
    lap = S.laplacian(a).tocsr()
    assert not S.cheap_to_factor(lap)
    est = S.fiedler_iterative(lap)
    exact = _exact_sparse(a)
    assert est.converged and est.error <= S.ITER_RTOL
    assert est.value == pytest.approx(exact, rel=1e-6)
    assert est.value >= exact * (1 - 1e-12)  # a Rayleigh quotient: never below lambda_2
    assert S.fiedler_value(a) == est.value  # the public path takes it above dense_max_nodes
    # a warm start from the final block converges at once
    again = S.fiedler_iterative(lap, start=est.block)
    assert again.value == pytest.approx(exact, rel=1e-6) and again.iterations <= est.iterations


def test_iterative_lambda2_agrees_with_the_dense_solver():
    a = _memory_like(1200, 2)
    dense = float(np.linalg.eigvalsh(S.laplacian(a).toarray())[1])
    est = S.fiedler_iterative(S.laplacian(a).tocsr())
    assert est.value == pytest.approx(dense, rel=1e-6)
    params = S.SpectralParams(dense_max_nodes=500)
    assert S.fiedler_value(a, params=params) == pytest.approx(dense, rel=1e-6)
    assert S.fiedler_value(a, params=S.SpectralParams(dense_max_nodes=2000)) == pytest.approx(dense, rel=1e-12)


def test_band_like_graphs_are_still_factorised_and_disconnected_ones_are_zero(monkeypatch):
    n = 3000
    path = S.adjacency(n=n, src=np.arange(n - 1), dst=np.arange(1, n))
    monkeypatch.setattr(S, "FACTOR_MAX_WORK", 10.0 * n)
    assert S.cheap_to_factor(S.laplacian(path))
    assert S.fiedler_value(path) == pytest.approx(2 * (1 - math.cos(math.pi / n)), rel=1e-6)
    a = _memory_like(1000, 3)
    two = sp.block_diag([a, a]).tocsr()
    assert not S.cheap_to_factor(S.laplacian(two))
    assert S.fiedler_value(two) == 0.0
    est = S.fiedler_iterative(S.laplacian(two).tocsr())
    assert est.value == 0.0 and est.converged and est.iterations == 0


def test_unconverged_estimate_is_an_upper_bound_with_its_error():
    a = _memory_like(2000, 4)
    lap = S.laplacian(a).tocsr()
    short = S.fiedler_iterative(lap, max_iter=5)
    exact = _exact_sparse(a)
    assert short.iterations == 5 and short.value >= exact * (1 - 1e-12)
    assert not short.converged or short.value == pytest.approx(exact, rel=1e-6)




def _long_band(n, seed=0, window=40):
    """A store filled over time: the temporal chain plus links between memories at most
    ``window`` apart; node order unrelated to time. Its lambda_2 is tiny and its Fiedler
    vector runs smoothly from one end of the band to the other."""
    rng = np.random.default_rng(seed)
    chain = np.arange(n - 1)
    near = rng.integers(0, n - window, n // 2)
    src = np.concatenate([chain, near])
    dst = np.concatenate([chain + 1, near + rng.integers(2, window, near.size)])
    w = np.concatenate([np.ones(n - 1), rng.uniform(0.5, 1.0, near.size)])
    perm = rng.permutation(n)
    return S.adjacency(n=n, src=perm[src], dst=perm[dst], weight=w)


def test_multigrid_takes_lambda2_of_a_long_band_to_the_report_precision(monkeypatch):
    """A sleep report needs lambda_2 to SpectralParams.report_rtol and which side of the
    fragmentation threshold it is on for certain. On a long band Jacobi-preconditioned
    LOBPCG is still far off after 300 iterations (a 200k-memory store's sleep stopped at
    3,000, 2.5 % above lambda_2); one multigrid V-cycle a step gets there in a few."""
    monkeypatch.setattr(S, "FACTOR_MAX_WORK", 0.0)
    a = _long_band(5000)
    lap = S.laplacian(a).tocsr()
    exact = _exact_sparse(a)
    est = S.fiedler_iterative(lap, rtol=1e-3)
    assert est.iterations <= 30 and est.error <= 1e-3
    assert est.value == pytest.approx(exact, rel=1e-3) and est.value >= exact * (1 - 1e-12)
    assert S.health_of(a).fiedler == pytest.approx(exact, rel=S.SpectralParams().report_rtol)
    again = S.fiedler_iterative(lap, rtol=1e-3)
    assert again.value == est.value  # same graph, same lambda_2, bit for bit
    near = est.value * (1 - est.error / 2)  # inside the estimate's error: it must go on
    settled = S.fiedler_iterative(lap, rtol=1e-3, decide=near)
    assert settled.iterations > est.iterations and settled.value * (1 - settled.error) > near
    assert not S.health_of(a, params=S.SpectralParams(fragmentation_threshold=near)).is_fragmented

    monkeypatch.setattr(S, "multigrid_preconditioner", lambda lap: sp.diags(1.0 / lap.diagonal()))
    jacobi = S.fiedler_iterative(lap, rtol=1e-3, max_iter=300)
    assert jacobi.iterations == 300 and jacobi.error > 1.0 and jacobi.value > 10 * exact


@pytest.mark.parametrize("n,seed", [(2, 0), (3, 1), (40, 2), (300, 3), (500, 4)])
def test_dense_smallest_agrees_with_the_full_dense_solve(n, seed):
    """lambda_1, lambda_2 of the MRRR index-range solve = the full eigvalsh to round-off."""
    a = _memory_like(n, seed) if n > 3 else S.adjacency(n=n, src=np.arange(n - 1), dst=np.arange(1, n))
    lap = sp.csgraph.laplacian(a).toarray()
    full = np.linalg.eigvalsh(lap)[:2]
    got = S.dense_smallest(lap.copy())
    assert got.shape == (2,)
    scale = max(1.0, float(np.abs(lap).max()))
    assert np.allclose(got, full, rtol=1e-11, atol=1e-13 * scale)
    assert S.fiedler_value(a) == pytest.approx(float(full[1]), rel=1e-11)


@pytest.mark.parametrize("n,seed", [(256, 5), (300, 6), (420, 7), (500, 8)])
def test_exact_sparse_lambda2_at_dense_sizes_agrees_with_the_dense_solve(n, seed):
    """From SPARSE_EXACT_MIN_NODES to dense_max_nodes lambda_2 comes from shift-invert ARPACK:
    the same value as the dense solve to round-off, also on a well-mixed graph."""
    assert S.SPARSE_EXACT_MIN_NODES <= n <= S.SpectralParams().dense_max_nodes
    rng = np.random.default_rng(seed)
    mixed = S.adjacency(n=n, src=np.concatenate([np.arange(n - 1), rng.integers(0, n, 3 * n)]),
                        dst=np.concatenate([np.arange(1, n), rng.integers(0, n, 3 * n)]),
                        weight=rng.uniform(0.01, 2.0, 4 * n - 1))
    for a in (_memory_like(n, seed), mixed):
        full = float(np.linalg.eigvalsh(sp.csgraph.laplacian(a).toarray())[1])
        assert S.fiedler_value(a) == pytest.approx(full, rel=1e-11)


def test_exact_sparse_lambda2_falls_back_to_the_dense_solve(monkeypatch):
    a = _memory_like(300, 9)
    full = float(np.linalg.eigvalsh(sp.csgraph.laplacian(a).toarray())[1])

    def fail(*args, **kwargs):
        raise S.ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((0, 0)))

    monkeypatch.setattr(S, "eigsh", fail)
    assert S.fiedler_value(a) == pytest.approx(full, rel=1e-11)
