"""Erasure reaches the search indexes' files: the vector of a forgotten memory is zeroed in
the saved matrix when the erasing transaction commits (mapped from the file), and a row
added since the last save is never written with it."""

from __future__ import annotations

import numpy as np
from storage_helpers import DIM, MODEL, P1, P2, make_item, put, unit_rows

from zenbrain.index import AnnParams
from zenbrain.index.vectors import vector_blob
from zenbrain.storage.sqlite import SQLiteStore

ANN = AnnParams(ann_min_rows=1)  # a graph at once: the saved vectors are mapped from their file


def _open(path, ann=ANN):
    return SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, ann=ann)


def _stored(path, prefix: str, seed: int, n: int = 40, *, saved: bool = True, ann=ANN):
    """A store holding ``n`` memories ``{prefix}0``... with random vectors, its indexes built
    by a search and, when ``saved``, written and loaded again from their files."""
    items = [make_item(P1, f"text number {i}", id=f"{prefix}{i}") for i in range(n)]
    v = unit_rows(np.random.default_rng(seed), n)
    s = _open(path, ann)
    put(s, items, v)
    s.vector_search(P1, v[0], 3)
    if saved:
        s.close()
        s = _open(path, ann)
    return s, v


def _in_index_files(path, vector: np.ndarray) -> bool:
    needle = vector_blob(vector)  # the bytes the index files keep (float16)
    return any(needle in f.read_bytes() for f in (path.parent / (path.name + ".idx")).rglob("*.npy"))


def test_forget_zeroes_the_vector_in_the_index_files(tmp_path):
    path = tmp_path / "e.db"
    s, v = _stored(path, "e", 4)  # the indexes saved and loaded
    assert s.vector_search(P1, v[5], 1)[0][0] == "e5"  # loaded from the files
    assert _in_index_files(path, v[5])
    with s.transaction() as tx:
        tx.delete_memory(P1, "e5")
    assert not _in_index_files(path, v[5])  # zeroed in place when the erasure committed
    fresh = make_item(P1, "stored after the load", id="fresh")
    w = unit_rows(np.random.default_rng(5), 1)
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


def _graph_copy(vector: np.ndarray) -> bytes:
    """The bytes usearch keeps for a vector in an int8 graph (its own quantisation)."""
    from usearch.index import Index

    ix = Index(ndim=DIM, metric="ip", dtype="i8")
    ix.add(0, np.asarray(vector, np.float32))
    return np.asarray(ix.get(0, dtype="i8")).astype(np.int8).tobytes()


def _idx_bytes(path, suffix: str) -> bytes:
    return b"".join(f.read_bytes() for f in (path.parent / (path.name + ".idx")).glob(f"*{suffix}"))


def _saved_ids(path) -> set[str]:
    ids: set[str] = set()
    for f in (path.parent / (path.name + ".idx")).glob("*.cols.npz"):
        with np.load(f) as z:
            ids.update(z["ids"].tobytes().decode().split("\n"))
    return ids


def test_forget_takes_the_graph_copy_and_the_saved_columns_out_at_commit(tmp_path):
    """usearch keeps its own (int8) copy of every vector it indexes, and removing a key
    leaves it in the file; the saved columns kept an erased memory's id and content key.
    Both go when the erasure commits, from files mapped since the last open."""
    path = tmp_path / "g.db"
    s, v = _stored(path, "g", 7)
    assert s.vector_search(P1, v[5], 1)[0][0] == "g5"
    assert _graph_copy(v[5]) in _idx_bytes(path, ".usearch") and "g5" in _saved_ids(path)
    with s.transaction() as tx:
        tx.delete_memory(P1, "g5")
    assert _graph_copy(v[5]) not in _idx_bytes(path, ".usearch")
    assert _graph_copy(v[6]) in _idx_bytes(path, ".usearch")
    assert "g5" not in _saved_ids(path) and "g6" in _saved_ids(path)
    assert [mid for mid, _ in s.vector_search(P1, v[6], 1)] == ["g6"]
    s.close()
    s = _open(path)  # the files scrubbed in place still load, and agree with the store
    got = [mid for mid, _ in s.vector_search(P1, v[5], 40)]
    assert "g5" not in got and len(got) == 39 and s.vector_search(P1, v[7], 1)[0][0] == "g7"
    s.close()


def test_a_graph_built_in_memory_is_saved_without_erased_vectors(tmp_path):
    path = tmp_path / "m.db"
    s, v = _stored(path, "m", 8, saved=False)  # the graph is built in memory, not saved yet
    with s.transaction() as tx:
        tx.delete_memory(P1, "m9")
    s.close()
    assert _graph_copy(v[9]) not in _idx_bytes(path, ".usearch")
    assert _graph_copy(v[10]) in _idx_bytes(path, ".usearch")
    assert "m9" not in _saved_ids(path)


