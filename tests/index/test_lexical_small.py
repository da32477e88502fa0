"""Small partitions' lexical indexes, held in memory: the same ranking as tantivy's, no
files, built on first search, moved onto disk once grown, erased with nothing left."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from index_helpers import OTHER, PART, SQLiteSource, make_rows, text_of

from zenbrain.index import IndexSet, lexical_set
from zenbrain.index.lexical import LexicalIndex
from zenbrain.index.lexical_small import SmallLexical

QUERIES = ("apple harbor", "river silver timber", "item42 zephyr", "where is the quokka", "ocean ocean pepper")


def test_the_same_ranking_and_scores_as_tantivy(tmp_path: Path) -> None:
    texts = [(f"m{i:04d}", text_of(i)) for i in range(400)] + [("long", " ".join(text_of(i) for i in range(7)))]
    small, disk = SmallLexical(), LexicalIndex(tmp_path / "lex")
    small.add_all(PART, texts)
    disk.add_all(PART, texts)
    disk.commit()
    for q in QUERIES:
        a, b = small.search(PART, q, 10), disk.search(PART, q, 10)
        assert [m for m, _ in a][:3] == [m for m, _ in b][:3], q
        scores = dict(b)
        for mid, s in a:  # tantivy keeps each length in one byte, so scores differ a little
            if mid in scores:
                assert s == pytest.approx(scores[mid], rel=0.05)
    disk.close()


def test_filters_and_id_lists_apply_as_on_disk(tmp_path: Path) -> None:
    small = SmallLexical()
    small.add_all(PART, [(f"m{i}", f"apple note {i}") for i in range(200)])
    keep_even = lambda ids: [int(m[1:]) % 2 == 0 for m in ids]
    got = small.search(PART, "apple", 30, keep_even)
    assert len(got) == 30 and all(int(m[1:]) % 2 == 0 for m, _ in got)
    assert [m for m, _ in small.search(PART, "apple", 5, only=["m3", "m7", "nope"])] == ["m3", "m7"]
    assert small.search(PART, "apple", 5, only=["nope"]) == []


def test_a_small_partition_leaves_no_files_and_is_built_on_first_search(source: SQLiteSource,
                                                                         tmp_path: Path) -> None:
    source.put(PART, make_rows(30))
    source.put(OTHER, make_rows(20, start=100))
    directory = tmp_path / "idx"
    idx = IndexSet(source, directory, None)
    first = idx.lexical_search(PART, "apple harbor", 5)
    assert isinstance(idx.lexical.shard(PART), SmallLexical)
    idx.close()
    lexical_files = [p for p in (directory / "lexical").rglob("*") if p.is_file()] \
        if (directory / "lexical").exists() else []
    assert lexical_files == []
    again = IndexSet(source, directory, None)
    assert PART not in again.lexical  # nothing read on open
    assert again.lexical_search(PART, "apple harbor", 5) == first
    assert again.rebuilds == []
    again.close()


def test_a_partition_that_grows_moves_onto_disk(source: SQLiteSource, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_set, "SMALL_MAX", 50)
    source.put(PART, make_rows(40))
    idx = IndexSet(source, tmp_path / "idx", None)
    idx.lexical_search(PART, "apple", 1)
    assert isinstance(idx.lexical.shard(PART), SmallLexical)
    source.put(PART, make_rows(20, start=40))
    source.put(PART, [replace(make_rows(1, start=59)[0], content="the quokka swam past the harbor")])
    assert [m for m, _ in idx.lexical_search(PART, "quokka", 3)] == ["m000059"]
    assert isinstance(idx.lexical.shard(PART), LexicalIndex)
    idx.close()
    assert (tmp_path / "idx" / "lexical").exists() and any((tmp_path / "idx" / "lexical").rglob("meta.json"))
    again = IndexSet(source, tmp_path / "idx", None)
    assert [m for m, _ in again.lexical_search(PART, "quokka", 3)] == ["m000059"] and again.rebuilds == []
    again.close()


def test_an_erased_text_leaves_nothing_in_a_small_index(source: SQLiteSource) -> None:
    rows = make_rows(30)
    source.put(PART, [replace(rows[0], content="the password is zyxquokkafoo"), *rows[1:]])
    idx = IndexSet(source, None, None)
    assert [m for m, _ in idx.lexical_search(PART, "zyxquokkafoo", 3)] == ["m000000"]
    source.delete(PART, ["m000000"])
    assert idx.lexical_search(PART, "zyxquokkafoo", 3) == []
    shard = idx.lexical.shard(PART)
    assert isinstance(shard, SmallLexical) and not any(t.startswith("zyxquokka") for t in shard._postings)
    assert idx.lexical.with_deleted_documents() == []  # nothing to rebuild
    idx.close()


def test_a_tantivy_index_holds_one_partition(tmp_path: Path) -> None:
    """Its query requires no partition (a pure OR that tantivy prunes), so it must never hold
    another partition's texts, nor answer for another partition."""
    disk = LexicalIndex(tmp_path / "lex", partition=PART)
    disk.add_all(PART, [("m1", "apple harbor"), ("m2", "river apple")])
    disk.commit()
    with pytest.raises(ValueError):
        disk.add_all(OTHER, [("o1", "apple")])
    assert [m for m, _ in disk.search(PART, "apple", 5)] and disk.search(OTHER, "apple", 5) == []
    disk.close()
