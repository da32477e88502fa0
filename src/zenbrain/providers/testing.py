"""Deterministic test doubles for providers, shipped so any test suite can use them.

:class:`FakeProviderServer` is a real HTTP server (stdlib ``http.server`` in a
daemon thread, bound to 127.0.0.1 on an ephemeral port) that speaks:

* ``POST /v1/embeddings`` in the OpenAI format, with vectors from
  :class:`HashingEmbedder` (so they are stable across runs and processes);
* ``POST /v1/chat/completions`` in the OpenAI format;
* ``POST /v1/messages`` in Anthropic's Messages format.

Chat replies come from a Python callable that receives the conversation as
OpenAI-style messages (for Anthropic requests the ``system`` field is prepended as
a ``system`` message). Structured answers take the real wire forms: an OpenAI request
with ``response_format`` of type ``json_schema`` must name the schema (else 400) and gets
the reply text as its message content; an Anthropic request that forces a tool
(``tool_choice`` of type ``tool``) gets the reply, which must then be a JSON object, as
that tool's ``tool_use`` block. Failures can be injected with :meth:`fail_next`, and every
request is recorded in :attr:`requests`. Example::

    with FakeProviderServer(reply=lambda msgs: "ok") as srv:
        emb = OpenAICompatEmbedder("fake-embed", base_url=srv.openai_url)
        chat = AnthropicChat("fake-claude", base_url=srv.url, api_key="k")

:class:`FunctionChat` is an in-process chat model (no HTTP) around the same kind
of callable, with token usage counted in words.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import numpy as np

from .base import Embedder, StructuredReply, TokenUsage
from .hashing import HashingEmbedder
from .openai_compat import _json_object

Reply = Callable[[list[dict[str, str]]], str]


def echo_reply(messages: list[dict[str, str]]) -> str:
    """Default reply: ``"echo: "`` plus the last user message."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return f"echo: {m.get('content', '')}"
    return "echo:"


def count_tokens(text: str) -> int:
    """The fake servers' token count: whitespace-separated words (at least 1)."""
    return max(1, len(str(text).split()))


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class _Failure:
    status: int
    body: str
    retry_after: float | None


