"""Conversation ingestion: chat messages in, episodes and durable memories out.

    from zenbrain.ingest import add_messages, RuleExtractor, LLMExtractor
    result = add_messages(memory, [{"role": "user", "content": "I moved to Lyon"}], Scope("alice"))

Two extractors behind one protocol (:class:`Extractor`): :class:`RuleExtractor` (offline,
no model) and :class:`LLMExtractor` (an OpenAI-compatible or Anthropic chat model with a
strict JSON schema). See ``docs/agents.md``.
"""

from .base import Decision, Extraction, Extractor
from .conversation import IngestResult, add_messages, related_memories
from .llm import LLMExtractor
from .messages import Turn, normalize_messages
from .rules import RuleExtractor

__all__ = [
    "Decision",
    "Extraction",
    "Extractor",
    "IngestResult",
    "LLMExtractor",
    "RuleExtractor",
    "Turn",
    "add_messages",
    "normalize_messages",
    "related_memories",
]
