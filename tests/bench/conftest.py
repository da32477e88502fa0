"""Fixtures for the benchmark tests: small data files in tmp_path."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# The tests import their data helpers as ``bench_data`` whatever pytest's import mode.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from bench_data import lme_data, locomo_data


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    p = tmp_path / "locomo_dev.json"
    p.write_text(json.dumps(locomo_data()), encoding="utf-8")
    return p


@pytest.fixture
def lme_file(tmp_path: Path) -> Path:
    p = tmp_path / "longmemeval_s.json"
    p.write_text(json.dumps(lme_data()), encoding="utf-8")
    return p