def test_a_small_partition_files_are_rewritten_at_commit(tmp_path):
    """Below the graph's size the matrix is read into memory, so zeroing it there left the
    saved file with the erased vector until the next save."""
    path = tmp_path / "s.db"
    s, v = _stored(path, "s", 9, 20, ann=None)  # the default threshold: no graph
    assert s.vector_search(P1, v[3], 1)[0][0] == "s3"
    assert _in_index_files(path, v[3]) and "s3" in _saved_ids(path)
    with s.transaction() as tx:
        tx.delete_memory(P1, "s3")
    assert not _in_index_files(path, v[3]) and _in_index_files(path, v[4])
    assert "s3" not in _saved_ids(path)
    s.close()


def test_forget_in_a_process_that_never_searched_the_partition_reaches_its_files(tmp_path):
    """A process that only erases (a command line `forget`, a worker that served no search of
    that user) has not loaded the partition's index files: they are loaded and scrubbed."""
    path = tmp_path / "e.db"
    s, v = _stored(path, "e", 4)
    put(s, [make_item(P2, "another user's note", id="o1")], unit_rows(np.random.default_rng(9), 1))
    s.vector_search(P2, v[0], 1)
    s.close()
    s = _open(path)  # nothing searched in this one
    put(s, [make_item(P2, "another user's second note", id="o2")], unit_rows(np.random.default_rng(8), 1))
    assert _in_index_files(path, v[5])
    with s.transaction() as tx:
        tx.delete_memory(P1, "e5")
    assert not _in_index_files(path, v[5]) and _in_index_files(path, v[6])
    assert P2 not in s._index_set()._parts  # written since its save, but nothing of it erased: not loaded
    s.close()
    s = _open(path)
    assert [m for m, _ in s.vector_search(P1, v[6], 1)] == ["e6"]
    assert "e5" not in [m for m, _ in s.vector_search(P1, v[5], 40)]
    s.close()


def test_an_erased_partition_leaves_no_index_file_and_no_manifest_entry(tmp_path):
    """Erasing every memory of a user takes the partition's index files (named by a hash of
    the user) and its manifest entries (which name the user) away."""
    import json

    path = tmp_path / "e.db"
    s, v = _stored(path, "e", 4)
    put(s, [make_item(P2, "another user's note", id="o1")], unit_rows(np.random.default_rng(9), 1))
    s.vector_search(P2, v[0], 1)
    s.lexical_search(P1, "text number", 3)
    s.close()
    s = _open(path)
    with s.transaction() as tx:
        for i in range(40):
            tx.delete_memory(P1, f"e{i}")
    idx = path.parent / (path.name + ".idx")
    manifest = (idx / "manifest.json").read_text()
    assert P1[0] not in manifest and P2[0] in manifest
    assert [p for p, _ in json.loads(manifest)["partitions"].items()]  # the other user's stays
    assert not any(vector_blob(row) in f.read_bytes() for row in v for f in idx.rglob("*") if f.is_file())
    s.close()
    assert P1[0] not in (idx / "manifest.json").read_text()
    s = _open(path)
    assert s.vector_search(P1, v[0], 3) == [] and [m for m, _ in s.vector_search(P2, v[0], 1)] == ["o1"]
    s.close()


def test_an_erasure_by_another_process_is_scrubbed_from_the_owners_files(tmp_path, monkeypatch):
    """One process owns the index files (a server's first worker); another erases (the
    second worker). The owner scrubs its files when the change log brings it the erasure:
    at its next use of the indexes."""
    from zenbrain.index import lexical_set

    monkeypatch.setattr(lexical_set, "SMALL_MAX", 0)  # tantivy files, however small the partition
    path = tmp_path / "e.db"
    items = [make_item(P1, f"text number {i}", id=f"e{i}") for i in range(40)]
    items[5] = make_item(P1, "the password is zyxquokkafoo", id="e5")
    v = unit_rows(np.random.default_rng(4), 40)
    def store() -> SQLiteStore:  # lexical search on tantivy from 30 memories
        return SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, ann=ANN, lexical_index_min_rows=30)

    owner = store()
    put(owner, items, v)
    owner.vector_search(P1, v[0], 3)
    owner.lexical_search(P1, "zyxquokkafoo", 3)
    owner.save_indexes()
    assert _in_index_files(path, v[5]) and _lexical_terms(path, "zyxquokka")
    other = store()  # the files are the owner's: this one keeps its indexes in memory
    assert other.vector_search(P1, v[5], 1)[0][0] == "e5"
    with other.transaction() as tx:
        tx.delete_memory(P1, "e5")
    other.close()
    assert owner.vector_search(P1, v[5], 1)[0][0] != "e5"  # the owner's next search...
    assert not _in_index_files(path, v[5])  # ...scrubbed its vector files...
    owner._index_set().wait_rebuilds()  # ...and rebuilt the lexical index in a thread
    assert _lexical_terms(path, "zyxquokka") == []
    assert owner.lexical_search(P1, "zyxquokkafoo", 3) == []
    other = store()
    with other.transaction() as tx:
        tx.delete_memory(P1, "e6")
    other.close()
    owner.close()  # no search in between: the owner's save scrubs first
    assert not _in_index_files(path, v[6])


