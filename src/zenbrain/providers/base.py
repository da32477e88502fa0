"""Provider protocols. One method each; implementations live beside this file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass
class TokenUsage:
    """Token counts reported by a provider, summed over calls.

    ``calls`` counts successful requests. Providers that do not report usage leave
    the token fields at zero.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int, completion_tokens: int = 0) -> None:
        self.prompt_tokens += int(prompt_tokens or 0)
        self.completion_tokens += int(completion_tokens or 0)
        self.calls += 1

    def copy(self) -> TokenUsage:
        return TokenUsage(self.prompt_tokens, self.completion_tokens, self.calls)

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        """Usage between two snapshots: ``after - before``."""
        return TokenUsage(
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.calls - other.calls,
        )


@dataclass
class StructuredReply:
    """A chat model's answer in a JSON schema: the decoded object, the call's token
    usage and the model that answered (as the provider named it)."""

    data: dict[str, Any]
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = ""



@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed width.

    ``name`` identifies model and settings: cached vectors are keyed by it, so two
    embedders with different names never share cache entries.
    """

    # Read-only in the protocol, so plain attributes and properties (wrappers) both conform.
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An embedder that encodes a search query differently from a stored text (e5 models
    prefix "query: " and "passage: "). ``embed`` stays the one for stored texts, so any
    code that only knows :class:`Embedder` keeps storing what it stored before."""

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of texts used as search queries; same shape rules as ``embed``."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Query vectors: ``embed_query`` where the embedder has one, else ``embed``."""
    query = getattr(embedder, "embed_query", None)
    return query(texts) if callable(query) else embedder.embed(texts)


@runtime_checkable
class ChatModel(Protocol):
    """A chat-completion LLM: messages in, text out."""

    name: str

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        ...


@runtime_checkable
class StructuredChatModel(ChatModel, Protocol):
    """A chat model that can answer in a JSON schema, in its provider's structured-output
    form (OpenAI ``response_format``, Anthropic forced tool use)."""

    def complete_json(
        self,
        messages: Sequence[dict[str, str]],
        schema: Mapping[str, Any],
        *,
        name: str = "response",
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> StructuredReply: ...


def releases_gil(embedder: Embedder) -> bool:
    """Whether an embedder says its work runs outside the GIL (attribute ``releases_gil``;
    absent: no, as for a pure-Python embedder, which a second thread would only slow)."""
    return bool(getattr(embedder, "releases_gil", False))


def normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms
