"""The real all-MiniLM-L6-v2, from the offline wheel. Needs the ``minilm`` extra.

The ONNX test exports the model into the user cache on its first run on a machine
(about 10-20 s; ``python -m zenbrain.providers.onnx`` does it ahead of time) and
takes about a second afterwards.
"""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.providers.base import Embedder

from .conftest import unit_rows

pytestmark = pytest.mark.minilm

SENTENCES = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar in front of an audience.",
    "The quarterly tax filing deadline is next Tuesday.",
    "",
]


def _check_semantics(vecs: np.ndarray) -> None:
    assert vecs.shape == (len(SENTENCES), 384) and vecs.dtype == np.float32
    assert unit_rows(vecs)
    paraphrase = float(vecs[0] @ vecs[1])
    unrelated = float(vecs[0] @ vecs[2])
    assert paraphrase > 0.6 and unrelated < 0.2 and paraphrase > unrelated + 0.4


@pytest.fixture(scope="module")
def st_vectors() -> np.ndarray:
    pytest.importorskip("sentence_transformers", reason="needs the minilm extra")
    from zenbrain.providers.minilm import MiniLMEmbedder

    emb = MiniLMEmbedder(batch_size=2)
    assert emb._model is None  # lazy
    vecs = emb.embed(SENTENCES)  # three batches
    assert isinstance(emb, Embedder) and emb.name == "minilm:all-MiniLM-L6-v2"
    np.testing.assert_allclose(emb.embed(SENTENCES[:1]), vecs[:1], atol=1e-5)
    return vecs


def test_sentence_transformers_minilm(st_vectors):
    _check_semantics(st_vectors)


def test_onnx_minilm_agrees_with_sentence_transformers(st_vectors):
    pytest.importorskip("onnxruntime", reason="needs the minilm extra")
    from zenbrain.providers.onnx import OnnxMiniLMEmbedder

    emb = OnnxMiniLMEmbedder()  # int8, the default embedder
    vecs = emb.embed(SENTENCES)
    _check_semantics(vecs)
    cos = (vecs * st_vectors).sum(axis=1)
    assert cos.min() > 0.95, cos
