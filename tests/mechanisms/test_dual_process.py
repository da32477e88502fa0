"""Dual-process consolidation: clustering is a cohesive partition, schemas are grounded."""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ProviderError, ValidationError
from zenbrain.mechanisms import dual_process as D
from zenbrain.pipeline.llm import run_dialogue
from zenbrain.providers.base import ChatModel
from zenbrain.providers.hashing import HashingEmbedder

PROPS = settings(derandomize=True, max_examples=40, deadline=None)


class ScriptedChat:
    """A ChatModel whose replies come from a function of the messages."""

    name = "scripted"

    def __init__(self, reply):
        self.reply = reply
        self.calls = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0):
        self.calls.append({"messages": list(messages), "max_tokens": max_tokens, "temperature": temperature})
        out = self.reply(messages)
        if isinstance(out, Exception):
            raise out
        return out


def test_scripted_chat_satisfies_the_protocol():
    assert isinstance(ScriptedChat(lambda m: ""), ChatModel)


def test_params_validation():
    D.DualProcessParams()
    for bad in ({"similarity_threshold": 1.5}, {"min_cluster_size": 1}, {"min_cluster_size": 5, "max_cluster_size": 4},
                {"max_terms": 2.5}, {"promote_success_rate": -0.1}):
        with pytest.raises(ConfigError):
            D.DualProcessParams(**bad)


def _blobs(rng, sizes, dim=16, noise=0.05):
    centres = np.eye(dim)[: len(sizes)]
    rows, truth = [], []
    for k, size in enumerate(sizes):
        rows.append(centres[k] + noise * rng.normal(size=(size, dim)))
        truth.extend([k] * size)
    return np.vstack(rows), np.array(truth)


def test_system1_recovers_planted_clusters_and_leaves_outliers():
    rng = np.random.default_rng(0)
    x, truth = _blobs(rng, [5, 4, 3])
    outliers = np.eye(16)[10:12] + 0.05 * rng.normal(size=(2, 16))
    x = np.vstack([x, outliers])
    ids = [f"e{i}" for i in range(len(x))]
    got = D.cluster_episodes(ids=ids, vectors=x, params=D.DualProcessParams(similarity_threshold=0.7))
    expected = [[f"e{i}" for i in np.flatnonzero(truth == k)] for k in range(3)]
    assert got.clusters == expected  # largest first
    assert got.unclustered == ["e12", "e13"]
    # Same partition whatever the input order.
    perm = rng.permutation(len(ids))
    again = D.cluster_episodes(ids=[ids[i] for i in perm], vectors=x[perm],
                               params=D.DualProcessParams(similarity_threshold=0.7))
    assert sorted(map(sorted, again.clusters)) == sorted(map(sorted, got.clusters))


def test_oversized_clusters_are_split_even_with_identical_vectors():
    x = np.ones((30, 4))
    p = D.DualProcessParams(min_cluster_size=2, max_cluster_size=8)
    got = D.cluster_episodes(ids=[str(i) for i in range(30)], vectors=x, params=p)
    assert all(2 <= len(c) <= 8 for c in got.clusters) and got.clusters
    assert sorted(list(itertools.chain.from_iterable(got.clusters)) + got.unclustered, key=int) == [str(i) for i in range(30)]


def test_cluster_input_validation():
    assert D.cluster_episodes(ids=[], vectors=np.zeros((0, 3))).clusters == []
    with pytest.raises(ValidationError):
        D.cluster_episodes(ids=["a", "a"], vectors=np.ones((2, 3)))
    with pytest.raises(ValidationError):
        D.cluster_episodes(ids=["a", "b"], vectors=np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValidationError):
        D.cluster_episodes(ids=["a", "b"], vectors=np.ones((3, 2)))


@PROPS
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 30),
    threshold=st.floats(0.0, 0.99),
    min_size=st.integers(2, 4),
    extra=st.integers(0, 10),
)
def test_clustering_is_a_cohesive_bounded_partition(seed, n, threshold, min_size, extra):
    rng = np.random.default_rng(seed)
    # A few directions plus noise, so that both tight and loose groups occur.
    x = np.eye(5)[rng.integers(0, 5, n)] + rng.uniform(0.0, 0.8) * rng.normal(size=(n, 5))
    x[np.linalg.norm(x, axis=1) == 0] = 1.0
    ids = [f"m{i}" for i in range(n)]
    p = D.DualProcessParams(similarity_threshold=threshold, min_cluster_size=min_size, max_cluster_size=min_size + extra)
    got = D.cluster_episodes(ids=ids, vectors=x, params=p)
    members = [m for c in got.clusters for m in c] + got.unclustered
    assert sorted(members) == sorted(ids) and len(members) == len(set(members))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    pos = {m: i for i, m in enumerate(ids)}
    for c in got.clusters:
        assert p.min_cluster_size <= len(c) <= p.max_cluster_size
        rows = unit[[pos[m] for m in c]]
        sims = [float(rows[i] @ rows[j]) for i, j in itertools.combinations(range(len(c)), 2)]
        assert np.mean(sims) >= threshold - 1e-9  # the average-linkage guarantee


