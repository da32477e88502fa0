"""Erasure reaches the search indexes' files: the vector of a forgotten memory is zeroed in
the saved matrix when the erasing transaction commits (mapped from the file), and a row
added since the last save is never written with it."""

from __future__ import annotations

import numpy as np
from storage_helpers import DIM, MODEL, P1, make_item, put, unit_rows

from zenbrain.index import AnnParams
from zenbrain.index.vectors import vector_blob
from zenbrain.storage.sqlite import SQLiteStore

ANN = AnnParams(ann_min_rows=1)  # a graph at once: the saved vectors are mapped from their file


def _open(path):
    return SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, ann=ANN)


def _in_index_files(path, vector: np.ndarray) -> bool:
    needle = vector_blob(vector)  # the bytes the index files keep (float16)
    return any(needle in f.read_bytes() for f in (path.parent / (path.name + ".idx")).rglob("*.npy"))


def test_forget_zeroes_the_vector_in_the_index_files(tmp_path):
    path = tmp_path / "e.db"
    rng = np.random.default_rng(4)
    items = [make_item(P1, f"text number {i}", id=f"e{i}") for i in range(40)]
    v = unit_rows(rng, 40)
    s = _open(path)
    put(s, items, v)
    s.vector_search(P1, v[0], 3)
    s.close()  # the indexes are saved
    s = _open(path)
    assert s.vector_search(P1, v[5], 1)[0][0] == "e5"  # loaded from the files
    assert _in_index_files(path, v[5])
    with s.transaction() as tx:
        tx.delete_memory(P1, "e5")
    assert not _in_index_files(path, v[5])  # zeroed in place when the erasure committed
    fresh = make_item(P1, "stored after the load", id="fresh")
    w = unit_rows(rng, 1)
    put(s, [fresh], w)
    assert s.vector_search(P1, w[0], 1)[0][0] == "fresh"
    with s.transaction() as tx:
        tx.delete_memory(P1, "fresh")
    s.close()
    assert not _in_index_files(path, w[0]) and _in_index_files(path, v[6])
    s = _open(path)
    got = [mid for mid, _ in s.vector_search(P1, v[5], 40)]
    assert "e5" not in got and "fresh" not in got and len(got) == 39
    s.close()
