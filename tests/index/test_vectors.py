"""The vector partition: HNSW recall against exact, filters, layers, deletes, updates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from index_helpers import DIM, clustered_vectors, make_rows

from zenbrain.index.vectors import AnnParams, VectorPartition, stored
from zenbrain.storage.base import Filter

ANN = AnnParams(ann_min_rows=500, exact_max_allowed=150, exact_ratio=1.0, tail_max=256)


def exact(vecs: np.ndarray, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[int]:
    s = vecs @ q
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    order = np.argsort(-s, kind="stable")[:k]
    return [int(i) for i in order if np.isfinite(s[i])]


def ids_to_rows(result: list[tuple[str, float]]) -> list[int]:
    return [int(mid[1:]) for mid, _ in result]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    # Stored vectors at the precision the index keeps them (float16), so exact results are comparable.
    return stored(clustered_vectors(4000, seed=1)), clustered_vectors(60, seed=2)


@pytest.fixture(scope="module")
def ann(data: tuple[np.ndarray, np.ndarray]) -> VectorPartition:
    vecs, _ = data
    part = VectorPartition(DIM, ANN)
    for row in make_rows(len(vecs), vectors=vecs, contexts=[f"c{i}" for i in range(50)]):
        part.upsert(row)
    part.maintain()
    return part


def test_graph_recall_against_exact(ann: VectorPartition, data: tuple[np.ndarray, np.ndarray]) -> None:
    vecs, queries = data
    assert ann.graph is not None and ann.graph_rows == len(vecs)
    hits = 0
    for q in queries:
        got = ann.search(q, 10)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        # Scores are exact float32 dot products of the stored vectors (the re-rank).
        for mid, s in got:
            assert s == pytest.approx(float(vecs[int(mid[1:])] @ q), abs=1e-6)
        hits += len(set(ids_to_rows(got)) & set(exact(vecs, q, 10)))
    assert hits / (10 * len(queries)) >= 0.9


def test_exact_partition_matches_numpy(data: tuple[np.ndarray, np.ndarray]) -> None:
    vecs, queries = data
    part = VectorPartition(DIM)  # 4000 rows: below the default threshold, exact
    for row in make_rows(len(vecs), vectors=vecs):
        part.upsert(row)
    part.maintain()
    assert part.graph is None
    for q in queries[:10]:
        assert ids_to_rows(part.search(q, 10)) == exact(vecs, q, 10)


@pytest.mark.parametrize("keep", [1, 5, 10, 25])
def test_filtered_search_is_correct(ann: VectorPartition, data: tuple[np.ndarray, np.ndarray], keep: int) -> None:
    """A context filter keeping keep/50 of the rows: every result passes it, there are
    k of them, and they are (nearly) the exact filtered top k."""
    vecs, queries = data
    contexts = frozenset(f"c{i}" for i in range(keep))
    allowed = np.array([i % 50 < keep for i in range(len(vecs))])
    flt = Filter(contexts=contexts)
    hits = 0
    for q in queries:
        got = ann.search(q, 10, flt)
        rows = ids_to_rows(got)
        assert len(rows) == 10
        assert all(allowed[r] for r in rows)
        hits += len(set(rows) & set(exact(vecs, q, 10, allowed)))
    assert hits / (10 * len(queries)) >= 0.9


def test_filter_smaller_than_k_returns_all_allowed(ann: VectorPartition, data: tuple[np.ndarray, np.ndarray]) -> None:
    _, queries = data
    ids = frozenset(f"m{i:06d}" for i in (3, 77, 1500))
    got = ann.search(queries[0], 10, Filter(ids=ids))
    assert {mid for mid, _ in got} == ids


def test_layers_sessions_and_archived(data: tuple[np.ndarray, np.ndarray]) -> None:
    vecs, queries = data
    part = VectorPartition(DIM, ANN)
    rows = make_rows(1000, vectors=vecs[:1000])
    rows[:200] = [replace(r, layer="episodic") for r in rows[:200]]
    rows[200:260] = [replace(r, layer="working", session_id="s1") for r in rows[200:260]]
    rows[260:300] = [replace(r, archived=True) for r in rows[260:300]]
    for r in rows:
        part.upsert(r)
    part.maintain()
    assert part.graph is not None
    q = queries[0]
    by_layer = part.search(q, 5, Filter(session_id="s1"), per_layer=True)
    # The top 5 of each layer present, layers in their declared order (working first).
    layer_of = np.array(["episodic"] * 200 + ["working"] * 60 + ["semantic"] * 740)
    visible = np.ones(1000, dtype=bool)
    visible[260:300] = False  # archived
    expected = []
    for name in ("working", "episodic", "semantic"):
        expected += exact(vecs[:1000], q, 5, visible & (layer_of == name))
    assert ids_to_rows(by_layer) == expected
    # Another session never sees session s1's working memory; archived rows stay hidden.
    other = {int(m[1:]) for m, _ in part.search(q, 1000, Filter(session_id="s2"))}
    assert not other & set(range(200, 300))
    with_archived = {int(m[1:]) for m, _ in part.search(q, 1000, Filter(session_id="s2", include_archived=True))}
    assert set(range(260, 300)) <= with_archived


def test_deletes_updates_and_tail(data: tuple[np.ndarray, np.ndarray]) -> None:
    vecs, queries = data
    part = VectorPartition(DIM, ANN)
    rows = make_rows(600, vectors=vecs[:600])
    for r in rows:
        part.upsert(r)
    part.maintain()
    q = queries[0]
    best = part.search(q, 3)
    gone = best[0][0]
    part.remove(gone)
    assert gone not in {m for m, _ in part.search(q, 50)}
    # A new vector for an existing memory (its content changed): found by it, old one gone.
    target = rows[10]
    part.upsert(replace(target, content_hash="f" * 40, vector=q))
    top = part.search(q, 1)
    assert top[0][0] == target.id and top[0][1] == pytest.approx(float(stored(q) @ q))
    assert sum(m == target.id for m, _ in part.search(q, 600)) == 1
    # Rows added after the graph are searched exactly, then join it.
    assert part.graph_rows == 600
    extra = make_rows(300, start=600, vectors=vecs[600:900])
    for r in extra:
        part.upsert(r)
    assert extra[5].id in {m for m, _ in part.search(vecs[605], 1)}
    part.maintain()
    assert part.graph_rows == part.n


def test_rows_without_vectors_are_not_dense(data: tuple[np.ndarray, np.ndarray]) -> None:
    vecs, _ = data
    part = VectorPartition(DIM)
    rows = make_rows(20, vectors=vecs[:20])
    rows[0] = replace(rows[0], vector=None)
    for r in rows:
        part.upsert(r)
    assert rows[0].id not in {m for m, _ in part.search(vecs[0], 20)}
    assert part.vector(rows[0].id) is None
    assert part.accept(None)([rows[0].id, "nope"]).tolist() == [True, False]
    part.upsert(replace(rows[0], vector=vecs[0]))  # the vector arrives later
    assert part.search(vecs[0], 1)[0][0] == rows[0].id


def test_wrong_width_is_rejected() -> None:
    part = VectorPartition(DIM)
    row = make_rows(1)[0]
    with pytest.raises(ValueError):
        part.upsert(replace(row, vector=np.ones(DIM + 1, dtype=np.float32)))


def test_a_float32_matrix_of_format_2_is_converted_not_rebuilt(data: tuple[np.ndarray, np.ndarray], tmp_path) -> None:
    import json

    vecs, queries = data
    part = VectorPartition(DIM, ANN)
    for row in make_rows(len(vecs), vectors=vecs):
        part.upsert(row)
    part.maintain()
    stem = tmp_path / "p"
    part.save(stem)
    before = [part.search(q, 10) for q in queries[:10]]
    # The files as format 2 wrote them: a float32 matrix, "format": 2 in the columns' meta.
    np.save(f"{stem}.vec.npy", np.load(f"{stem}.vec.npy").astype(np.float32))
    with np.load(f"{stem}.cols.npz") as z:
        arrays = {name: z[name] for name in z.files}
    meta = json.loads(arrays["meta"].tobytes())
    arrays["meta"] = np.frombuffer(json.dumps({**meta, "format": 2}).encode(), np.uint8)
    np.savez(f"{stem}.cols.npz", **arrays)

    loaded = VectorPartition.load(stem, DIM, ANN)
    assert loaded.graph is not None and loaded.graph_rows == part.graph_rows  # the graph kept
    assert np.load(f"{stem}.vec.npy", mmap_mode="r").dtype == np.float16  # the matrix converted
    assert [loaded.search(q, 10) for q in queries[:10]] == before


def test_cosines_in_blocks_equal_one_gather(ann: VectorPartition, data: tuple[np.ndarray, np.ndarray],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Unknown ids give 0, and blocks of rows give the cosines of one gathered matrix."""
    from zenbrain.index import vectors as vectors_module
    from zenbrain.vecmath import row_cosines

    vecs, queries = data
    ids = [f"m{i:06d}" for i in range(0, len(vecs), 7)] + ["nobody"]
    q = queries[:3] / np.linalg.norm(queries[:3], axis=1, keepdims=True)
    want = np.zeros((3, len(ids)), np.float32)
    want[:, :-1] = row_cosines(q.astype(np.float32), vecs[::7])
    whole = ann.cosines(ids, q.astype(np.float32))
    np.testing.assert_allclose(whole, want, atol=1e-6)
    monkeypatch.setattr(vectors_module, "_COSINE_BLOCK", 50)
    # (BLAS may round a product differently in another shape: equal to float32 precision.)
    np.testing.assert_allclose(ann.cosines(ids, q.astype(np.float32)), whole, atol=1e-6)


