"""The SQLite store's search indexes on disk: saved beside the database on close and by
save_indexes(), reopened without a rebuild, used by one handle at a time (another works
in memory with the same results), and rebuilt when their files are damaged."""

from __future__ import annotations

import json

import numpy as np
import pytest
from storage_helpers import DIM, MODEL, P1, make_item, put, unit_rows

from zenbrain.index import AnnParams
from zenbrain.storage.sqlite import SQLiteStore

OPTIONS = {"ann": AnnParams(ann_min_rows=1), "lexical_index_min_rows": 0}  # every search through the indexes


def _open(path):
    return SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, **OPTIONS)


def _results(store, q):
    return store.vector_search(P1, q, 5), store.lexical_search(P1, "harbour lantern", 5)


def _fill(path):
    rng = np.random.default_rng(8)
    words = ["harbour", "lantern", "maple", "river", "stone"]
    items = [make_item(P1, " ".join(rng.choice(words, 4)) + f" {i}", id=f"i{i:03d}") for i in range(60)]
    v = unit_rows(rng, 60)
    s = _open(path)
    put(s, items, v)
    return s, v


def test_indexes_are_saved_and_reopened_without_a_rebuild(tmp_path):
    path = tmp_path / "f.db"
    s, v = _fill(path)
    before = _results(s, v[3])
    s.save_indexes()
    manifest = json.loads((tmp_path / "f.db.idx" / "manifest.json").read_text())
    assert manifest["lexical_partitions"] == [list(P1)] and manifest["partitions"]
    put(s, [make_item(P1, "harbour lantern harbour lantern", id="late")], unit_rows(np.random.default_rng(1), 1))
    after_write = _results(s, v[3])
    s.close()
    s = _open(path)
    dense, lexical = _results(s, v[3])
    assert dense == after_write[0] and s._search.rebuilds == []  # the write replayed from the log
    # "late" was scored uncommitted before, committed now: the same up to tantivy's
    # one-byte lengths (which is why partitions under 2,000 memories use FTS5).
    assert lexical[0][0] == after_write[1][0][0] == "late" and before != after_write
    assert [sc for _, sc in lexical] == pytest.approx([sc for _, sc in after_write[1]], rel=0.01)
    s.close()


def test_a_second_handle_works_in_memory_with_the_same_results(tmp_path):
    path = tmp_path / "f.db"
    s, v = _fill(path)
    mine = _results(s, v[7])
    other = _open(path)
    assert _results(other, v[7]) == mine
    assert any("in use by another process" in r for r in other._search.rebuilds)
    other.close()
    s.close()


def test_damaged_index_files_are_rebuilt_from_the_database(tmp_path):
    path = tmp_path / "f.db"
    s, v = _fill(path)
    expect = _results(s, v[11])
    s.close()
    for f in (tmp_path / "f.db.idx").glob("p-*.cols.npz"):
        f.write_bytes(b"not an index")
    s = _open(path)
    assert _results(s, v[11]) == expect and any("unreadable" in r for r in s._search.rebuilds)
    s.close()


def test_the_change_log_is_pruned_behind_the_saved_files_and_a_reader_behind_it_rebuilds(tmp_path):
    path = tmp_path / "f.db"
    rng = np.random.default_rng(9)
    s = SQLiteStore(str(path), embedder_name=MODEL, dim=DIM, change_log_keep=10, **OPTIONS)
    first = [make_item(P1, f"harbour lantern {i}", id=f"a{i:03d}") for i in range(30)]
    put(s, first, unit_rows(rng, 30))
    s.vector_search(P1, unit_rows(rng, 1)[0], 5)
    other = _open(path)  # the files are taken: this handle indexes in memory
    other.vector_search(P1, unit_rows(rng, 1)[0], 5)  # and is now at the log's end
    later = [make_item(P1, f"maple river {i}", id=f"b{i:03d}") for i in range(40)]
    v = unit_rows(rng, 40)
    put(s, later, v)
    s.save_indexes()
    con = s.raw_connection()
    latest = con.execute("SELECT MAX(seq) FROM changes").fetchone()[0]
    assert con.execute("SELECT COUNT(*) FROM changes").fetchone()[0] == 10  # the newest ten stay
    assert con.execute("SELECT value FROM meta WHERE key='changes_pruned_through'").fetchone()[0] == str(latest - 10)
    # The other handle was 40 changes behind: it cannot replay them, so it rebuilds, and
    # finds what was written meanwhile.
    assert other.vector_search(P1, v[7], 1)[0][0] == "b007"
    assert any("does not reach back" in r for r in other._search.rebuilds)
    other.close()
    s.close()
    again = _open(path)  # the saved files are past the pruned rows: reopened without a rebuild
    assert again.vector_search(P1, v[7], 1)[0][0] == "b007"
    assert not any("does not reach back" in r for r in again._search.rebuilds)
    again.close()