def _lexical_terms(path, prefix: str) -> list:
    """The terms with ``prefix`` in the saved lexical indexes of every partition."""
    import tantivy

    root = path.parent / (path.name + ".idx") / "lexical"
    return [t for d in sorted(p for p in root.iterdir() if p.is_dir())
            for t in tantivy.Index.open(str(d)).searcher().terms_with_prefix("content", prefix)]


def test_forget_takes_the_words_out_of_the_lexical_index_files(tmp_path, monkeypatch):
    """tantivy only marks a deleted document: its words stay in the segment's term
    dictionary and postings (with everything else the text said) until the segment
    merges. An erasure rebuilds the index, so that the words of the erased text are gone
    when the erasure commits."""
    from zenbrain.index import lexical_set

    monkeypatch.setattr(lexical_set, "SMALL_MAX", 0)  # partitions this small are otherwise held in memory
    path = tmp_path / "l.db"
    store = SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, lexical_index_min_rows=60)
    filler = [make_item(P2, f"other note {n} about tea and trains") for n in range(70)]
    secret = make_item(P1, "the password is zyxquokkafoo", id="secret")
    kept = make_item(P1, "the quokka ate zyxwombatbar", id="kept")
    with store.transaction() as tx:
        tx.put_memories(filler + [secret, kept])
    assert [m for m, _ in store.lexical_search(P1, "zyxquokkafoo", 3)] == ["secret"]
    store.save_indexes()
    assert _lexical_terms(path, "zyxquokka") and _lexical_terms(path, "zyxwombat")
    assert len(store.lexical_search(P2, "trains", 100)) == 70
    edited = make_item(P2, "other note 0 about coffee", id=filler[0].id)
    with store.transaction() as tx:  # an edit is not an erasure: no rebuild for it
        tx.put_memories([edited])
    assert [m for m, _ in store.lexical_search(P2, "coffee", 3)] == [filler[0].id]
    lexical = store._index_set().lexical
    assert lexical.with_deleted_documents() == []  # an edit deletes no memory
    untouched = lexical.shard(P2)
    with store.transaction() as tx:
        tx.delete_memory(P1, "secret")
    assert lexical.with_deleted_documents() == []
    assert lexical.shard(P2) is untouched  # an erasure rebuilds its own partition's index only
    assert _lexical_terms(path, "zyxquokka") == []
    assert [m for m, _ in store.lexical_search(P1, "zyxwombatbar", 3)] == ["kept"]
    assert len(store.lexical_search(P2, "trains", 100)) == 69
    store.close()


def test_a_graph_file_of_unexpected_layout_is_rewritten_from_the_live_rows(tmp_path, monkeypatch):
    """When the copies cannot be found in the graph's file (a usearch release that lays it
    out otherwise), the partition is written anew from its live rows, graph included."""
    import zenbrain.index.vectors as V

    path = tmp_path / "u.db"
    s, v = _stored(path, "u", 11)
    assert s.vector_search(P1, v[5], 1)[0][0] == "u5"
    monkeypatch.setattr(V, "erase_graph_vectors", lambda *a, **k: False)
    with s.transaction() as tx:
        tx.delete_memory(P1, "u5")
    assert _graph_copy(v[5]) not in _idx_bytes(path, ".usearch")
    assert _graph_copy(v[6]) in _idx_bytes(path, ".usearch") and "u5" not in _saved_ids(path)
    assert s.vector_search(P1, v[6], 1)[0][0] == "u6"
    s.close()
    s = _open(path)
    got = [mid for mid, _ in s.vector_search(P1, v[5], 40)]
    assert "u5" not in got and len(got) == 39
    s.close()


