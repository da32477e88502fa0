"""JSON forms of the library's objects, shared by the CLI and the REST and MCP servers."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from .errors import ValidationError
from .model import Edge, HistoryEvent, MemoryItem, RecallHit

__all__ = ["edge_dict", "event_dict", "hit_dict", "item_dict", "json_safe", "optional_time", "parse_time"]


def json_safe(value: Any) -> Any:
    """Plain JSON values: numpy scalars as numbers, tuples and sets as lists, enums as their
    value, non-finite floats as null, anything else as text."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    item = getattr(value, "item", None)  # numpy scalar
    if callable(item):
        return json_safe(item())
    if hasattr(value, "value") and isinstance(value.value, str):  # an enum such as Layer
        return value.value
    return str(value)


def item_dict(item: MemoryItem) -> dict[str, Any]:
    """A memory's public fields (its mechanism state left out)."""
    return json_safe({
        "id": item.id,
        "layer": item.layer.value,
        "kind": item.kind.value,
        "content": item.content,
        "user_id": item.user_id,
        "agent_id": item.agent_id,
        "session_id": item.session_id,
        "context": item.context,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
        "event_time": item.event_time,
        "last_access": item.last_access,
        "access_count": item.access_count,
        "importance": item.importance,
        "strength": item.strength,
        "stability": item.stability,
        "confidence": item.confidence,
        "conf_alpha": item.conf_alpha,
        "conf_beta": item.conf_beta,
        "archived": item.archived,
        "version": item.version,
        "metadata": item.metadata,
        "valid_until": item.valid_until,
        "superseded_by": item.superseded_by,
    })


def hit_dict(rank: int, hit: RecallHit) -> dict[str, Any]:
    """One recall hit with its rank and score breakdown."""
    it = hit.item
    return json_safe({"rank": rank, "id": it.id, "score": hit.score, "layer": it.layer.value, "kind": it.kind.value,
                      "content": it.content, "metadata": it.metadata, "event_time": it.event_time,
                      "why": hit.why.as_dict()})


def edge_dict(edge: Edge) -> dict[str, Any]:
    return json_safe({"src": edge.src, "dst": edge.dst, "relation": edge.relation, "weight": edge.weight,
                      "variance": edge.variance, "activations": edge.activations, "updated_at": edge.updated_at})


def event_dict(event: HistoryEvent) -> dict[str, Any]:
    return json_safe({"memory_id": event.memory_id, "at": event.at, "action": event.action, "detail": event.detail})


def parse_time(text: str, *, what: str = "time") -> float:
    """ISO 8601 (a time without zone is UTC) or seconds since the epoch."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(
            f"{what} must be ISO 8601 (e.g. 2023-05-08T13:56:00Z) or seconds since the epoch, got {text!r}"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def optional_time(value: float | str | None, what: str = "time") -> float | None:
    """``parse_time`` of text; a number or None passes through."""
    return parse_time(value, what=what) if isinstance(value, str) else value