@PROPS
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 40),
    threshold=st.floats(0.3, 0.99),
    min_size=st.integers(2, 5),
    extra=st.integers(0, 6),
)
def test_precheck_never_changes_the_clustering(seed, n, threshold, min_size, extra):
    rng = np.random.default_rng(seed)
    x = np.eye(6)[rng.integers(0, 6, n)] + rng.uniform(0.0, 1.2) * rng.normal(size=(n, 6))
    x[np.linalg.norm(x, axis=1) == 0] = 1.0
    ids = [f"m{i}" for i in range(n)]
    p = D.DualProcessParams(similarity_threshold=threshold, min_cluster_size=min_size, max_cluster_size=min_size + extra)
    got = D.cluster_episodes(ids=ids, vectors=x, params=p)
    with mock.patch.object(D, "may_cluster", lambda *a, **k: True):  # always build the dendrogram
        full = D.cluster_episodes(ids=ids, vectors=x, params=p)
    assert got == full
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    if not D.may_cluster(unit, p):
        assert got.clusters == [] and got.unclustered == ids


def test_precheck_at_the_threshold_and_just_above():
    # three unit vectors at pairwise cosine 1/2
    x = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]) / np.sqrt(2.0)
    ids = ["a", "b", "c"]
    at = D.DualProcessParams(similarity_threshold=0.5, min_cluster_size=3)
    assert D.may_cluster(x, at)
    assert D.cluster_episodes(ids=ids, vectors=x, params=at).clusters == [ids]
    above = D.DualProcessParams(similarity_threshold=0.5 + 1e-6, min_cluster_size=3)
    assert not D.may_cluster(x, above)
    assert D.cluster_episodes(ids=ids, vectors=x, params=above).clusters == []
    # a chain a-b, b-c links all three even though a and c are far apart
    chain = np.array([[1.0, 0.0], [np.cos(0.5), np.sin(0.5)], [np.cos(1.0), np.sin(1.0)]])
    p = D.DualProcessParams(similarity_threshold=float(np.cos(0.6)), min_cluster_size=3)
    assert D.may_cluster(chain, p)
    assert not D.may_cluster(chain, D.DualProcessParams(similarity_threshold=float(np.cos(0.4)), min_cluster_size=3))
    # two linked pairs are no group of three
    pairs = np.array([[1.0, 0.0, 0.0], [0.99, 0.1, 0.0], [0.0, 0.0, 1.0], [0.0, 0.1, 0.99]])
    assert not D.may_cluster(pairs / np.linalg.norm(pairs, axis=1, keepdims=True), D.DualProcessParams())
    assert D.may_cluster(pairs / np.linalg.norm(pairs, axis=1, keepdims=True), D.DualProcessParams(min_cluster_size=2))


def test_precheck_in_blocks_sees_pairs_across_blocks(monkeypatch):
    monkeypatch.setattr(D, "_PRECHECK_BLOCK", 2)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 16))
    x[6] = x[0] + 0.01  # three near-copies, far apart in row order
    x[3] = x[0] - 0.01
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert D.may_cluster(unit, D.DualProcessParams(min_cluster_size=3))
    assert not D.may_cluster(unit, D.DualProcessParams(min_cluster_size=4))


EPISODES = [
    "User ordered a flat white at the cafe in the morning",
    "User ordered a flat white coffee at the cafe this morning",
    "In the morning the user ordered flat white at the cafe",
    "Deploy failed because the database migration timed out",
    "The deploy failed: database migration timed out again",
    "Database migration timed out and the deploy failed",
    "Went hiking in the alps",
]


def _embedded():
    vecs = HashingEmbedder(256).embed(EPISODES)
    return [f"ep{i}" for i in range(len(EPISODES))], vecs


def _with_chat(chat, ids, texts, vecs, params=None):
    """System 2 through ``chat``, as the pipeline drives it."""
    params = params or D.DualProcessParams()
    return run_dialogue(chat, D.abstract_schema_dialogue(ids=ids, texts=texts, vectors=vecs, params=params),
                        max_tokens=int(params.llm_max_tokens), temperature=float(params.llm_temperature))