@dataclass
class FunctionChat:
    """A :class:`ChatModel` that answers with ``reply(messages)``, in process."""

    reply: Reply = echo_reply
    name: str = "function:chat"
    usage: TokenUsage = field(default_factory=TokenUsage)
    last_usage: TokenUsage = field(default_factory=TokenUsage)
    calls: list[list[dict[str, str]]] = field(default_factory=list)

    def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str:
        msgs = [dict(m) for m in messages]
        self.calls.append(msgs)
        text = str(self.reply(msgs))
        self.last_usage = TokenUsage()
        self.last_usage.add(sum(count_tokens(m.get("content", "")) for m in msgs), count_tokens(text))
        self.usage.add(self.last_usage.prompt_tokens, self.last_usage.completion_tokens)
        return text

    def complete_json(
        self,
        messages: Sequence[dict[str, str]],
        schema: Mapping[str, Any],
        *,
        name: str = "response",
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> StructuredReply:
        """The reply decoded as a JSON object (the schema is not enforced in process)."""
        text = self.complete(messages, max_tokens=max_tokens, temperature=temperature)
        return StructuredReply(_json_object(text, self.name), self.last_usage.copy(), self.name)


class FakeProviderServer:
    """A local OpenAI- and Anthropic-compatible server with deterministic answers.

    ``embedder`` produces the vectors (default ``HashingEmbedder(384)``); ``reply``
    produces chat text. If ``api_key`` is set, requests must carry it (as
    ``Authorization: Bearer`` or ``x-api-key``) or get a 401.
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        reply: Reply = echo_reply,
        api_key: str | None = None,
    ) -> None:
        self.embedder: Embedder = embedder or HashingEmbedder(384)
        self.reply = reply
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._failures: deque[_Failure] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------
    def start(self) -> Self:
        if self._httpd is not None:
            return self
        server: FakeProviderServer = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-provider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses ---------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Root URL; the Anthropic client's ``base_url``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """``url + "/v1"``; the OpenAI-compatible clients' ``base_url``."""
        return self.url + "/v1"

    # behaviour control -------------------------------------------------------
    def fail_next(self, n: int = 1, *, status: int = 500, body: str | None = None, retry_after: float | None = None) -> None:
        """Answer the next ``n`` requests (any endpoint) with ``status``."""
        err = body if body is not None else json.dumps({"error": {"message": f"injected failure {status}"}})
        with self._lock:
            self._failures.extend(_Failure(status, err, retry_after) for _ in range(n))

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _record(self, req: RecordedRequest) -> _Failure | None:
        with self._lock:
            self.requests.append(req)
            return self._failures.popleft() if self._failures else None

    # endpoint logic ------------------------------------------------------------
    def _embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return 400, _error("'input' must be a string or a list of strings")
        if any(t == "" for t in inputs):
            return 400, _error("'input' must not contain empty strings")
        vecs: np.ndarray | list[np.ndarray] = self.embedder.embed(inputs) if inputs else []
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
        data.reverse()  # clients must sort by index
        tokens = sum(count_tokens(t) for t in inputs)
        return 200, {
            "object": "list",
            "model": body.get("model", ""),
            "data": data,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("'messages' must be a non-empty list")
        fmt = body.get("response_format")
        if fmt is not None and not _valid_response_format(fmt):
            return 400, _error("'response_format' must be {'type': 'json_schema', 'json_schema': {'name', 'schema'}}")
        text = str(self.reply([dict(m) for m in messages]))
        p = sum(count_tokens(m.get("content", "")) for m in messages)
        c = count_tokens(text)
        return 200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }

    def _messages(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or "max_tokens" not in body:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad request"}}
        convo = [dict(m) for m in messages]
        if body.get("system"):
            convo.insert(0, {"role": "system", "content": body["system"]})
        text = str(self.reply(convo))
        p = sum(count_tokens(m.get("content", "")) for m in convo)
        c = count_tokens(text)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        stop = "end_turn"
        forced = body.get("tool_choice")
        if isinstance(forced, dict) and forced.get("type") == "tool":
            tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
            if forced.get("name") not in tools or not isinstance(tools[forced.get("name")].get("input_schema"), dict):
                return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "unknown tool"}}
            data = json.loads(text)  # a reply that is not JSON becomes a 500, as any failing reply
            if not isinstance(data, dict):
                raise ValueError("a forced tool call needs a JSON object as its input")
            content = [{"type": "tool_use", "id": "toolu_fake", "name": forced["name"], "input": data}]
            stop = "tool_use"
        return 200, {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", ""),
            "content": content,
            "stop_reason": stop,
            "usage": {"input_tokens": p, "output_tokens": c},
        }


def _valid_response_format(fmt: Any) -> bool:
    if not isinstance(fmt, dict) or fmt.get("type") not in ("json_schema", "json_object", "text"):
        return False
    if fmt["type"] != "json_schema":
        return True
    spec = fmt.get("json_schema")
    return isinstance(spec, dict) and isinstance(spec.get("name"), str) and isinstance(spec.get("schema"), dict)


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


class _Handler(BaseHTTPRequestHandler):
    owner: FakeProviderServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        pass

    def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        failure = self.owner._record(RecordedRequest("POST", self.path, headers, body))
        if failure is not None:
            extra = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else None
            self._send(failure.status, failure.body, extra)
            return
        key = self.owner.api_key
        if key is not None:
            bearer = headers.get("authorization", "")
            if bearer != f"Bearer {key}" and headers.get("x-api-key") != key:
                self._send(401, _error("invalid api key"))
                return
        if not isinstance(body, dict):
            self._send(400, _error("body must be a JSON object"))
            return
        routes = {
            "/v1/embeddings": self.owner._embeddings,
            "/v1/chat/completions": self.owner._chat,
            "/v1/messages": self.owner._messages,
        }
        route = routes.get(self.path.split("?", 1)[0])
        if route is None:
            self._send(404, _error(f"no route {self.path}"))
            return
        try:
            status, payload = route(body)
        except Exception as exc:  # noqa: BLE001 - a failing reply callable becomes a 500, like a real server
            status, payload = 500, _error(f"{type(exc).__name__}: {exc}")
        self._send(status, payload)


__all__ = ["FakeProviderServer", "FunctionChat", "RecordedRequest", "count_tokens", "echo_reply"]
