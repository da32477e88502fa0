"""Chat messages in, validated turns out.

Accepted: a sequence of mappings (or objects with ``role`` and ``content`` attributes)
in the OpenAI chat layout::

    {"role": "user", "content": "I moved to Lyon", "name": "alice", "timestamp": 1717200000}
    {"role": "user", "content": [{"type": "text", "text": "look at this"},
                                 {"type": "image_url", "image_url": {"url": "..."}}]}

``content`` is a string, None (an assistant turn that only calls tools) or a list of
parts; the text of ``text``, ``input_text`` and ``output_text`` parts is kept and other
parts (images, audio, files, refusals) are left out. ``timestamp`` is optional: seconds
since the epoch, a ``datetime`` (naive means UTC) or an ISO 8601 string.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import ValidationError

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})

__all__ = ["ROLES", "Turn", "content_text", "normalize_messages", "to_timestamp"]


@dataclass(frozen=True)
class Turn:
    """One message of a conversation, as ingested."""

    index: int  # position in the messages given
    role: str
    text: str  # its text parts joined ("" when it has none)
    name: str | None = None
    timestamp: float | None = None

    @property
    def speaker(self) -> str:
        return self.name or self.role


def to_timestamp(value: Any, what: str = "timestamp") -> float | None:
    """Seconds since the epoch from a number, a datetime or an ISO 8601 string."""
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return dt.timestamp()
    if isinstance(value, str):
        try:
            return to_timestamp(datetime.fromisoformat(value.strip()), what)
        except ValueError:
            raise ValidationError(f"{what} {value!r} is not an ISO 8601 date or time") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValidationError(f"{what} must be seconds since the epoch, a datetime or an ISO string, got {value!r}")
    return float(value)


def _field(message: Any, key: str) -> Any:
    if isinstance(message, Mapping):
        return message.get(key)
    return getattr(message, key, None)


def content_text(content: Any, i: int = 0) -> str:
    """The text of a message's content: a string, None, or a list of parts (text parts kept)."""
    return _text(content, i)


def _text(content: Any, i: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                if part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
                    texts.append(part["text"])
            else:
                raise ValidationError(f"message {i}: a content part must be a mapping or a string")
        return "\n".join(t for t in texts if t)
    raise ValidationError(f"message {i}: content must be a string, a list of parts or None")


def normalize_messages(messages: Any) -> list[Turn]:
    """Validate ``messages`` and return them as turns (every message, in order)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a list of chat messages")
    if not messages:
        raise ValidationError("messages must not be empty")
    turns = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) and not hasattr(m, "role"):
            raise ValidationError(f"message {i} must be a mapping with 'role' and 'content'")
        role = _field(m, "role")
        if role not in ROLES:
            raise ValidationError(f"message {i} has role {role!r}; roles are {sorted(ROLES)}")
        name = _field(m, "name")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValidationError(f"message {i}: name must be a non-empty string")
        turns.append(Turn(i, role, _text(_field(m, "content"), i).strip(), name.strip() if name else None,
                          to_timestamp(_field(m, "timestamp"), f"message {i} timestamp")))
    return turns
