"""IndexSet: change-log replay, persistence round trip, rebuild of stale files, lexical search."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from index_helpers import OTHER, PART, SQLiteSource, clustered_vectors, make_rows

from zenbrain.index import AnnParams, IndexSet, lexical_set
from zenbrain.storage.base import Filter

ANN = AnnParams(ann_min_rows=300, exact_max_allowed=50, exact_ratio=1.0, tail_max=128)


@pytest.fixture(autouse=True)
def lexical_on_disk(monkeypatch):
    """Every partition's lexical index in tantivy, however small (these tests are about
    its files, commits and replay; tests/index/test_lexical_small.py has the in-memory one)."""
    monkeypatch.setattr(lexical_set, "SMALL_MAX", 0)


def ids(result: list[tuple[str, float]]) -> list[str]:
    return [mid for mid, _ in result]


def fill(source: SQLiteSource, n: int = 1000) -> np.ndarray:
    vecs = clustered_vectors(n, seed=3)
    source.put(PART, make_rows(n, vectors=vecs, contexts=("home", "work")))
    return vecs


def test_uncommitted_texts_of_other_partitions_count_nowhere(source: SQLiteSource) -> None:
    """A search scores its own partition's uncommitted texts with its own partition's
    statistics: another partition's texts, committed or not, neither count in them nor
    hide anything of this one."""
    fill(source, 200)
    source.put(OTHER, make_rows(50, start=2000))
    idx = IndexSet(source, None, ANN)
    idx.lexical_search(PART, "apple", 1)
    idx.lexical_search(OTHER, "apple", 1)
    idx.lexical.commit()
    mine = idx.lexical_search(PART, "pelican harbor", 5)
    source.put(OTHER, [replace(r, content=f"a pelican on the harbor wall {i}")
                       for i, r in enumerate(make_rows(40, start=3000))])
    source.put(PART, [replace(make_rows(1, start=900)[0], content="the pelican flew over the harbor")])
    found = idx.lexical_search(PART, "pelican harbor", 5)
    assert ids(found)[0] == "m000900" and all(m.startswith("m000") and m < "m002000" for m in ids(found))
    assert ids(found)[1:] == ids(mine)[:4]  # the committed texts as before, behind the new one
    assert idx.lexical.shard(PART)._statistics(["pelican"])[1]["pelican"] == 1  # this partition's one text
    assert idx.lexical.shard(OTHER)._statistics(["pelican"])[1]["pelican"] == 40
    idx.lexical.commit()
    after = dict(idx.lexical_search(PART, "pelican harbor", 5))
    assert after["m000900"] == pytest.approx(dict(found)["m000900"], rel=0.1)
    idx.close()


def test_a_partitions_lexical_scores_do_not_depend_on_other_partitions(source: SQLiteSource, tmp_path) -> None:
    """BM25's statistics are each partition's own: what another user stored (here, many
    texts with the query's words) changes nothing in the scores this one reads."""
    fill(source, 200)
    source.put(OTHER, make_rows(30, start=2000))
    quiet = IndexSet(source, None, ANN)
    before = quiet.lexical_search(PART, "pelican harbor item12", 10)
    quiet.close()
    source.put(OTHER, [replace(r, content=f"pelican harbor item12 note {i}")
                       for i, r in enumerate(make_rows(300, start=3000))])
    for directory in (None, tmp_path / "idx"):
        busy = IndexSet(source, directory, ANN)
        busy.lexical_search(OTHER, "pelican", 1)
        assert busy.lexical_search(PART, "pelican harbor item12", 10) == before
        busy.close()


def test_follows_the_change_log(source: SQLiteSource) -> None:
    vecs = fill(source)
    idx = IndexSet(source, None, ANN)
    q = vecs[7]
    assert ids(idx.vector_search(PART, q, 1)) == ["m000007"]
    assert idx.partition(PART).graph is not None
    # Another writer deletes, archives and changes a memory: the next search sees it.
    source.delete(PART, ["m000007"])
    source.update(PART, ["m000008"], archived=True)
    source.update(PART, ["m000009"], content="quokka lives here", content_hash="e" * 40, vector=-q)
    got = ids(idx.vector_search(PART, q, 1000))
    assert "m000007" not in got and "m000008" not in got
    assert ids(idx.vector_search(PART, -q, 1)) == ["m000009"]
    assert ids(idx.lexical_search(PART, "where does the quokka live", 5)) == ["m000009"]
    assert ids(idx.lexical_search(PART, "item7", 5)) == []
    assert ids(idx.lexical_search(PART, "item8", 5)) == []  # archived: filtered out
    assert ids(idx.lexical_search(PART, "item8", 5, Filter(include_archived=True))) == ["m000008"]


def test_partitions_are_isolated(source: SQLiteSource) -> None:
    fill(source, 50)
    source.put(OTHER, [replace(make_rows(1, start=5000)[0], content="secret zebra plan")])
    idx = IndexSet(source, None, ANN)
    assert ids(idx.lexical_search(PART, "zebra", 5)) == []
    assert ids(idx.lexical_search(OTHER, "zebra", 5)) == ["m005000"]
    assert "m005000" not in ids(idx.vector_search(PART, make_rows(1, start=5000)[0].vector, 100))


def test_lexical_ranks_rare_words_and_filters(source: SQLiteSource) -> None:
    fill(source, 300)
    source.update(PART, ["m000042"], content="the lighthouse keeper fed the pelican", content_hash="a" * 40)
    idx = IndexSet(source, None, ANN)
    assert ids(idx.lexical_search(PART, "pelican at the lighthouse", 3))[0] == "m000042"
    # Contexts alternate home/work: a context filter keeps only its memories.
    work = idx.lexical_search(PART, "apple banana", 20, Filter(contexts=frozenset({"work"})))
    assert len(work) == 20 and all(int(m[1:]) % 2 == 1 for m in ids(work))
    assert idx.lexical_search(PART, "the and of", 5) == []  # stopwords only


def test_persistence_round_trip_and_replay(source: SQLiteSource, tmp_path: Path) -> None:
    vecs = fill(source)
    d = tmp_path / "store.db.idx"
    idx = IndexSet(source, d, ANN)
    before = idx.vector_search(PART, vecs[3], 10, Filter(contexts=frozenset({"home"})))
    idx.close()
    assert (d / "manifest.json").exists()
    # Changes made while no index was open are replayed on reopening.
    source.delete(PART, ["m000003"])
    source.put(PART, make_rows(5, start=1000, vectors=np.tile(vecs[3], (5, 1)), contexts=("home", "work")))
    again = IndexSet(source, d, ANN)
    part = again.partition(PART)
    assert again.rebuilds == []
    assert part.graph is not None and part._graph_path is not None  # the graph file, memory-mapped
    got = again.vector_search(PART, vecs[3], 10, Filter(contexts=frozenset({"home"})))
    assert "m000003" not in ids(again.vector_search(PART, vecs[3], 1000))
    assert ids(got)[:3] == ["m001000", "m001002", "m001004"]  # the new rows, home context
    assert ids(got)[3:] == ids(before)[:7]  # the rest as before the files were written
    assert ids(again.lexical_search(PART, "item1004", 3)) == ["m001004"]
    # The graph, loaded read-only, takes new rows once the tail is long enough.
    source.put(PART, make_rows(200, start=2000, vectors=clustered_vectors(200, seed=9)))
    again.sync()
    assert part.graph_rows == part.n
    again.close()


def test_lexical_files_of_the_earlier_layout_go_and_the_vector_files_stay(source: SQLiteSource,
                                                                          tmp_path: Path) -> None:
    """Files written when one lexical index held every partition: that index is removed and
    each partition's built on its first search; the vector partitions load from their files."""
    vecs = fill(source)
    d = tmp_path / "store.db.idx"
    idx = IndexSet(source, d, ANN)
    idx.lexical_search(PART, "apple", 1)
    idx.close()
    manifest = json.loads((d / "manifest.json").read_text())
    del manifest["lexical_layout"]  # as the earlier layout's manifest
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "lexical" / "meta.json").write_text("{}")
    (d / "lexical.keys.npz").write_bytes(b"old")
    again = IndexSet(source, d, ANN)
    assert again.rebuilds == ["lexical index of the earlier layout: each partition's rebuilt on first search"]
    assert not (d / "lexical.keys.npz").exists() and not (d / "lexical" / "meta.json").exists()
    part = again.partition(PART)
    assert part._graph_path is not None and len(again.rebuilds) == 1  # the vector files, not rebuilt
    assert ids(again.vector_search(PART, vecs[3], 1)) == ["m000003"]
    assert ids(again.lexical_search(PART, "item17", 3)) == ["m000017"]
    again.close()
    third = IndexSet(source, d, ANN)
    assert third.rebuilds == [] and ids(third.lexical_search(PART, "item17", 3)) == ["m000017"]
    third.close()