def test_searches_go_on_while_an_erasure_rebuilds_a_lexical_index(tmp_path, monkeypatch):
    """The rebuild after an erasure (seconds in a partition of a million) holds no lock
    while it builds beside the index in use: a search in another thread is answered
    meanwhile, from the old index, without the erased memory; a memory stored meanwhile is
    in the new index; no word of the erased text is left in any file."""
    import threading

    from zenbrain.index import lexical_set

    monkeypatch.setattr(lexical_set, "SMALL_MAX", 0)
    path = tmp_path / "r.db"
    store = SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, lexical_index_min_rows=30)
    items = [make_item(P1, f"note {n} about tea and trains") for n in range(40)]
    items.append(make_item(P1, "the password is zyxquokkafoo", id="secret"))
    with store.transaction() as tx:
        tx.put_memories(items)
    assert [m for m, _ in store.lexical_search(P1, "zyxquokkafoo", 3)] == ["secret"]
    store.save_indexes()
    building, release = threading.Event(), threading.Event()
    real = lexical_set.LexicalSet.build_apart

    def slow(self, partition, texts):
        out = real(self, partition, texts)
        building.set()
        assert release.wait(30)
        return out

    monkeypatch.setattr(lexical_set.LexicalSet, "build_apart", slow)

    def erase() -> None:
        with store.transaction() as tx:
            tx.delete_memory(P1, "secret")

    eraser = threading.Thread(target=erase)
    eraser.start()
    assert building.wait(30)
    # Meanwhile, in this thread: searches and a write.
    assert len(store.lexical_search(P1, "trains", 100)) == 40
    assert store.lexical_search(P1, "zyxquokkafoo", 3) == []
    late = make_item(P1, "stored during the rebuild zyxwombatbar", id="late")
    with store.transaction() as tx:
        tx.put_memories([late])
    release.set()
    eraser.join(30)
    assert not eraser.is_alive()
    assert [m for m, _ in store.lexical_search(P1, "zyxwombatbar", 3)] == ["late"]
    assert len(store.lexical_search(P1, "trains", 100)) == 40
    store.save_indexes()
    assert _lexical_terms(path, "zyxquokka") == [] and _lexical_terms(path, "zyxwombat")
    store.close()


def test_a_build_left_beside_the_index_is_removed_on_open(tmp_path):
    path = tmp_path / "o.db"
    store = SQLiteStore(str(path), embedder_name=MODEL, dim=DIM)
    put(store, [make_item(P1, "a note")])
    store.lexical_search(P1, "note", 3)
    store.close()
    left = path.parent / (path.name + ".idx") / "lexical" / ".rebuild-p-0123.77.88"
    left.mkdir(parents=True)
    (left / "meta.json").write_text("zyxquokkafoo")
    store = SQLiteStore(str(path), embedder_name=MODEL, dim=DIM)
    assert [m for m, _ in store.lexical_search(P1, "note", 3)]
    assert not left.exists()
    store.close()


def test_a_rebuild_that_fails_in_a_thread_is_tried_again_at_the_next_search(tmp_path, monkeypatch):
    """The owner of the files rebuilds in a thread for another process's erasure; when that
    fails (a full disk), the next search tries again, and the words go then."""
    from zenbrain.index import lexical_set

    monkeypatch.setattr(lexical_set, "SMALL_MAX", 0)
    path = tmp_path / "f.db"

    def store() -> SQLiteStore:
        return SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, lexical_index_min_rows=30)

    owner = store()
    items = [make_item(P1, f"note {n} about tea and trains") for n in range(40)]
    items.append(make_item(P1, "the password is zyxquokkafoo", id="secret"))
    with owner.transaction() as tx:
        tx.put_memories(items)
    owner.lexical_search(P1, "trains", 3)
    owner.save_indexes()
    other = store()
    with other.transaction() as tx:
        tx.delete_memory(P1, "secret")
    other.close()
    real = lexical_set.LexicalSet.build_apart
    failures = []

    def failing(self, partition, texts):
        failures.append(partition)
        raise OSError("no space left on device")

    monkeypatch.setattr(lexical_set.LexicalSet, "build_apart", failing)
    assert owner.lexical_search(P1, "zyxquokkafoo", 3) == []
    owner._index_set().wait_rebuilds()
    assert failures and _lexical_terms(path, "zyxquokka")  # the build failed: the words are still there
    monkeypatch.setattr(lexical_set.LexicalSet, "build_apart", real)
    owner.lexical_search(P1, "trains", 3)  # the next search tries again
    owner._index_set().wait_rebuilds()
    assert _lexical_terms(path, "zyxquokka") == []
    owner.close()
