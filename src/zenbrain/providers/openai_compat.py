"""Clients for OpenAI-compatible HTTP APIs: embeddings and chat completions.

The same wire format is served by OpenAI, Azure-style gateways, vLLM, LM Studio,
llama.cpp's server and Ollama (``http://localhost:11434/v1``). Requests are
synchronous (``httpx``), retried with exponential backoff on 429 and 5xx answers
and on transport errors, and every failure surfaces as :class:`ProviderError`
with the status and the start of the body (never the API key).

This module also holds the small HTTP helper and the :class:`TokenUsage` counter
that the Anthropic client shares.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ProviderError
from .base import StructuredReply, TokenUsage, normalize_rows

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_MAX_RETRY_AFTER = 60.0


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx is a core dependency
        raise ProviderError("HTTP providers need httpx: pip install httpx") from exc
    return httpx


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class HTTPClientMixin:
    """Lazily created ``httpx.Client`` plus a JSON POST with retries.

    Subclasses set ``base_url``, ``timeout``, ``max_retries``, ``backoff`` and
    implement ``_headers()``.
    """

    base_url: str
    timeout: float
    max_retries: int
    backoff: float
    max_backoff: float = 20.0

    _client: Any = None
    _client_lock: threading.Lock

    def _headers(self) -> dict[str, str]:  # pragma: no cover - overridden
        return {}

    def _http(self) -> Any:
        with self._client_lock:
            if self._client is None:
                httpx = _import_httpx()
                self._client = httpx.Client(timeout=self.timeout, headers=self._headers())
            return self._client

    def close(self) -> None:
        """Close the underlying HTTP connection pool (the client reopens on next use)."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _delay(self, attempt: int) -> float:
        return min(self.max_backoff, self.backoff * (2.0**attempt))

    def _post_json(self, path: str, payload: dict[str, Any], *, what: str) -> dict[str, Any]:
        """POST ``payload`` to ``base_url + path`` and return the decoded JSON body.

        Retries up to ``max_retries`` times on transport errors and on statuses in
        ``RETRY_STATUSES`` (honouring ``Retry-After``); other 4xx fail at once.
        """
        httpx = _import_httpx()
        url = self.base_url + path
        client = self._http()
        attempts = self.max_retries + 1
        last = ""
        for attempt in range(attempts):
            try:
                resp = client.post(url, json=payload)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                if attempt + 1 < attempts:
                    time.sleep(self._delay(attempt))
                    continue
                break
            if resp.status_code < 300:
                try:
                    body = resp.json()
                except ValueError as exc:
                    raise ProviderError(f"{what}: {url} returned a body that is not JSON: {resp.text[:200]!r}") from exc
                if not isinstance(body, dict):
                    raise ProviderError(f"{what}: {url} returned JSON that is not an object")
                return body
            last = f"HTTP {resp.status_code}: {_error_text(resp)}"
            if resp.status_code not in RETRY_STATUSES:
                raise ProviderError(f"{what}: {url} answered {last}")
            if attempt + 1 < attempts:
                wait = _retry_after(resp.headers)
                time.sleep(self._delay(attempt) if wait is None else wait)
        raise ProviderError(f"{what}: {url} failed after {attempts} attempt(s); last error: {last}")


