"""What importing zenbrain costs: heavy modules are imported where they are first used.

Each check runs in a fresh interpreter (this test process has imported everything already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
HEAVY = ("scipy", "onnxruntime", "torch", "transformers", "sentence_transformers", "tokenizers", "matplotlib")


def _modules_after(code: str) -> set[str]:
    """Top-level package names in sys.modules after running ``code`` in a new interpreter."""
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted({m.partition('.')[0] for m in sys.modules})))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.strip().splitlines()[-1]))


def test_import_zenbrain_imports_nothing_heavy():
    loaded = _modules_after("import zenbrain")
    assert not loaded & {*HEAVY, "numpy", "asyncio"}, sorted(loaded & {*HEAVY, "numpy", "asyncio"})


def test_opening_a_memory_imports_no_scipy_and_no_model_runtime(tmp_path):
    loaded = _modules_after(
        "from zenbrain import open_memory, Scope\n"
        f"m = open_memory({str(tmp_path / 'm.db')!r}, embedder='hashing:384')\n"
        "m.close()"
    )
    assert "numpy" in loaded  # the engine itself does run on numpy
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_building_the_cli_parser_imports_no_numpy():
    # The plugins are registered directly: entry points may describe another checkout.
    loaded = _modules_after(
        "import argparse\n"
        "from zenbrain.cli import build_parser\n"
        "from zenbrain.bench.commands import register as bench\n"
        "from zenbrain.experiments.commands import register as experiments\n"
        "p = build_parser()\n"
        "subs = argparse.ArgumentParser().add_subparsers()\n"
        "bench(subs); experiments(subs)\n"
        "p.format_help()"
    )
    assert not loaded & {*HEAVY, "numpy"}, sorted(loaded & {*HEAVY, "numpy"})


def test_lazy_names_are_the_public_api():
    import zenbrain

    assert set(zenbrain.__all__) == set(zenbrain._EXPORTS)
    for name in zenbrain.__all__:
        assert getattr(zenbrain, name) is not None
        assert name in dir(zenbrain)
    from zenbrain.api import open_memory

    assert zenbrain.open_memory is open_memory
    with pytest.raises(AttributeError, match="no attribute 'open_memroy'"):
        _ = zenbrain.open_memroy  # type: ignore[attr-defined]