def test_an_exact_search_by_layer_scores_the_matrix_once(data: tuple[np.ndarray, np.ndarray],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    vecs, queries = data
    part = VectorPartition(DIM)  # below the graph's threshold: every layer's search is exact
    rows = make_rows(900, vectors=vecs[:900])
    rows[:300] = [replace(r, layer="episodic") for r in rows[:300]]
    rows[300:400] = [replace(r, layer="core") for r in rows[300:400]]
    for r in rows:
        part.upsert(r)
    calls = []
    scores_all = part._scores_all
    monkeypatch.setattr(part, "_scores_all", lambda q: calls.append(1) or scores_all(q))
    got = part.search(queries[0], 5, per_layer=True)
    assert len(calls) == 1
    layer_of = np.array(["episodic"] * 300 + ["core"] * 100 + ["semantic"] * 500)
    want = []
    for name in ("core", "episodic", "semantic"):
        want += exact(vecs[:900], queries[0], 5, layer_of == name)
    assert sorted(ids_to_rows(got)) == sorted(want)


def test_a_large_partition_samples_by_rows_uniformly_and_never_a_dead_or_excluded_id(monkeypatch):
    """Above SAMPLE_BY_ROWS memories the sample is drawn by rows (no list of every id, no
    permutation of them): k distinct live ids outside ``exclude``, in row order, the same
    for a seed, each live id about equally often; a draw short of k falls back to the ids."""
    from zenbrain.index import vectors

    monkeypatch.setattr(vectors, "SAMPLE_BY_ROWS", 100)
    part = VectorPartition(DIM)
    for row in make_rows(400):
        part.upsert(row)
    for i in range(0, 400, 5):  # a fifth of the rows dead
        part.remove(f"m{i:06d}")
    changed = make_rows(1, start=7)[0]
    part.upsert(replace(changed, content_hash="f" * 40))  # a new row for m000007, its old one dead
    exclude = {f"m{i:06d}" for i in range(1, 40)} | {"not-stored-yet"}
    live = set(part.pos) - exclude

    class NoPermutation:  # the rows path draws rows, never a permutation of every id
        def __init__(self, seed: int) -> None:
            self.rng = np.random.default_rng(seed)

        def choice(self, *args, **kwargs):
            return self.rng.choice(*args, **kwargs)

        def permutation(self, *args, **kwargs):
            raise AssertionError("permuted every id")

    got = part.sample_ids(30, NoPermutation(1), exclude)  # type: ignore[arg-type]
    assert len(got) == 30 == len(set(got)) and set(got) <= live
    assert [part.pos[i] for i in got] == sorted(part.pos[i] for i in got)
    assert got == part.sample_ids(30, np.random.default_rng(1), exclude)  # the same draws
    counts = dict.fromkeys(live, 0)
    rng = np.random.default_rng(2)
    for _ in range(600):
        for mid in part.sample_ids(30, rng, exclude):
            counts[mid] += 1
    expected = 600 * 30 / len(live)
    assert min(counts.values()) > 0.5 * expected and max(counts.values()) < 1.6 * expected
    # Asking for nearly every live id: the rows drawn fall short, the ids are drawn instead.
    many = part.sample_ids(len(live) - 2, np.random.default_rng(3), exclude)
    assert len(many) == len(live) - 2 and set(many) <= live