def test_second_process_on_the_same_directory_works_privately(source: SQLiteSource, tmp_path: Path) -> None:
    vecs = fill(source, 100)
    first = IndexSet(source, tmp_path / "idx", ANN)
    second = IndexSet(source, tmp_path / "idx", ANN)
    assert second.directory is None and second.rebuilds
    source.delete(PART, ["m000001"])
    for idx in (first, second):
        assert ids(idx.vector_search(PART, vecs[1], 1)) != ["m000001"]
        assert ids(idx.lexical_search(PART, "item1", 1)) == []
    second.close()
    first.close()
    assert (tmp_path / "idx" / "manifest.json").exists()


@pytest.mark.parametrize("damage", ["store_id", "embedder", "corrupt", "missing", "lost_change", "log_behind"])
def test_stale_files_are_rebuilt(source: SQLiteSource, tmp_path: Path, damage: str) -> None:
    vecs = fill(source)
    d = tmp_path / "idx"
    idx = IndexSet(source, d, ANN)
    idx.vector_search(PART, vecs[0], 1)
    idx.close()
    manifest = json.loads((d / "manifest.json").read_text())
    stem = next(iter(manifest["partitions"]))
    reader: SQLiteSource = source
    if damage == "store_id":
        reader = SQLiteSource(tmp_path / "other.db", store_id="another")
        reader.put(PART, make_rows(10, vectors=-vecs[:10]))
    elif damage == "embedder":
        source.embedder_name = "other-embedder"
    elif damage == "corrupt":
        (d / f"{stem}.cols.npz").write_bytes(b"not a zip")
    elif damage == "missing":
        (d / f"{stem}.vec.npy").unlink()
    elif damage == "lost_change":
        # Every vector changes but the manifest claims to have seen it: the sample check
        # against the store catches the disagreement.
        source.put(PART, [replace(r, content_hash="b" + r.content_hash[1:]) for r in make_rows(1000, vectors=-vecs)])
        manifest["lexical_seq"] = source.log_seq()
        manifest["partitions"][stem]["seq"] = source.log_seq()
        (d / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "log_behind":
        manifest["lexical_seq"] = manifest["partitions"][stem]["seq"] = source.log_seq() + 100
        (d / "manifest.json").write_text(json.dumps(manifest))
    again = IndexSet(reader, d, ANN)
    expect_vecs = -vecs if damage in ("store_id", "lost_change") else vecs
    assert ids(again.vector_search(PART, expect_vecs[0], 1)) == ["m000000"]
    assert again.rebuilds, "stale index files were used"
    n = 10 if damage == "store_id" else 1000
    assert len(again.partition(PART)) == n
    again.close()


def test_uncommitted_changes_are_searched_exactly(source: SQLiteSource) -> None:
    """Changes wait for a batched commit; meanwhile the index hides the old texts and
    scores the new ones itself, as tantivy scores them once committed."""
    fill(source, 300)
    idx = IndexSet(source, None, ANN)
    idx.lexical_search(PART, "apple", 1)
    committed = idx.lexical.shard(PART).index.searcher().num_docs
    source.update(PART, ["m000010"], content="a pelican nests on the harbor wall", content_hash="c" * 40)
    source.put(PART, [replace(make_rows(1, start=900)[0], content="the pelican flew over the harbor")])
    source.delete(PART, ["m000011"])
    before = idx.lexical_search(PART, "pelican harbor", 5)
    assert idx.lexical.shard(PART).index.searcher().num_docs == committed  # nothing committed yet
    assert ids(before)[:2] in (["m000900", "m000010"], ["m000010", "m000900"])
    assert ids(idx.lexical_search(PART, "item10", 5)) == []  # the replaced text is hidden
    assert ids(idx.lexical_search(PART, "item11", 5)) == []  # the deleted memory too
    idx.lexical.commit()
    after = dict(idx.lexical_search(PART, "pelican harbor", 5))
    for mid, score in before[:2]:
        assert score == pytest.approx(after[mid], rel=0.1)
    assert ids(idx.lexical_search(PART, "item10", 5)) == [] and ids(idx.lexical_search(PART, "item11", 5)) == []
    idx.close()
