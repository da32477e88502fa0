"""The index libraries load beside the embedder's runtime in either order (some usearch
releases crash the process when onnxruntime is imported after them)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("order", [("usearch.index", "onnxruntime", "tantivy"), ("onnxruntime", "tantivy", "usearch.index")])
def test_index_libraries_and_onnxruntime_load_together(order: tuple[str, ...]) -> None:
    pytest.importorskip("onnxruntime")
    code = "; ".join(f"import {m}" for m in order) + "; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-500:])
