"""Real HTTP round trips against the package's fake provider server on 127.0.0.1."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from zenbrain.errors import ProviderError, ZenBrainError
from zenbrain.providers.anthropic import AnthropicChat, to_anthropic_messages
from zenbrain.providers.base import ChatModel, Embedder
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.providers.openai_compat import (
    OpenAICompatChat,
    OpenAICompatEmbedder,
    TokenUsage,
)
from zenbrain.providers.testing import FakeProviderServer, FunctionChat

from .conftest import unit_rows

TEXTS = ["the cat sat on the mat", "a dog in the park", "quarterly report for Lisbon", "hello"]


@pytest.fixture
def server():
    with FakeProviderServer(reply=lambda msgs: f"{len(msgs)} messages, last: {msgs[-1]['content']}") as srv:
        yield srv


def embedder(srv: FakeProviderServer, **kw) -> OpenAICompatEmbedder:
    kw.setdefault("backoff", 0.0)
    return OpenAICompatEmbedder("fake-embed", srv.openai_url, **kw)


def test_embeddings_round_trip_matches_hashing_embedder(server):
    emb = embedder(server, batch_size=3)
    got = emb.embed(TEXTS)
    assert isinstance(emb, Embedder)  # after the first call: on 3.11 isinstance reads .dim
    assert got.shape == (4, 384) and got.dtype == np.float32
    assert unit_rows(got)
    # The server lists data in reverse order; the client sorts by index.
    np.testing.assert_allclose(got, HashingEmbedder(384).embed(TEXTS), atol=1e-6)
    reqs = server.requests_to("/v1/embeddings")
    assert [r.body["input"] for r in reqs] == [TEXTS[:3], TEXTS[3:]]
    assert all(r.body["model"] == "fake-embed" for r in reqs)
    assert emb.usage.calls == 2 and emb.usage.prompt_tokens == sum(len(t.split()) for t in TEXTS)


def test_dim_is_discovered_from_first_response(server):
    emb = embedder(server)
    assert emb.embed([]).shape == (0, 0)  # nothing known, nothing sent
    assert server.requests == []
    assert emb.dim == 384  # one probe request
    assert len(server.requests) == 1
    emb.embed(["x"])
    assert emb.dim == 384 and len(server.requests) == 2


def test_dim_mismatch_is_a_clear_error(server):
    emb = embedder(server, dim=768)
    with pytest.raises(ProviderError, match="dimension mismatch.*768.*384"):
        emb.embed(["some text"])


def test_empty_strings_are_sent_as_a_space(server):
    emb = embedder(server)
    out = emb.embed(["", "word"])
    assert out.shape == (2, 384)
    assert server.requests[-1].body["input"] == [" ", "word"]


def test_api_key_sent_as_bearer_and_401_fails_fast():
    with FakeProviderServer(api_key="sk-right") as srv:
        ok = OpenAICompatEmbedder("m", srv.openai_url, "sk-right", backoff=0)
        assert ok.embed(["a"]).shape == (1, 384)
        assert srv.requests[-1].headers["authorization"] == "Bearer sk-right"
        bad = OpenAICompatEmbedder("m", srv.openai_url, "sk-wrong", backoff=0, max_retries=3)
        with pytest.raises(ProviderError, match="HTTP 401") as info:
            bad.embed(["a"])
        assert "sk-wrong" not in str(info.value)
        assert len(srv.requests) == 2  # 401 is not retried


def test_retries_on_500_then_succeeds(server):
    emb = embedder(server, max_retries=3)
    server.fail_next(2, status=500)
    out = emb.embed(["retry me"])
    assert out.shape == (1, 384)
    assert len(server.requests) == 3


def test_retries_429_honouring_retry_after(server):
    emb = embedder(server, max_retries=1)
    server.fail_next(1, status=429, retry_after=0)
    assert emb.embed(["x"]).shape == (1, 384)
    assert len(server.requests) == 2


def test_clear_error_after_repeated_failures(server):
    emb = embedder(server, max_retries=2)
    server.fail_next(10, status=503)
    with pytest.raises(ProviderError) as info:
        emb.embed(["x"])
    msg = str(info.value)
    assert "failed after 3 attempt(s)" in msg and "HTTP 503" in msg and "injected failure 503" in msg
    assert isinstance(info.value, ZenBrainError)
    assert len(server.requests) == 3


def test_client_errors_are_not_retried(server):
    emb = embedder(server, max_retries=5)
    server.fail_next(1, status=400, body='{"error": {"message": "input too long"}}')
    with pytest.raises(ProviderError, match="HTTP 400: input too long"):
        emb.embed(["x"])
    assert len(server.requests) == 1


def test_connection_refused_becomes_provider_error():
    with socket.socket() as s:  # find a free port, then leave it closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OpenAICompatEmbedder("m", f"http://127.0.0.1:{port}/v1", backoff=0, max_retries=1, timeout=2)
    with pytest.raises(ProviderError, match="failed after 2 attempt"):
        emb.embed(["x"])


def test_malformed_response_is_provider_error(server):
    emb = embedder(server)
    server.fail_next(1, status=200, body='{"data": [{"index": 0}]}')
    with pytest.raises(ProviderError, match="malformed"):
        emb.embed(["x"])
    server.fail_next(1, status=200, body="not json")
    with pytest.raises(ProviderError, match="not JSON"):
        emb.embed(["x"])


def test_openai_chat_round_trip_records_usage(server):
    chat = OpenAICompatChat("fake-chat", server.openai_url, "sk-1", backoff=0)
    assert isinstance(chat, ChatModel)
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "what is two plus two"}]
    assert chat.complete(msgs, max_tokens=50, temperature=0.3) == "2 messages, last: what is two plus two"
    body = server.requests[-1].body
    assert body["messages"] == msgs and body["max_tokens"] == 50 and body["temperature"] == 0.3
    assert server.requests[-1].headers["authorization"] == "Bearer sk-1"
    assert chat.last_usage.prompt_tokens == 7 and chat.last_usage.completion_tokens == 8
    before = chat.usage.copy()
    chat.complete([{"role": "user", "content": "again"}])
    delta = chat.usage - before
    assert (delta.prompt_tokens, delta.completion_tokens, delta.calls) == (1, 4, 1)
    assert chat.usage.calls == 2 and chat.usage.total_tokens == 7 + 8 + 1 + 4


def test_openai_chat_token_param_for_reasoning_models(server):
    chat = OpenAICompatChat("o-model", server.openai_url, token_param="max_completion_tokens", send_temperature=False)
    chat.complete([{"role": "user", "content": "hi"}], max_tokens=9)
    body = server.requests[-1].body
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body and "temperature" not in body


def test_chat_retries_then_succeeds(server):
    chat = OpenAICompatChat("m", server.openai_url, backoff=0, max_retries=1)
    server.fail_next(1, status=502)
    assert chat.complete([{"role": "user", "content": "x"}]).endswith("x")


def test_chat_rejects_bad_messages(server):
    chat = OpenAICompatChat("m", server.openai_url)
    with pytest.raises(ProviderError, match="role"):
        chat.complete([{"content": "no role"}])
    with pytest.raises(ProviderError, match="unknown role"):
        chat.complete([{"role": "wizard", "content": "x"}])
    with pytest.raises(ProviderError, match="at least one"):
        chat.complete([])
    assert server.requests == []


def test_anthropic_round_trip_headers_system_and_usage(server):
    chat = AnthropicChat("claude-fake", server.url, "ak-123", backoff=0)
    msgs = [
        {"role": "system", "content": "you are terse"},
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
    ]
    # The fake server hands the callable the system prompt as a leading message.
    assert chat.complete(msgs, max_tokens=64) == "2 messages, last: first\n\nsecond"
    req = server.requests_to("/v1/messages")[-1]
    assert req.headers["x-api-key"] == "ak-123"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.body["system"] == "you are terse"
    assert req.body["messages"] == [{"role": "user", "content": "first\n\nsecond"}]
    assert req.body["max_tokens"] == 64 and req.body["model"] == "claude-fake"
    assert chat.last_usage == TokenUsage(5, 5, 1)
    assert chat.name == "anthropic:claude-fake"


def test_anthropic_retries_overloaded_then_fails_clearly(server):
    chat = AnthropicChat("c", server.url, "k", backoff=0, max_retries=1)
    server.fail_next(1, status=529)
    assert chat.complete([{"role": "user", "content": "ping"}]) == "1 messages, last: ping"
    server.fail_next(5, status=529)
    with pytest.raises(ProviderError, match="failed after 2 attempt.*HTTP 529"):
        chat.complete([{"role": "user", "content": "ping"}])


def test_to_anthropic_messages_rules():
    system, turns = to_anthropic_messages(
        [
            {"role": "system", "content": "a"},
            {"role": "user", "content": "u1"},
            {"role": "system", "content": "b"},
            {"role": "assistant", "content": "x1"},
            {"role": "assistant", "content": "x2"},
            {"role": "user", "content": "u2"},
        ]
    )
    assert system == "a\n\nb"
    assert turns == [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "x1\n\nx2"},
        {"role": "user", "content": "u2"},
    ]
    with pytest.raises(ProviderError):
        to_anthropic_messages([{"role": "system", "content": "only system"}])
    with pytest.raises(ProviderError, match="first message"):
        to_anthropic_messages([{"role": "assistant", "content": "hi"}])


def test_reply_callable_errors_become_500(server):
    def boom(msgs):
        raise RuntimeError("no reply")

    server.reply = boom
    chat = OpenAICompatChat("m", server.openai_url, backoff=0, max_retries=0)
    with pytest.raises(ProviderError, match="HTTP 500.*no reply"):
        chat.complete([{"role": "user", "content": "x"}])


def test_function_chat_is_a_chat_model():
    chat = FunctionChat(lambda msgs: "fixed answer")
    assert isinstance(chat, ChatModel)
    assert chat.complete([{"role": "user", "content": "one two three"}]) == "fixed answer"
    assert chat.last_usage == TokenUsage(3, 2, 1)
    assert chat.calls == [[{"role": "user", "content": "one two three"}]]


def test_clients_close_and_reopen(server):
    emb = embedder(server)
    with emb:
        emb.embed(["a"])
    assert emb._client is None
    emb.embed(["b"])  # reopens lazily
    emb.close()


def test_bad_constructor_arguments():
    with pytest.raises(ProviderError):
        OpenAICompatEmbedder("m", "localhost:8080")
    with pytest.raises(ProviderError):
        OpenAICompatEmbedder("", "http://127.0.0.1:1/v1")
    with pytest.raises(ProviderError):
        OpenAICompatEmbedder("m", "http://127.0.0.1:1/v1", send_dim=True)
    with pytest.raises(ProviderError):
        AnthropicChat("", "http://127.0.0.1:1")


def test_send_dim_requests_dimensions(server):
    emb = embedder(server, dim=384, send_dim=True)
    emb.embed(["x"])
    assert server.requests[-1].body["dimensions"] == 384