def test_extractive_schema_uses_the_episode_nearest_the_centroid_and_shared_terms():
    ids, vecs = _embedded()
    rows = [3, 4, 5]
    s = D.abstract_schema(ids=[ids[i] for i in rows], texts=[EPISODES[i] for i in rows], vectors=vecs[rows])
    v = vecs[rows].astype(np.float64)
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    centroid = unit.mean(axis=0) / np.linalg.norm(unit.mean(axis=0))
    nearest = rows[int(np.argmax(unit @ centroid))]
    assert s.method == "extractive" and s.support == 3 and s.evidence_ids == ("ep3", "ep4", "ep5")
    assert s.representative_id == ids[nearest]
    assert EPISODES[nearest].rstrip(".") in s.text
    assert set(s.terms) == {"deploy", "failed", "database", "migration", "timed"}
    np.testing.assert_allclose(s.centroid, centroid, atol=1e-12)
    assert s.cohesion == pytest.approx(float((unit @ centroid).mean()))


def test_consolidate_produces_one_schema_per_cluster():
    ids, vecs = _embedded()
    params = D.DualProcessParams(similarity_threshold=0.6)
    clusters = D.cluster_episodes(ids=ids, vectors=vecs, params=params).clusters
    pos = {m: i for i, m in enumerate(ids)}
    schemas = [D.abstract_schema(ids=list(c), texts=[EPISODES[pos[m]] for m in c], vectors=vecs[[pos[m] for m in c]],
                                 params=params) for c in clusters]
    assert [s.evidence_ids for s in schemas] == [("ep0", "ep1", "ep2"), ("ep3", "ep4", "ep5")]
    assert "flat" in schemas[0].terms and all(s.method == "extractive" for s in schemas)


def test_llm_schema_is_parsed_and_the_prompt_quotes_the_episodes():
    ids, vecs = _embedded()
    chat = ScriptedChat(lambda m: "Thinking...\nSCHEMA: The user orders a flat white at the cafe every morning\n")
    s = _with_chat(chat, ids[:3], EPISODES[:3], vecs[:3], D.DualProcessParams(llm_max_tokens=77))
    assert s.method == "llm" and s.note == ""
    assert s.text == "The user orders a flat white at the cafe every morning."
    call = chat.calls[0]
    assert call["max_tokens"] == 77 and call["temperature"] == 0.0
    prompt = call["messages"][-1]["content"]
    assert all(e in prompt for e in EPISODES[:3]) and "SCHEMA:" in prompt
    assert s.transcript[-1]["role"] == "assistant"


@pytest.mark.parametrize(
    "reply",
    [
        ProviderError("connection refused"),
        "",
        "SCHEMA: Bananas are yellow.",  # shares no word with the episodes
        "SCHEMA: I'm sorry, I cannot help with the cafe request.",
        "SCHEMA: " + "morning coffee " * 40,
        "first line\nsecond line",
    ],
)
def test_unusable_llm_answers_fall_back_to_extractive(reply):
    ids, vecs = _embedded()
    s = _with_chat(ScriptedChat(lambda m: reply), ids[:3], EPISODES[:3], vecs[:3])
    plain = D.abstract_schema(ids=ids[:3], texts=EPISODES[:3], vectors=vecs[:3])
    assert s.method == "extractive_fallback" and s.note
    assert s.text == plain.text


@pytest.mark.parametrize(
    "steps,successes,attempts,expected",
    [
        (["open editor", "run tests"], 3, 5, ("open editor -> run tests", "concrete")),  # 0.6 exactly
        (["a", "b"], 2, 5, None),  # 0.4
        (["only step"], 5, 5, None),  # one step
        (["a", " ", "b"], 1, 1, ("a -> b", "concrete")),  # blank steps ignored
        (["a", "b", "c", "d"], 4, 4, ("a -> b -> c -> d", "intermediate")),
        (["a", "b", "c", "d", "e", "f"], 9, 10, ("a -> b -> c -> d -> e -> f", "abstract")),
        (["a", "b"], 0, 0, None),
    ],
)
def test_promote_procedure_rule(steps, successes, attempts, expected):
    got = D.promote_procedure(steps=steps, successes=successes, attempts=attempts)
    if expected is None:
        assert got is None
    else:
        assert (got.text, got.abstraction) == expected
        assert got.success_rate == pytest.approx(successes / attempts)


def test_promote_procedure_validation_and_min_attempts():
    with pytest.raises(ValidationError):
        D.promote_procedure(steps=["a", "b"], successes=3, attempts=2)
    p = D.DualProcessParams(promote_min_attempts=3)
    assert D.promote_procedure(steps=["a", "b"], successes=2, attempts=2, params=p) is None
    assert D.promote_procedure(steps=["a", "b"], successes=2, attempts=3, params=p) is not None
