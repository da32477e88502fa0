"""Fixtures of the SQLite cache tests: ``store`` here is one SQLite store, on a file and
in memory, instead of the backend-parametrised ``store`` of the contract suite.
"""

from __future__ import annotations

import pytest
from item_cache_helpers import open_store


@pytest.fixture
def loc(tmp_path):
    return str(tmp_path / "cache.db")


@pytest.fixture(params=["file", "memory"])
def store(request, loc):
    s = open_store(loc if request.param == "file" else ":memory:")
    yield s
    s.close()


@pytest.fixture
def file_store(loc):
    s = open_store(loc)
    yield s
    s.close()


@pytest.fixture
def oracle(file_store, loc):
    """Another connection to ``file_store``'s file that decodes every row it reads (no cache)."""
    s = open_store(loc, item_cache_size=0)
    yield s
    s.close()
