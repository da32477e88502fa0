"""Provider spec parsing and construction; nothing here loads a model or opens a socket."""

from __future__ import annotations

import pytest

from zenbrain.errors import ConfigError
from zenbrain.providers.anthropic import AnthropicChat
from zenbrain.providers.cache import CachedEmbedder
from zenbrain.providers.factory import (
    DEFAULT_EMBEDDER,
    make_chat,
    make_embedder,
    parse_spec,
)
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.providers.minilm import MiniLMEmbedder
from zenbrain.providers.onnx import OnnxMiniLMEmbedder
from zenbrain.providers.openai_compat import OpenAICompatChat, OpenAICompatEmbedder


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("minilm", ("minilm", "", None)),
        ("hashing:128", ("hashing", "128", None)),
        ("openai:text-embedding-3-small@https://host/v1", ("openai", "text-embedding-3-small", "https://host/v1")),
        ("ollama:qwen2.5:7b", ("ollama", "qwen2.5:7b", None)),
        (" OpenAI:gpt-4o-mini@http://127.0.0.1:8000/v1 ", ("openai", "gpt-4o-mini", "http://127.0.0.1:8000/v1")),
    ],
)
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec", ["", "   ", "openai:m@", "openai:m@localhost:1234"])
def test_parse_spec_rejects(spec):
    with pytest.raises(ConfigError):
        parse_spec(spec)


def test_local_embedders_are_lazy():
    assert DEFAULT_EMBEDDER == "minilm-onnx"
    default = make_embedder()
    assert isinstance(default, OnnxMiniLMEmbedder) and default.quantize
    assert default.name == "minilm-onnx-int8:all-MiniLM-L6-v2" and default.dim == 384
    assert default._session is None  # nothing loaded yet
    assert make_embedder("onnx").name == default.name
    fp32 = make_embedder("minilm-onnx:fp32")
    assert isinstance(fp32, OnnxMiniLMEmbedder) and not fp32.quantize and fp32.name == "minilm-onnx:all-MiniLM-L6-v2"
    st = make_embedder("minilm")
    assert isinstance(st, MiniLMEmbedder) and st.name == "minilm:all-MiniLM-L6-v2" and st._model is None


def test_hashing_specs():
    h = make_embedder("hashing:128")
    assert isinstance(h, HashingEmbedder) and h.dim == 128
    assert make_embedder("hashing").dim == 384
    with pytest.raises(ConfigError, match="valid forms"):
        make_embedder("hashing:wide")
    with pytest.raises(ConfigError):
        make_embedder("hashing:4")


def test_http_embedders_and_keys_from_env_at_call_time(monkeypatch):
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder("openai:text-embedding-3-small", env={})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-late")  # set after import: still seen
    emb = make_embedder("openai:text-embedding-3-small")
    assert isinstance(emb, OpenAICompatEmbedder)
    assert emb.api_key == "sk-late" and emb.base_url == "https://api.openai.com/v1"
    assert emb.name == "openai:text-embedding-3-small"
    local = make_embedder("openai:bge@http://127.0.0.1:9/v1/", env={})
    assert local.api_key is None and local.base_url == "http://127.0.0.1:9/v1"


def test_ollama_urls():
    emb = make_embedder("ollama:nomic-embed-text", env={})
    assert emb.base_url == "http://localhost:11434/v1" and emb.name == "ollama:nomic-embed-text"
    assert make_embedder("ollama:nomic-embed-text", env={"OLLAMA_HOST": "10.0.0.5"}).base_url == "http://10.0.0.5:11434/v1"
    assert make_embedder("ollama:m@http://box:1234/v1", env={}).base_url == "http://box:1234/v1"
    chat = make_chat("ollama:qwen2.5:7b", env={"OLLAMA_HOST": "http://gpu:8080"})
    assert isinstance(chat, OpenAICompatChat) and chat.model == "qwen2.5:7b" and chat.base_url == "http://gpu:8080/v1"


def test_make_chat():
    chat = make_chat("openai:gpt-4o-mini", env={"OPENAI_API_KEY": "k"})
    assert isinstance(chat, OpenAICompatChat) and chat.model == "gpt-4o-mini" and chat.name == "openai:gpt-4o-mini"
    claude = make_chat("anthropic:claude-sonnet-4-5", env={"ANTHROPIC_API_KEY": "ak"})
    assert isinstance(claude, AnthropicChat) and claude.api_key == "ak" and claude.base_url == "https://api.anthropic.com"
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_chat("anthropic:claude-sonnet-4-5", env={})
    local = make_chat("anthropic:c@http://127.0.0.1:5/", env={})
    assert local.api_key is None and local.base_url == "http://127.0.0.1:5"


@pytest.mark.parametrize("spec", ["bert", "minilm:other-model", "onnx:int4", "minilm@http://x/v1", "openai", "ollama:"])
def test_unknown_embedder_specs_list_valid_forms(spec):
    with pytest.raises(ConfigError, match="valid forms.*minilm-onnx.*hashing.*openai:MODEL"):
        make_embedder(spec, env={"OPENAI_API_KEY": "k"})


@pytest.mark.parametrize("spec", ["gemini:pro", "anthropic", "hashing:384"])
def test_unknown_chat_specs_list_valid_forms(spec):
    with pytest.raises(ConfigError, match="valid forms.*anthropic:MODEL"):
        make_chat(spec, env={})


def test_cache_option_wraps(tmp_path):
    emb = make_embedder("hashing:32", cache=tmp_path / "c.db")
    assert isinstance(emb, CachedEmbedder) and emb.name == "hashing:32"
    assert emb.embed(["x"]).shape == (1, 32)


def test_importing_providers_loads_no_heavy_modules(fresh_interpreter):
    assert fresh_interpreter["heavy"] == []
