from pathlib import Path

import pytest
from index_helpers import SQLiteSource


@pytest.fixture
def source(tmp_path: Path) -> SQLiteSource:
    return SQLiteSource(tmp_path / "store.db")
