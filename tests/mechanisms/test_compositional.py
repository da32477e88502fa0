"""Compositional context: a learned shared subspace, policy-gated cross-context recall."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import orth, subspace_angles

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.mechanisms import compositional as C

PROPS = settings(derandomize=True, max_examples=40, deadline=None)
CONTEXTS = ("work", "personal", "health")


def _planted(seed=0, dim=48, shared_dim=4, specific_dim=4, per_context=150, noise=0.05):
    """Vectors = shared part (one subspace for all contexts) + a context's own part + noise.

    Each context's own subspace is orthogonal to the shared one, so the split is unambiguous.
    """
    rng = np.random.default_rng(seed)
    shared = orth(rng.normal(size=(dim, shared_dim)))
    off_shared = np.eye(dim) - shared @ shared.T
    own = {c: orth(off_shared @ rng.normal(size=(dim, specific_dim))) for c in CONTEXTS}
    rows, labels = [], []
    for c in CONTEXTS:
        rows.append(rng.normal(size=(per_context, shared_dim)) @ shared.T
                    + rng.normal(size=(per_context, specific_dim)) @ own[c].T
                    + noise * rng.normal(size=(per_context, dim)))
        labels += [c] * per_context
    return np.vstack(rows), labels, shared, own


@pytest.fixture(scope="module")
def planted():
    return _planted()


@pytest.fixture(scope="module")
def fitted(planted):
    x, labels, *_ = planted
    return C.fit(vectors=x, contexts=labels, params=C.CompositionalParams(per_context_dim=8, specific_dim=4))


def test_params_validation():
    C.CompositionalParams()
    for bad in ({"agreement": 0.5}, {"per_context_dim": 0}, {"top_k": 1.5}, {"min_similarity": 2.0}):
        with pytest.raises(ConfigError):
            C.CompositionalParams(**bad)


def test_fit_recovers_the_planted_shared_subspace(planted, fitted):
    _x, _labels, shared, own = planted
    state = fitted
    assert state.shared_dim == 4
    assert np.degrees(subspace_angles(state.shared, shared)).max() < 3.0
    assert np.all(state.agreement > 0.99)
    np.testing.assert_allclose(state.shared.T @ state.shared, np.eye(4), atol=1e-10)
    for c in CONTEXTS:
        s_c = state.specific[c]
        assert np.abs(s_c.T @ state.shared).max() < 1e-10
        assert np.degrees(subspace_angles(s_c, own[c])).max() < 5.0
    assert state.context_sizes == {c: 150 for c in CONTEXTS}


def test_nothing_is_shared_with_fewer_than_two_contexts(planted):
    x, labels, *_ = planted
    one = C.fit(vectors=x[:150], contexts=labels[:150])
    assert one.shared_dim == 0 and "work" in one.specific
    small = C.fit(vectors=x[:152], contexts=labels[:152])  # 'personal' has 2 < min_context_size vectors
    assert small.shared_dim == 0 and "personal" not in small.specific
    assert C.cross_context_recall(query_vec=x[0], query_context="work", vectors=x, contexts=labels,
                                  state=one, policy="*") == []


def test_encode_splits_into_orthogonal_shared_and_specific_parts(planted, fitted):
    x, _labels, _shared, _own = planted
    state = fitted
    v = x[3]
    sh, sp = C.encode(v, "work", state=state)
    np.testing.assert_allclose(sh, state.shared @ (state.shared.T @ v))
    assert abs(sh @ sp) < 1e-10 and sh @ sh + sp @ sp <= v @ v + 1e-10
    # A planted vector is almost fully explained by its shared and own parts.
    assert np.linalg.norm(v - sh - sp) < 0.1 * np.linalg.norm(v)
    # An unknown context keeps the whole residual; shared + specific is then exactly v.
    sh2, sp2 = C.encode(v, "travel", state=state)
    np.testing.assert_allclose(sh2 + sp2, v, atol=1e-12)
    rows_sh, rows_sp = C.encode(x[:5], "work", state=state)
    assert rows_sh.shape == rows_sp.shape == (5, 48)
    with pytest.raises(ValidationError):
        C.encode(np.ones(3), "work", state=state)


def test_cross_context_similarity_sees_only_the_shared_part(planted, fitted):
    _x, _labels, shared, own = planted
    state = fitted
    rng = np.random.default_rng(1)
    core = shared @ rng.normal(size=4)
    q = core + own["work"] @ rng.normal(size=4)
    d_same_core = core + 3.0 * own["personal"] @ rng.normal(size=4)
    d_other_core = shared @ rng.normal(size=4) + own["work"] @ rng.normal(size=4)
    assert C.cross_context_similarity(q, d_same_core, state=state) == pytest.approx(1.0, abs=1e-3)
    raw = float(q @ d_same_core / np.linalg.norm(q) / np.linalg.norm(d_same_core))
    assert raw < 0.6  # plain cosine is diluted by the context-specific parts
    both = C.cross_context_similarity(q, np.vstack([d_same_core, d_other_core]), state=state)
    assert both.shape == (2,) and both[0] > both[1]
    assert C.cross_context_similarity(q, own["work"] @ np.ones(4) * 0, state=state) == 0.0


@pytest.mark.parametrize(
    "src,dst,policy,expected",
    [
        ("work", "work", None, True),
        ("work", "personal", None, False),
        ("work", "personal", set(), False),
        ("work", "personal", "*", True),
        ("work", "personal", {("work", "personal")}, True),
        ("personal", "work", {("work", "personal")}, False),  # directed
        ("work", "health", {("work", "*")}, True),
        ("health", "personal", {("*", "personal")}, True),
        ("health", "work", {("*", "personal")}, False),
    ],
)
def test_allowed_policy(src, dst, policy, expected):
    assert C.allowed(src, dst, policy) is expected


def test_allowed_rejects_malformed_policies():
    with pytest.raises(ConfigError):
        C.allowed("a", "b", "all")
    with pytest.raises(ConfigError):
        C.allowed("a", "b", [("a",)])


def test_cross_context_recall_respects_policy_threshold_and_k(planted, fitted):
    x, labels, _shared, _own = planted
    state = fitted
    q = x[0]  # a 'work' memory
    p = C.CompositionalParams(top_k=5, min_similarity=0.3)
    hits = C.cross_context_recall(query_vec=q, query_context="work", vectors=x, contexts=labels, state=state,
                                  policy={("work", "personal")}, params=p)
    assert 0 < len(hits) <= 5
    assert all(labels[i] == "personal" for i, _ in hits)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0.3
    expected = C.cross_context_similarity(q, x[[i for i, _ in hits]], state=state)
    np.testing.assert_allclose(scores, expected)
    # The best 'personal' memory by shared similarity is the first hit.
    personal = [i for i, c in enumerate(labels) if c == "personal"]
    sims = C.cross_context_similarity(q, x[personal], state=state)
    assert hits[0][0] == personal[int(np.argmax(sims))]
    assert C.cross_context_recall(query_vec=q, query_context="work", vectors=x, contexts=labels, state=state,
                                  policy=None, params=p) == []
    everyone = C.cross_context_recall(query_vec=q, query_context="work", vectors=x, contexts=labels, state=state,
                                      policy="*", params=p.replace(top_k=1000, min_similarity=-1.0))
    assert {labels[i] for i, _ in everyone} == {"personal", "health"} and len(everyone) == 300


def test_state_round_trips_through_json_exactly(fitted):
    state = fitted
    again = C.CompositionalState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.dim == state.dim and again.context_sizes == state.context_sizes
    np.testing.assert_array_equal(again.shared, state.shared)
    np.testing.assert_array_equal(again.agreement, state.agreement)
    for c in CONTEXTS:
        np.testing.assert_array_equal(again.specific[c], state.specific[c])
    with pytest.raises(ValidationError):
        C.CompositionalState.from_json({"version": 2})
    with pytest.raises(ValidationError):
        C.CompositionalState.from_json({"version": 1, "dim": 3, "shared": [[1, 2]], "agreement": []})


def test_fit_is_deterministic():
    x, labels, *_ = _planted(seed=2, per_context=40)
    a = C.fit(vectors=x, contexts=labels)
    b = C.fit(vectors=x, contexts=labels)
    assert json.dumps(a.to_json()) == json.dumps(b.to_json())


@PROPS
@given(
    seed=st.integers(0, 10_000),
    n_ctx=st.integers(1, 4),
    per=st.integers(1, 12),
    dim=st.integers(2, 10),
    k=st.integers(1, 6),
    agreement=st.floats(0.55, 1.0),
)
def test_bases_are_orthonormal_and_encoding_is_a_contraction(seed, n_ctx, per, dim, k, agreement):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_ctx * per, dim))
    labels = [f"c{i % n_ctx}" for i in range(n_ctx * per)]
    p = C.CompositionalParams(per_context_dim=k, specific_dim=k, agreement=agreement, min_context_size=1)
    state = C.fit(vectors=x, contexts=labels, params=p)
    b = state.shared
    np.testing.assert_allclose(b.T @ b, np.eye(b.shape[1]), atol=1e-9)
    assert np.all(state.agreement >= agreement) and np.all(state.agreement <= 1 + 1e-9)
    for c, s_c in state.specific.items():
        np.testing.assert_allclose(s_c.T @ s_c, np.eye(s_c.shape[1]), atol=1e-9)
        assert np.abs(b.T @ s_c).max(initial=0.0) < 1e-9
    v = rng.normal(size=dim)
    for c in list(state.specific) + ["unseen"]:
        sh, sp = C.encode(v, c, state=state)
        assert abs(sh @ sp) < 1e-9 and sh @ sh + sp @ sp <= v @ v + 1e-9
    sim = C.cross_context_similarity(v, rng.normal(size=dim), state=state)
    assert -1 - 1e-12 <= sim <= 1 + 1e-12
