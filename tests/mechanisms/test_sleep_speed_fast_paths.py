"""Fast paths of sleep's spectral and selection code agree with the general formulas."""

import hashlib

import numpy as np
import pytest
import scipy.sparse as sp

from zenbrain.errors import ValidationError
from zenbrain.mechanisms import sleep_selection as SS
from zenbrain.mechanisms import spectral as S


def _graphs(seed, count=200):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 200))
        m = int(rng.integers(0, 3 * n))
        yield S.adjacency(n=n, src=rng.integers(0, n, m), dst=rng.integers(0, n, m), weight=rng.uniform(0, 2, m))


def _pair_weights_general(a):
    u = sp.triu(sp.csr_matrix(a, dtype=np.float64), k=1).tocsr()
    u.sum_duplicates()
    u.sort_indices()
    h = hashlib.sha1()
    h.update(np.asarray(u.shape, dtype=np.int64).tobytes())
    h.update(u.indptr.astype(np.int64).tobytes())
    h.update(u.indices.astype(np.int64).tobytes())
    return h.hexdigest(), np.array(u.data, dtype=np.float64)


def test_upper_triangle_from_canonical_csr_matches_triu():
    for a in _graphs(0):
        assert S._canonical(a)
        digest, w = S.pair_weights(a)
        ref_digest, ref_w = _pair_weights_general(a)
        assert digest == ref_digest and np.array_equal(w, ref_w)
        assert S._upper_count(a) == sp.triu(a, k=1).nnz
    # a non-canonical matrix (duplicates, unsorted) takes the general path
    coo = sp.coo_matrix((np.ones(4), ([0, 0, 1, 0], [2, 1, 0, 2])), shape=(3, 3))
    dup = sp.csr_matrix((coo.data, coo.col, np.array([0, 3, 4, 4])), shape=(3, 3))
    assert not S._canonical(dup)
    assert S.pair_weights(dup)[0] == _pair_weights_general(dup)[0]
    assert S._upper_count(dup) == sp.triu(dup, k=1).nnz


def test_health_without_isolated_nodes_is_the_same_as_on_the_submatrix():
    for a in _graphs(1, 60):
        h = S.health_of(a)
        nodes = np.flatnonzero(a.getnnz(axis=1) > 0)
        sub = sp.csr_matrix(a[nodes][:, nodes])
        ref = S.health_of(sub, include_isolated=True)
        assert h.fiedler == ref.fiedler and h.n_edges == ref.n_edges
        assert h.component_sizes == ref.component_sizes and np.array_equal(h.labels, ref.labels)


def _plan(seed):
    rng = np.random.default_rng(seed)
    n, m = 60, 150
    ids = [f"m{k}" for k in range(n)]
    keys = list({(ids[i], ids[j], "r") for i, j in rng.integers(0, n, (m, 2)) if i != j})
    return SS.plan_sleep(
        memory_ids=ids, strengths=rng.uniform(0, 1, n), td_errors=rng.uniform(0, 1, n),
        rewards=rng.uniform(0, 1, n), related_counts=rng.integers(0, 5, n).astype(float),
        rng=np.random.default_rng(seed), emotion=rng.uniform(0, 1, n), embeddings=rng.normal(size=(n, 8)),
        edges=keys, edge_weights=rng.uniform(0.01, 1, len(keys)), edge_variances=rng.uniform(0.1, 2, len(keys)),
    ), ids, keys


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plan_maps_hold_python_floats_in_order(seed):
    plan, ids, keys = _plan(seed)
    assert list(plan.tags) == ids and all(type(v) is float for v in plan.tags.values())
    assert all(type(v) is float for v in plan.strengths.values())
    assert all(type(v) is float for v in plan.edge_weights.values())
    order = {k: j for j, k in enumerate(keys)}
    assert [order[k] for k in plan.edge_weights] == sorted(order[k] for k in plan.edge_weights)
    assert set(plan.ltp_ids) | set(plan.ltd_ids) | set(plan.skipped_ids) == set(ids)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_end_counts_and_given_edge_ends_match_the_general_path(seed):
    """Degrees by bincount = one count per edge end (self-loops twice); a plan given the
    edge end positions = the plan that computes them."""
    from collections import Counter

    rng = np.random.default_rng(seed)
    ids = [f"m{k}" for k in range(40)]
    others = [f"x{k}" for k in range(10)]
    pool = ids + others
    keys = list(dict.fromkeys((pool[i], pool[j], "r") for i, j in rng.integers(0, len(pool), (120, 2))))
    index = {m: k for k, m in enumerate(ids)}
    src, dst = SS.edge_end_positions(index, keys)
    ends = Counter(k[0] for k in keys)
    ends.update(k[1] for k in keys)
    assert np.array_equal(SS.end_counts(src, dst, len(ids)), np.array([float(ends.get(m, 0)) for m in ids]))

    def plan(**extra):
        r = np.random.default_rng(seed)
        return SS.plan_sleep(
            memory_ids=ids, strengths=r.uniform(0, 1, 40), td_errors=r.uniform(0, 1, 40),
            rewards=r.uniform(0, 1, 40), related_counts=SS.end_counts(src, dst, 40),
            rng=np.random.default_rng(seed), emotion=r.uniform(0, 1, 40), embeddings=r.normal(size=(40, 8)),
            edges=keys, edge_weights=r.uniform(0.01, 1, len(keys)), edge_variances=r.uniform(0.1, 2, len(keys)),
            **extra,
        )

    a, b = plan(), plan(edge_ends=(src, dst))
    assert a.tags == b.tags and a.strengths == b.strengths and a.edge_weights == b.edge_weights
    assert a.new_edges == b.new_edges and list(a.pruned_edges) == list(b.pruned_edges)
    assert a.summary() == b.summary()
    with pytest.raises(ValidationError):
        plan(edge_ends=(src[:-1], dst))
