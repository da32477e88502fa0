"""An extractor that asks a chat model, with a strict JSON schema.

One call per conversation. The model sees the stored memories most related to the
conversation (each with its id) and the conversation itself (turn index, time, speaker,
text), and answers with a list of decisions in :data:`SCHEMA`:

    {"memories": [{"action": "add" | "update" | "ignore",
                   "type": "fact" | "preference" | "identity" | "plan" | "procedure",
                   "text": "...", "target_id": "<stored id>" | null, "turn": 3 | null,
                   "when": "2025-05-08T18:00:00Z" | null, "cue": "..." | null,
                   "reason": "..."}]}

The request uses each provider's structured-output form: ``response_format`` of type
``json_schema`` with ``strict: true`` for OpenAI-compatible servers, a forced tool call
whose ``input_schema`` is the schema for Anthropic (``complete_json`` of the clients in
``zenbrain.providers``). A chat model without ``complete_json`` gets the schema in the
prompt and must answer with the JSON object alone. The answer is checked field by field
here too (a local server may not enforce the schema): a malformed decision raises
:class:`~zenbrain.errors.ProviderError` and nothing is written.

Token usage is the provider's own count from the response; the cost is usage times the
model's price in the :class:`~zenbrain.providers.pricing.PriceTable` you pass (None
without a price). The prompt is :data:`SYSTEM_PROMPT`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..errors import ProviderError, ValidationError
from ..model import MemoryItem
from ..providers.base import ChatModel, StructuredChatModel, StructuredReply, TokenUsage
from ..providers.openai_compat import _json_object
from ..providers.pricing import PriceTable
from .base import ACTIONS, TYPES, Decision, Extraction
from .messages import Turn, to_timestamp

__all__ = ["SCHEMA", "SCHEMA_NAME", "SYSTEM_PROMPT", "LLMExtractor"]

SCHEMA_NAME = "memory_decisions"
_NULLABLE_STR = {"type": ["string", "null"]}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["memories"],
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["action", "type", "text", "target_id", "turn", "when", "cue", "reason"],
                "properties": {
                    "action": {"type": "string", "enum": list(ACTIONS)},
                    "type": {"type": "string", "enum": list(TYPES)},
                    "text": {"type": "string"},
                    "target_id": _NULLABLE_STR,
                    "turn": {"type": ["integer", "null"]},
                    "when": _NULLABLE_STR,
                    "cue": _NULLABLE_STR,
                    "reason": {"type": "string"},
                },
            },
        }
    },
}

SYSTEM_PROMPT = """\
You maintain the long-term memory of an assistant about its user. From the conversation, \
extract what is worth remembering beyond this conversation:
- identity: who the user is (name, home, job, family, age, birthday);
- preference: what the user likes, dislikes or wants done in a certain way;
- fact: other lasting facts about the user's life, people, things and past events;
- plan: what the user intends to do; put its time in "when" (ISO 8601, UTC, resolved \
against the turn's time) and, for "remind me when ...", the trigger in "cue";
- procedure: how the user does something, as steps.
Write each memory as one short, self-contained sentence in the third person that names \
the user (e.g. "Alice lives in Lyon"), with "turn" the index of the turn it comes from.
Compare each with the stored memories listed (each has an id):
- "add" when it is new;
- "update" with "target_id" when it replaces or corrects a stored memory (a move, a new \
job, a changed preference): "text" is the new version;
- "ignore" with "target_id" when it is already stored in substance.
Keep only what the user said or confirmed; skip greetings, small talk, questions, \
hypotheticals and the assistant's own suggestions. If nothing is worth remembering, \
answer with an empty list."""


def _iso(t: float | None) -> str:
    return "unknown time" if t is None else datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_messages(turns: Sequence[Turn], related: Sequence[MemoryItem], *, now: float,
                   schema_in_prompt: bool = False) -> list[dict[str, str]]:
    """The prompt: system instructions, then the stored memories and the conversation."""
    stored = "\n".join(f"- id={m.id} ({m.kind.value}) {m.content}" for m in related) or "(none)"
    convo = "\n".join(f"[{t.index}] ({_iso(t.timestamp)}) {t.speaker} [{t.role}]: {t.text}"
                      for t in turns if t.text) or "(empty)"
    user = f"Current time: {_iso(now)}\n\nStored memories:\n{stored}\n\nConversation:\n{convo}"
    system = SYSTEM_PROMPT
    if schema_in_prompt:
        system += "\n\nAnswer with one JSON object and nothing else, following this JSON schema:\n" + json.dumps(SCHEMA)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_decisions(data: dict[str, Any], who: str) -> list[Decision]:
    """The model's answer as decisions; a field of the wrong type raises ProviderError."""
    items = data.get("memories")
    if not isinstance(items, list):
        raise ProviderError(f"{who}: the answer has no 'memories' list")
    out = []
    for i, d in enumerate(items):
        if not isinstance(d, dict):
            raise ProviderError(f"{who}: memories[{i}] is not an object")
        action, kind, text = d.get("action"), d.get("type"), d.get("text")
        if action not in ACTIONS or kind not in TYPES or not isinstance(text, str):
            raise ProviderError(f"{who}: memories[{i}] has action {action!r}, type {kind!r}, text {text!r}")
        for key in ("target_id", "when", "cue"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise ProviderError(f"{who}: memories[{i}].{key} must be a string or null")
        turn = d.get("turn")
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
            raise ProviderError(f"{who}: memories[{i}].turn must be an integer or null")
        try:
            due = to_timestamp(d.get("when"), f"memories[{i}].when") if d.get("when") else None
        except ValidationError as exc:
            raise ProviderError(f"{who}: {exc}") from None
        out.append(Decision(action, kind, text.strip(), turn, d.get("target_id") or None, due,
                            (d.get("cue") or "").strip() or None, None, str(d.get("reason") or "")))
    return out


class LLMExtractor:
    """Decisions from a chat model (see the module docstring).

    ``chat`` is any :class:`~zenbrain.providers.base.ChatModel`; with ``complete_json``
    (``OpenAICompatChat``, ``AnthropicChat``, ``FunctionChat``) the schema is enforced
    by the provider. ``prices`` turns token usage into dollars.
    """

    def __init__(self, chat: ChatModel, *, prices: PriceTable | None = None, max_tokens: int = 2048) -> None:
        if not hasattr(chat, "complete"):
            raise ValidationError(f"chat must be a chat model, got {type(chat).__name__}")
        self.chat = chat
        self.prices = prices or PriceTable()
        self.max_tokens = int(max_tokens)
        self.name = f"llm:{getattr(chat, 'name', type(chat).__name__)}"

    def extract(self, turns: Sequence[Turn], related: Sequence[MemoryItem], *, now: float) -> Extraction:
        structured = isinstance(self.chat, StructuredChatModel)
        messages = build_messages(turns, related, now=now, schema_in_prompt=not structured)
        reply = self._ask(messages, structured)
        decisions = parse_decisions(reply.data, self.name)
        model_name = getattr(self.chat, "name", None) or reply.model
        cost = self.prices.cost(model_name, reply.usage)
        if cost is None and reply.model:
            cost = self.prices.cost(reply.model, reply.usage)
        return Extraction(decisions, usage=reply.usage, model=reply.model or model_name, cost_usd=cost)

    def _ask(self, messages: list[dict[str, str]], structured: bool) -> StructuredReply:
        if structured and isinstance(self.chat, StructuredChatModel):
            reply = self.chat.complete_json(messages, SCHEMA, name=SCHEMA_NAME, max_tokens=self.max_tokens,
                                            temperature=0.0)
            if not isinstance(reply, StructuredReply):
                raise ProviderError(f"{self.name}: complete_json returned {type(reply).__name__}")
            return reply
        text = self.chat.complete(messages, max_tokens=self.max_tokens, temperature=0.0)
        last = getattr(self.chat, "last_usage", None)
        usage = last.copy() if isinstance(last, TokenUsage) else TokenUsage()
        return StructuredReply(_json_object(text, self.name), usage, getattr(self.chat, "name", ""))
