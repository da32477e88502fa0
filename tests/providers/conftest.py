"""Provider tests may talk to 127.0.0.1 only: any other connection fails loudly."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import numpy as np
import pytest

from zenbrain.providers.hashing import HashingEmbedder

_LOCAL = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def _refuse_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0] if isinstance(address, tuple) else address
            if host not in _LOCAL:
                raise OSError(f"network access refused in tests: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


class CountingEmbedder:
    """HashingEmbedder that records every call, to prove what a cache skipped."""

    def __init__(self, dim: int = 64) -> None:
        self.inner = HashingEmbedder(dim)
        self.name = self.inner.name
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts_embedded(self) -> int:
        return sum(len(c) for c in self.calls)


@pytest.fixture
def counting() -> CountingEmbedder:
    return CountingEmbedder()


def unit_rows(x: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5))


_FRESH = """
import json, sys
import zenbrain.providers.factory, zenbrain.providers.onnx, zenbrain.providers.minilm
from zenbrain.providers.hashing import HashingEmbedder
heavy = [m for m in ("torch", "sentence_transformers", "transformers", "onnxruntime") if m in sys.modules]
vec = HashingEmbedder(384).embed(json.loads(sys.argv[1])).tobytes().hex()
print(json.dumps({"heavy": heavy, "hashing": vec}))
"""
FRESH_TEXTS = ["Caroline went to the support group", "Melanie painted a sunrise"]


@pytest.fixture(scope="session")
def fresh_interpreter() -> dict:
    """One new interpreter (own hash seed) that imports the providers and embeds FRESH_TEXTS."""
    out = subprocess.run(
        [sys.executable, "-c", _FRESH, json.dumps(FRESH_TEXTS)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    return json.loads(out.stdout)
