"""Backend-neutral pieces of how records are stored: the memory columns, which of them
a bulk update may write, and JSON for metadata, state, history details and records."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from ..model import Edge, MemoryItem

MEMORY_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(MemoryItem))
EDGE_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Edge))
# Columns a bulk update may write; content, metadata and state go through whole-row writes
# or update_states, so the lexical index and the due index stay in step.
UPDATABLE = frozenset(MEMORY_FIELDS) - {"id", "user_id", "agent_id", "content", "content_hash", "metadata", "state",
                                        "index_text", "vector_key"}
LEXICAL_EXTRA = "lexical_extra"  # metadata key: words indexed for lexical search beside the content


def json_default(value: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """JSON text of a metadata, state, history detail or record value (no NaN or
    infinity: JSON has none, and a database's JSON type refuses them)."""
    return json.dumps(value, sort_keys=True, default=json_default, allow_nan=False)


def lexical_text(item: MemoryItem) -> str:
    """What lexical search indexes of a memory: its index text (the turn with the turns
    before it) or its content, and the words an application put in
    ``metadata["lexical_extra"]``."""
    text = item.index_text or item.content
    extra = item.metadata.get(LEXICAL_EXTRA)
    return text if not extra else f"{text}\n{extra}"


def plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (other values unchanged)."""
    return value.item() if isinstance(value, np.generic) else value
