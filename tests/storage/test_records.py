"""Partition records (the kv table): a large record costs only its own reads."""

from __future__ import annotations

import sys

import pytest

from zenbrain.storage.sqlite import SQLiteStore, connections

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/io")


def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_reading_small_records_does_not_read_a_large_record_of_another_user(tmp_path, monkeypatch):
    # A sleep keeps its spectral cache as one record (35 MB at a million memories). Lookups
    # of other records, of this user or any other, must not read it: in a table whose b-tree
    # key is the whole row, every search that compared against it read all of it.
    # A page cache smaller than the record, so that reading it shows as reads of the file
    # (with the record in the cache it costs a copy of all of it instead).
    monkeypatch.setattr(connections, "WRITER_CACHE_KIB", 1024)
    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name="m", dim=4)
    big = "x" * 8_000_000
    with s.transaction() as tx:
        for user in ("ann", "bob", "cy"):
            tx.kv_put((user, "a"), {f"k{i}": i for i in range(40)})
        tx.kv_put(("bob", "a"), {"spectral_cache": big, "topic_vector": "00ff"})
    keys = [f"k{i}" for i in range(40)] + ["topic_vector", "speakers"]
    s.kv_get_many(("ann", "a"), keys)
    before = _bytes_read()
    for _ in range(20):
        for user in ("ann", "bob", "cy"):
            got = s.kv_get_many((user, "a"), keys)
            assert got["k7"] == 7
        with s.transaction() as tx:
            tx.kv_put(("cy", "a"), {"topic_vector": "0a0b"})
    assert s.kv_get_many(("bob", "a"), ["topic_vector"]) == {"topic_vector": "00ff"}
    # 60 reads and 20 writes of small records: a few pages each, nowhere near one 8 MB value.
    assert _bytes_read() - before < 8_000_000
    s.close()
