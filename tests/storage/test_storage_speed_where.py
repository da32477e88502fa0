"""A filter's SQL is built once per filter; the cached clause equals a fresh one."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from zenbrain.model import Layer
from zenbrain.storage import sqlite as sqlite_store
from zenbrain.storage.base import Filter
from zenbrain.storage.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_helpers import DIM, MODEL, P1, P2, random_filter


def test_cached_filter_sql_equals_a_fresh_build(tmp_path):
    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name=MODEL, dim=DIM)
    rng = np.random.default_rng(0)
    ids = [f"m{i}" for i in range(30)]
    for _ in range(300):
        flt = random_filter(rng, ids)
        for part in (P1, P2):
            for alias, use in (("", True), ("m", True), ("m", False)):
                fresh_sql, fresh_args = sqlite_store._filter_sql.__wrapped__(flt, alias, use)
                assert s._where(part, flt, alias, use_indexes=use) == (fresh_sql, [*part, *fresh_args])
    s.close()


def test_a_filter_with_unhashable_values_still_works(tmp_path):
    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name=MODEL, dim=DIM)
    flt = Filter(layers={Layer.SEMANTIC}, contexts={"a", "b"})  # sets, not frozensets
    sql, args = s._where(P1, flt)
    assert args == [*P1, "semantic", "a", "b"] and "layer IN (?)" in sql
    assert s.query(P1, flt) == []
    s.close()