def _error_text(resp: Any) -> str:
    """The provider's error message if the body has one, else the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
    return resp.text[:300]


def _init_http(obj: HTTPClientMixin, base_url: str, timeout: float, max_retries: int, backoff: float) -> None:
    if not base_url or "://" not in base_url:
        raise ProviderError(f"base_url must be an absolute http(s) URL, got {base_url!r}")
    if max_retries < 0:
        raise ProviderError("max_retries must be >= 0")
    obj.base_url = base_url.rstrip("/")
    obj.timeout = float(timeout)
    obj.max_retries = int(max_retries)
    obj.backoff = float(backoff)
    obj._client = None
    obj._client_lock = threading.Lock()


class OpenAICompatEmbedder(HTTPClientMixin):
    """Embeddings from ``POST {base_url}/embeddings``.

    ``dim`` is the expected vector width. When omitted it is discovered from the
    first response; reading ``.dim`` before any call sends one short probe request.
    A response whose width differs from the known ``dim`` raises ProviderError.
    ``send_dim`` additionally asks the server for that width (OpenAI's
    ``dimensions`` field, supported by text-embedding-3 models).

    Rows are L2-normalised here whatever the server returns. Empty strings are sent
    as a single space, since several servers reject empty inputs. Token usage
    reported by the server accumulates in ``usage``.
    """

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_OPENAI_URL,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        send_dim: bool = False,
        batch_size: int = 128,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ProviderError("an embedding model name is required")
        if batch_size < 1:
            raise ProviderError("batch_size must be >= 1")
        if dim is not None and dim < 1:
            raise ProviderError("dim must be >= 1")
        if send_dim and dim is None:
            raise ProviderError("send_dim=True needs dim")
        _init_http(self, base_url, timeout, max_retries, backoff)
        self.model = model
        self.api_key = api_key
        self.batch_size = int(batch_size)
        self.send_dim = send_dim
        self._dim = dim
        self.name = name or f"openai:{model}"
        self.usage = TokenUsage()

    def __repr__(self) -> str:
        return f"OpenAICompatEmbedder(model={self.model!r}, base_url={self.base_url!r}, dim={self._dim})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [self._embed_batch(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(parts)

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": [t if t.strip() else " " for t in batch]}
        if self.send_dim:
            payload["dimensions"] = self._dim
        body = self._post_json("/embeddings", payload, what=f"embedding with {self.name}")
        data = body.get("data")
        if not isinstance(data, list) or len(data) != len(batch):
            got = len(data) if isinstance(data, list) else "no"
            raise ProviderError(f"embedding with {self.name}: expected {len(batch)} vectors, got {got}")
        try:
            rows = sorted(data, key=lambda d: int(d.get("index", 0)))
            vecs = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProviderError(f"embedding with {self.name}: malformed response ({exc})") from exc
        if vecs.ndim != 2 or vecs.shape[1] == 0:
            raise ProviderError(f"embedding with {self.name}: vectors of inconsistent or zero width")
        if self._dim is None:
            self._dim = int(vecs.shape[1])
        elif vecs.shape[1] != self._dim:
            raise ProviderError(
                f"embedding with {self.name}: dimension mismatch, expected {self._dim}, server returned {vecs.shape[1]}"
            )
        if not np.isfinite(vecs).all():
            raise ProviderError(f"embedding with {self.name}: response contains non-finite values")
        usage = body.get("usage") or {}
        self.usage.add(usage.get("prompt_tokens", 0) if isinstance(usage, dict) else 0)
        return normalize_rows(vecs)


class OpenAICompatChat(HTTPClientMixin):
    """Chat completions from ``POST {base_url}/chat/completions``.

    ``complete`` returns the first choice's text. ``last_usage`` holds the token
    counts of the latest call and ``usage`` their running total, from the
    response's ``usage`` block (``prompt_tokens`` / ``completion_tokens``).
    ``token_param`` names the length field: ``"max_tokens"`` for most servers,
    ``"max_completion_tokens"`` for OpenAI reasoning models.
    """

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_OPENAI_URL,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        token_param: str = "max_tokens",
        send_temperature: bool = True,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ProviderError("a chat model name is required")
        _init_http(self, base_url, timeout, max_retries, backoff)
        self.model = model
        self.api_key = api_key
        self.token_param = token_param
        self.send_temperature = send_temperature
        self.name = name or f"openai:{model}"
        self.usage = TokenUsage()
        self.last_usage = TokenUsage()

    def __repr__(self) -> str:
        return f"OpenAICompatChat(model={self.model!r}, base_url={self.base_url!r})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str:
        message, _usage, _model = self._chat(messages, max_tokens, temperature, {})
        content = message.get("content")
        if content is None:
            return ""
        if isinstance(content, list):  # content parts
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content)

    def complete_json(
        self,
        messages: Sequence[dict[str, str]],
        schema: Mapping[str, Any],
        *,
        name: str = "response",
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> StructuredReply:
        """An answer constrained to ``schema`` (``response_format`` of type ``json_schema``,
        strict), decoded. Servers that ignore the schema still have to answer with a JSON
        object, or this raises ProviderError; checking the object's fields is the caller's job."""
        fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema), "strict": True}}
        message, usage, model = self._chat(messages, max_tokens, temperature, {"response_format": fmt})
        if message.get("refusal"):
            raise ProviderError(f"chat with {self.name}: the model refused: {str(message['refusal'])[:200]}")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return StructuredReply(_json_object(content, self.name), usage, model)

    def _chat(
        self, messages: Sequence[dict[str, str]], max_tokens: int, temperature: float, extra: dict[str, Any]
    ) -> tuple[dict[str, Any], TokenUsage, str]:
        """POST one chat completion; the first choice's message, the call's usage, the model."""
        msgs = _check_messages(messages)
        payload: dict[str, Any] = {"model": self.model, "messages": msgs, self.token_param: int(max_tokens), **extra}
        if self.send_temperature:
            payload["temperature"] = float(temperature)
        body = self._post_json("/chat/completions", payload, what=f"chat with {self.name}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ProviderError(f"chat with {self.name}: response has no choices")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise ProviderError(f"chat with {self.name}: response choice has no message")
        raw_usage = body.get("usage")
        usage = raw_usage if isinstance(raw_usage, dict) else {}
        call = TokenUsage()
        call.add(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        self.last_usage = call
        self.usage.add(call.prompt_tokens, call.completion_tokens)
        return message, call.copy(), str(body.get("model") or self.model)


def _json_object(text: Any, who: str) -> dict[str, Any]:
    """``text`` decoded as a JSON object (a fenced block is unwrapped), or ProviderError."""
    raw = str(text or "").strip()
    if raw.startswith("```"):
        raw = raw.strip("`")
        raw = raw[raw.find("{"):] if "{" in raw else raw
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ProviderError(f"chat with {who}: the answer is not JSON: {raw[:200]!r}") from exc
    if not isinstance(data, dict):
        raise ProviderError(f"chat with {who}: the answer is JSON but not an object")
    return data


_ROLES = frozenset({"system", "user", "assistant", "developer", "tool"})


def _check_messages(messages: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
            raise ProviderError(f"message {i} must be a mapping with 'role' and 'content'")
        if m["role"] not in _ROLES:
            raise ProviderError(f"message {i} has unknown role {m['role']!r}")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    if not out:
        raise ProviderError("at least one message is required")
    return out


__all__ = [
    "DEFAULT_OPENAI_URL",
    "OpenAICompatChat",
    "OpenAICompatEmbedder",
    "StructuredReply",
    "TokenUsage",
]
