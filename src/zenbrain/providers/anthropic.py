"""A chat client for Anthropic's Messages API (``POST {base_url}/v1/messages``).

System messages are lifted into the top-level ``system`` field; consecutive
messages of the same role are merged, since the API expects user and assistant
turns to alternate. Token usage (``input_tokens`` / ``output_tokens``) is recorded
as prompt / completion tokens in ``last_usage`` and ``usage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ProviderError
from .base import StructuredReply, TokenUsage
from .openai_compat import HTTPClientMixin, _check_messages, _init_http

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicChat(HTTPClientMixin):
    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_ANTHROPIC_URL,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        anthropic_version: str = ANTHROPIC_VERSION,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ProviderError("a chat model name is required")
        _init_http(self, base_url, timeout, max_retries, backoff)
        self.model = model
        self.api_key = api_key
        self.anthropic_version = anthropic_version
        self.name = name or f"anthropic:{model}"
        self.usage = TokenUsage()
        self.last_usage = TokenUsage()

    def __repr__(self) -> str:
        return f"AnthropicChat(model={self.model!r}, base_url={self.base_url!r})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "anthropic-version": self.anthropic_version}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str:
        content, _usage, _model = self._messages(messages, max_tokens, temperature, {})
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")

    def complete_json(
        self,
        messages: Sequence[dict[str, str]],
        schema: Mapping[str, Any],
        *,
        name: str = "response",
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> StructuredReply:
        """An answer in ``schema``, through tool use: one tool whose input schema is
        ``schema``, and ``tool_choice`` forcing the model to call it. The tool call's
        input is the answer."""
        extra = {
            "tools": [{"name": name, "description": "Record the answer in this structure.", "input_schema": dict(schema)}],
            "tool_choice": {"type": "tool", "name": name},
        }
        content, usage, model = self._messages(messages, max_tokens, temperature, extra)
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == name:
                data = block.get("input")
                if not isinstance(data, dict):
                    raise ProviderError(f"chat with {self.name}: the tool call's input is not an object")
                return StructuredReply(data, usage, model)
        raise ProviderError(f"chat with {self.name}: the answer has no call of the tool {name!r}")

    def _messages(
        self, messages: Sequence[dict[str, str]], max_tokens: int, temperature: float, extra: dict[str, Any]
    ) -> tuple[list[Any], TokenUsage, str]:
        """POST one Messages request; the content blocks, the call's usage, the model."""
        system, turns = to_anthropic_messages(messages)
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
            "messages": turns,
            **extra,
        }
        if system:
            payload["system"] = system
        body = self._post_json("/v1/messages", payload, what=f"chat with {self.name}")
        if body.get("type") == "error":
            err = body.get("error") or {}
            raise ProviderError(f"chat with {self.name}: {err.get('message', err)}")
        content = body.get("content")
        if not isinstance(content, list):
            raise ProviderError(f"chat with {self.name}: response has no content list")
        raw_usage = body.get("usage")
        usage = raw_usage if isinstance(raw_usage, dict) else {}
        call = TokenUsage()
        call.add(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        self.last_usage = call
        self.usage.add(call.prompt_tokens, call.completion_tokens)
        return content, call.copy(), str(body.get("model") or self.model)


def to_anthropic_messages(messages: Sequence[dict[str, str]]) -> tuple[str, list[dict[str, str]]]:
    """Split OpenAI-style messages into Anthropic's ``system`` text and alternating turns."""
    msgs = _check_messages(messages)
    system_parts: list[str] = []
    turns: list[dict[str, str]] = []
    for m in msgs:
        role = m["role"]
        if role in ("system", "developer"):
            system_parts.append(m["content"])
            continue
        role = "assistant" if role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1] = {"role": role, "content": turns[-1]["content"] + "\n\n" + m["content"]}
        else:
            turns.append({"role": role, "content": m["content"]})
    if not turns:
        raise ProviderError("the Messages API needs at least one user message besides the system prompt")
    if turns[0]["role"] != "user":
        raise ProviderError("the first message after the system prompt must come from the user")
    return "\n\n".join(system_parts), turns


__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_URL", "AnthropicChat", "to_anthropic_messages"]
