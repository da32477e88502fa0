"""Spectral KG health: Fiedler values against closed forms, components, bridging."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import spectral as S

PROPS = settings(derandomize=True, max_examples=40, deadline=None)


def _path(n):
    return np.arange(n - 1), np.arange(1, n)


def _cycle(n):
    return np.arange(n), (np.arange(n) + 1) % n


def test_params_validation():
    S.SpectralParams()
    for bad in ({"fragmentation_threshold": -1.0}, {"dense_max_nodes": 1}, {"max_bridges": 0.5}, {"shift": 0.0}):
        with pytest.raises(ConfigError):
            S.SpectralParams(**bad)


@pytest.mark.parametrize("n", [2, 3, 7, 40, 600, 2000])  # 600 and 2000 use the sparse solver
def test_path_and_cycle_closed_forms(n):
    h = S.health(n=n, src=_path(n)[0], dst=_path(n)[1])
    assert h.fiedler == pytest.approx(2 * (1 - math.cos(math.pi / n)), rel=1e-6, abs=1e-12)
    assert h.n_components == 1 and h.n_edges == n - 1
    if n >= 3:
        h = S.health(n=n, src=_cycle(n)[0], dst=_cycle(n)[1])
        assert h.fiedler == pytest.approx(2 - 2 * math.cos(2 * math.pi / n), rel=1e-6, abs=1e-12)


def test_complete_star_and_weight_scaling():
    n = 6
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    src, dst = np.array(pairs).T
    assert S.health(n=n, src=src, dst=dst).fiedler == pytest.approx(n)  # K_n
    assert S.health(n=n, src=np.zeros(n - 1, int), dst=np.arange(1, n)).fiedler == pytest.approx(1.0)  # star
    # lambda_2 is homogeneous in the weights; a reversed duplicate adds to the same pair.
    p, q = _path(5)
    base = S.health(n=5, src=p, dst=q).fiedler
    assert S.health(n=5, src=p, dst=q, weight=np.full(4, 3.0)).fiedler == pytest.approx(3 * base)
    assert S.health(n=5, src=np.r_[p, q], dst=np.r_[q, p]).fiedler == pytest.approx(2 * base)


def test_weight_floor_keeps_weak_edges_connected():
    p, q = _path(4)
    h = S.health(n=4, src=p, dst=q, weight=[1.0, 0.0, 1.0])
    assert h.n_components == 1 and h.fiedler > 0
    assert S.adjacency(n=4, src=p, dst=q, weight=[1.0, 0.0, 1.0])[1, 2] == pytest.approx(0.01)


def test_disconnected_graph_report():
    src, dst = np.array([0, 1, 3, 5, 6]), np.array([1, 2, 4, 6, 7])
    h = S.health(n=9, src=src, dst=dst)  # node 8 is isolated
    assert h.fiedler == 0.0 and h.is_fragmented
    assert h.n_nodes == 8 and h.n_components == 3 and h.component_sizes == [3, 3, 2]
    assert h.labels.tolist() == [0, 0, 0, 2, 2, 1, 1, 1] and h.nodes.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    with_iso = S.health(n=9, src=src, dst=dst, include_isolated=True)
    assert with_iso.n_nodes == 9 and with_iso.n_components == 4


def test_fragmentation_threshold_on_connected_graphs():
    p, q = _path(50)  # lambda_2 ~ 0.0039 < 0.01: a long chain is weakly held together
    assert S.health(n=50, src=p, dst=q).is_fragmented
    assert not S.health(n=50, src=p, dst=q, params=S.SpectralParams(fragmentation_threshold=0.001)).is_fragmented


def test_degenerate_inputs():
    assert S.health(n=0, src=[], dst=[]).n_nodes == 0
    h = S.health(n=1, src=[], dst=[], include_isolated=True)
    assert h.fiedler == 0.0 and not h.is_fragmented
    with pytest.raises(ValidationError):
        S.health(n=2, src=[0], dst=[2])
    with pytest.raises(ValidationError):
        S.health(n=2, src=[0], dst=[1], weight=[float("nan")])


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 11))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=25))
    weights = draw(st.lists(st.floats(0.0, 5.0), min_size=len(pairs), max_size=len(pairs)))
    return n, pairs, weights


@PROPS
@given(g=graphs())
def test_fiedler_is_nonnegative_and_zero_iff_disconnected(g):
    n, pairs, weights = g
    src = np.array([p[0] for p in pairs], dtype=int)
    dst = np.array([p[1] for p in pairs], dtype=int)
    a = S.adjacency(n=n, src=src, dst=dst, weight=weights)
    lam = S.fiedler_value(a)
    # Independent reference: networkx graph with the same floored, summed weights.
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    for (i, j), w in zip(pairs, weights):
        if i != j:
            old = graph.get_edge_data(i, j, {"weight": 0.0})["weight"]
            graph.add_edge(i, j, weight=old + max(w, 0.01))
    ref = np.sort(nx.laplacian_spectrum(graph, weight="weight"))[1]
    assert lam >= 0.0
    assert lam == pytest.approx(max(ref, 0.0), abs=1e-9)
    assert (lam > 1e-9) == nx.is_connected(graph)
    h = S.health(n=n, src=src, dst=dst, weight=weights, include_isolated=True)
    assert h.n_components == nx.number_connected_components(graph)
    assert sorted(h.component_sizes, reverse=True) == h.component_sizes and sum(h.component_sizes) == n


@PROPS
@given(g=graphs(), seed=st.integers(0, 1000), spread=st.floats(0.0, 0.5))
def test_rescaled_fiedler_brackets_the_true_value(g, seed, spread):
    n, pairs, weights = g
    src = np.array([p[0] for p in pairs], dtype=int)
    dst = np.array([p[1] for p in pairs], dtype=int)
    a = S.adjacency(n=n, src=src, dst=dst, weight=weights)
    rng = np.random.default_rng(seed)
    moved = np.asarray(weights) * rng.uniform(1.0 - spread, 1.0 + spread, len(weights))
    b = S.adjacency(n=n, src=src, dst=dst, weight=moved)
    key_a, w_a = S.pair_weights(a)
    key_b, w_b = S.pair_weights(b)
    assert key_a == key_b and w_a.shape == w_b.shape  # the same pairs, aligned
    if w_a.size == 0:
        return
    lam_a, lam_b = S.fiedler_value(a), S.fiedler_value(b)
    est, bound = S.rescaled_fiedler(lam_a, w_a, w_b)
    rho = w_b / w_a
    assert rho.min() * lam_a - 1e-9 <= lam_b <= rho.max() * lam_a + 1e-9  # Courant-Fischer
    assert abs(est - lam_b) <= bound * lam_b + 1e-9
    assert S.rescaled_fiedler(lam_a, w_a, w_a) == (lam_a, 0.0)


def test_pair_weights_name_the_pairs_not_the_edge_order():
    src, dst, w = np.array([0, 1, 2, 1]), np.array([1, 2, 3, 0]), np.array([1.0, 2.0, 3.0, 0.5])
    key, weights = S.pair_weights(S.adjacency(n=4, src=src, dst=dst, weight=w))
    assert weights.tolist() == [1.5, 2.0, 3.0]  # both directions of 0-1 add up
    key2, weights2 = S.pair_weights(S.adjacency(n=4, src=dst[::-1], dst=src[::-1], weight=w[::-1]))
    assert key2 == key and weights2.tolist() == weights.tolist()
    key3, _ = S.pair_weights(S.adjacency(n=4, src=np.array([0, 1, 2]), dst=np.array([1, 2, 0]), weight=w[:3]))
    assert key3 != key
    assert S.rescaled_fiedler(1.0, [1.0, 0.0], [1.0, 1.0])[1] == math.inf
    with pytest.raises(ValidationError):
        S.rescaled_fiedler(1.0, [1.0], [1.0, 2.0])


def test_health_of_asks_the_given_solver_only_for_a_connected_graph():
    calls = []

    def solver(a):
        calls.append(a.shape[0])
        return 42.0

    path = S.adjacency(n=5, src=_path(5)[0], dst=_path(5)[1])
    assert S.health_of(path, fiedler=solver).fiedler == 42.0 and calls == [5]
    split = S.adjacency(n=5, src=np.array([0, 2]), dst=np.array([1, 3]))
    h = S.health_of(split, fiedler=solver)
    assert h.fiedler == 0.0 and h.n_components == 2 and calls == [5]
    assert S.health_of(path).fiedler == pytest.approx(S.health(n=5, src=_path(5)[0], dst=_path(5)[1]).fiedler)


def test_bridges_join_the_two_largest_components_at_their_most_similar_pair():
    rng = np.random.default_rng(4)
    src, dst = np.array([0, 1, 2, 4, 5, 7]), np.array([1, 2, 3, 5, 6, 8])  # sizes 4, 3, 2
    vectors = rng.normal(size=(9, 8))
    before = S.health(n=9, src=src, dst=dst)
    p = S.SpectralParams(min_bridge_similarity=-1.0)
    bridges = S.propose_bridges(report=before, vectors=vectors, params=p)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    best = max(((i, j) for i in range(4) for j in (4, 5, 6)), key=lambda ij: unit[ij[0]] @ unit[ij[1]])
    assert [(b.src, b.dst) for b in bridges] == [best]
    assert bridges[0].similarity == pytest.approx(unit[best[0]] @ unit[best[1]])
    assert bridges[0].components == (0, 1) and bridges[0].relation == "similar_to"

    s2, d2, w2 = S.with_bridges(src=src, dst=dst, bridges=bridges)
    after = S.health(n=9, src=s2, dst=d2, weight=w2)
    change = S.compare(before, after)
    assert change.components_before == 3 and change.components_after == 2 and change.improved
    assert change.detail["after"]["component_sizes"] == [7, 2]

    every = S.propose_bridges(report=before, vectors=vectors, params=p.replace(max_bridges=5))
    assert [b.components for b in every] == [(0, 1), (0, 2)]
    s3, d3, w3 = S.with_bridges(src=src, dst=dst, bridges=every)
    joined = S.health(n=9, src=s3, dst=d3, weight=w3)
    assert joined.n_components == 1 and joined.fiedler > 0 and S.compare(before, joined).delta > 0


def test_no_bridge_between_unrelated_components():
    src, dst = np.array([0, 2]), np.array([1, 3])
    vectors = np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [-0.1, 1.0]])
    report = S.health(n=4, src=src, dst=dst)
    assert S.propose_bridges(report=report, vectors=vectors) == []  # best cosine ~0.1 < 0.3
    assert S.propose_bridges(report=S.health(n=2, src=[0], dst=[1]), vectors=np.eye(2)) == []


def test_compare_flags_a_drop():
    p, q = _cycle(6)
    strong = S.health(n=6, src=p, dst=q)
    weak = S.health(n=6, src=p[:-1], dst=q[:-1])
    assert not S.compare(strong, weak).improved and S.compare(strong, weak).delta < 0


@pytest.mark.parametrize("seed", range(6))
def test_bridges_read_by_blocks_of_rows_are_the_bridges_of_all_vectors_at_once(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 400))
    labels = np.sort(rng.integers(0, int(rng.integers(2, 6)), size=n))  # a few components, chains inside
    same = labels[1:] == labels[:-1]
    src, dst = np.flatnonzero(same), np.flatnonzero(same) + 1
    vectors = rng.normal(size=(n, 24)).astype(np.float32)
    vectors[rng.integers(0, n, size=3)] = 0.0  # a node without a vector
    vectors[rng.integers(0, n, size=5)] = vectors[0]  # ties: the first maximum wins
    report = S.health(n=n, src=src, dst=dst)
    for max_bridges in (1, 3):
        p = S.SpectralParams(min_bridge_similarity=-1.0, max_bridges=max_bridges)
        whole = S.propose_bridges(report=report, vectors=vectors.astype(np.float64), params=p)
        for block in (1, 2, 3, 7, 64, 10_000):
            read: list[int] = []

            def rows(idx, read=read):
                read.extend(int(i) for i in idx)
                return vectors[idx]

            assert S.propose_bridges_by_rows(report=report, rows=rows, params=p, block=block) == whole
            assert S.propose_bridges_by_rows(report=report, rows=rows, params=p, block=block, max_cells=50) == whole
            assert set(read) <= set(report.nodes[report.labels <= max_bridges].tolist())
