"""``erase_graph_vectors`` zeroes exactly the erased rows' copies in a usearch file."""

from __future__ import annotations

import numpy as np
from usearch.index import Index

from zenbrain.index.vectors import erase_graph_vectors


def _graph(tmp_path, vectors: np.ndarray):
    ix = Index(ndim=vectors.shape[1], metric="ip", dtype="i8")
    ix.add(np.arange(len(vectors), dtype=np.uint64), vectors)
    path = tmp_path / "g.usearch"
    ix.save(str(path))
    return ix, path


def _copy(ix, key: int) -> bytes:
    return np.asarray(ix.get(key, dtype="i8")).astype(np.int8).tobytes()


def test_only_the_erased_rows_are_zeroed_and_a_live_twin_keeps_its_copy(tmp_path):
    rng = np.random.default_rng(3)
    v = rng.standard_normal((50, 24)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[7] = v[3]  # the same text stored twice: one vector, two rows
    ix, path = _graph(tmp_path, v)
    copies = {k: _copy(ix, k) for k in (0, 3, 9)}
    assert erase_graph_vectors(path, ix, np.array([0, 3]))
    data = path.read_bytes()
    assert copies[0] not in data  # erased
    assert copies[3] in data  # row 7 is live with the same bytes: nothing of row 3 is gone from the store
    assert copies[9] in data
    mapped = Index.restore(str(path), view=True)  # as a loaded partition holds it: row 0 reads as zeros now
    assert erase_graph_vectors(path, mapped, np.array([0, 3, 7]))  # the twin dead too: both rows go
    assert copies[3] not in path.read_bytes()
    loaded = Index.restore(str(path), view=True)  # the file still loads and searches
    assert int(loaded.search(v[9], 1).keys[0]) == 9


def test_a_file_of_another_layout_is_refused(tmp_path):
    rng = np.random.default_rng(4)
    v = rng.standard_normal((20, 16)).astype(np.float32)
    ix, path = _graph(tmp_path, v)
    raw = bytearray(path.read_bytes())
    raw[4:8] = (999).to_bytes(4, "little")  # not the bytes a row of this graph takes
    path.write_bytes(bytes(raw))
    assert not erase_graph_vectors(path, ix, np.array([2]))
