"""HashingEmbedder: the deterministic test double."""

from __future__ import annotations

import numpy as np

from zenbrain.providers.base import Embedder
from zenbrain.providers.hashing import HashingEmbedder

from .conftest import FRESH_TEXTS, unit_rows


def test_shape_dtype_and_unit_rows():
    emb = HashingEmbedder(96)
    assert isinstance(emb, Embedder)
    out = emb.embed(["one text", "another, longer text about cats"])
    assert out.shape == (2, 96) and out.dtype == np.float32 and unit_rows(out)
    assert emb.embed([]).shape == (0, 96)


def test_deterministic_within_and_across_processes(fresh_interpreter):
    a = HashingEmbedder(384).embed(FRESH_TEXTS)
    np.testing.assert_array_equal(a, HashingEmbedder(384).embed(FRESH_TEXTS))
    other = np.frombuffer(bytes.fromhex(fresh_interpreter["hashing"]), dtype=np.float32).reshape(a.shape)
    np.testing.assert_array_equal(other, a)


def test_shared_words_mean_higher_similarity():
    emb = HashingEmbedder(384)
    q, near, far = emb.embed(["when did caroline paint", "caroline painted on tuesday", "stock prices fell sharply"])
    assert q @ near > q @ far
