"""The package type-checks with the project's mypy configuration (pyproject.toml, [tool.mypy]).

mypy resolves the optional extras' imports too (FastAPI, MCP, Chroma, torch, ...), so this
expects the environment CI builds: ``pip install -e ".[all]"``. A first run analyses those
libraries and takes about a minute of CPU; mypy's cache (``.mypy_cache``) makes a rerun
take seconds.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_reports_nothing():
    run = subprocess.run([sys.executable, "-m", "mypy"], check=False, capture_output=True, text=True, cwd=ROOT,
                         timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
