"""Record types: plain data that crosses module boundaries. No storage code lives here."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ScopeError, UnknownLayerError
from .state import MemoryState


class Layer(str, enum.Enum):
    WORKING = "working"
    SHORT_TERM = "short_term"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    CORE = "core"
    CROSS_CONTEXT = "cross_context"

    @classmethod
    def parse(cls, value: Layer | str) -> Layer:
        if isinstance(value, Layer):
            return value
        if isinstance(value, str):
            key = value.strip().lower().replace("-", "_")
            for layer in cls:
                if layer.value == key:
                    return layer
        raise UnknownLayerError(
            f"unknown layer {value!r}; layers are: {', '.join(layer.value for layer in cls)}"
        )


class Kind(str, enum.Enum):
    """What a memory is about; drives routing to a layer."""

    FACT = "fact"
    EPISODE = "episode"
    SKILL = "skill"
    IDENTITY = "identity"
    PREFERENCE = "preference"
    NOTE = "note"
    SCHEMA = "schema"


class QueryType(str, enum.Enum):
    """What a recall query asks for; selects the layer weights of fusion."""

    TEMPORAL = "temporal"
    PROCEDURAL = "procedural"
    FACTUAL = "factual"
    IDENTITY = "identity"
    GENERAL = "general"


_ID_RE = re.compile(r"^[A-Za-z0-9_.:@+\-]{1,128}$")


def _check_scope_part(name: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise ScopeError(
            f"{name} must be 1-128 characters of letters, digits and _.:@+-; got {value!r}"
        )
    return value


@dataclass(frozen=True)
class Scope:
    """Who a memory belongs to. Every read and write is confined to one scope.

    ``user_id`` and ``agent_id`` isolate tenants completely. ``session_id`` binds
    short-term memory to a conversation; ``None`` means "any session of this
    user and agent" for reads and "no session" for writes. ``context`` is a
    cross-context domain (personal, work, ...): recall stays inside it unless
    the configuration allows a link to another context.
    """

    user_id: str
    agent_id: str = "default"
    session_id: str | None = None
    context: str = "default"

    def __post_init__(self) -> None:
        _check_scope_part("user_id", self.user_id)
        _check_scope_part("agent_id", self.agent_id)
        _check_scope_part("session_id", self.session_id, optional=True)
        _check_scope_part("context", self.context)

    def with_session(self, session_id: str | None) -> Scope:
        return Scope(self.user_id, self.agent_id, session_id, self.context)

    def with_context(self, context: str) -> Scope:
        return Scope(self.user_id, self.agent_id, self.session_id, context)


@dataclass(slots=True)
class MemoryItem:
    """One memory as stored. Times are seconds since the Unix epoch."""

    id: str
    user_id: str
    agent_id: str
    session_id: str | None
    context: str
    layer: Layer
    kind: Kind
    content: str
    content_hash: str
    metadata: dict[str, Any]
    created_at: float
    updated_at: float
    event_time: float | None
    last_access: float
    access_count: int = 0
    importance: float = 0.5
    valence: float = 0.0
    arousal: float = 0.0
    stability: float = 1.0  # days: Ebbinghaus S (scaled by emotion at read time)
    strength: float = 1.0  # encoding strength in [0, 1]
    conf_alpha: float = 1.0  # Beta posterior of the fact being true
    conf_beta: float = 1.0
    archived: bool = False
    version: int = 1
    state: MemoryState = field(default_factory=MemoryState)  # per-mechanism state (fsrs card, copies, ...)
    speaker: str | None = None  # who said it (a conversation turn)
    position: int | None = None  # order within its session (conversation turns), from 0
    index_text: str | None = None  # what lexical search indexes, when not the content (turn context)
    vector_key: str | None = None  # the key of its vector in the embedding cache (None: its content's hash)
    # Valid time: a fact stops holding when a later one replaces it ("Alice moved to Lyon"
    # after "Alice lives in Lisbon"). It is kept with its history; recall leaves it out
    # unless asked about a time before ``valid_until`` (see ``Filter.current_at``).
    valid_until: float | None = None
    superseded_by: str | None = None  # the memory that replaced it

    @property
    def valid_from(self) -> float:
        """When what it says began to hold: its event time, else when it was stored."""
        return self.event_time if self.event_time is not None else self.created_at

    @property
    def scope(self) -> Scope:
        return Scope(self.user_id, self.agent_id, self.session_id, self.context)

    @property
    def confidence(self) -> float:
        return self.conf_alpha / (self.conf_alpha + self.conf_beta)


@dataclass(slots=True)
class Edge:
    """A knowledge-graph edge between two memories (Two-Factor synapse)."""

    src: str
    dst: str
    relation: str
    weight: float = 1.0
    variance: float = 1.0
    activations: int = 0
    updated_at: float = 0.0

    @property
    def importance(self) -> float:
        return 1.0 / max(self.variance, 1e-12)


@dataclass
class ScoreBreakdown:
    """Why a memory was recalled: every factor that went into its score."""

    dense: float = 0.0
    lexical: float = 0.0
    layer_weight: float = 1.0
    fused: float = 0.0
    hebbian_boost: float = 1.0
    retrievability: float = 1.0
    priority: float = 1.0
    temporal: float = 1.0
    belief: float = 1.0  # a contested fact's confidence and iMAD verdict (1 when uncontested)
    other: dict[str, float] = field(default_factory=dict)
    final: float = 0.0

    def as_dict(self) -> dict[str, float]:
        out = {
            "dense": self.dense,
            "lexical": self.lexical,
            "layer_weight": self.layer_weight,
            "fused": self.fused,
            "hebbian_boost": self.hebbian_boost,
            "retrievability": self.retrievability,
            "priority": self.priority,
            "temporal": self.temporal,
            "belief": self.belief,
        }
        out.update(self.other)
        out["final"] = self.final
        return out


@dataclass
class RecallHit:
    item: MemoryItem
    score: float
    why: ScoreBreakdown

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def content(self) -> str:
        return self.item.content


@dataclass
class HistoryEvent:
    memory_id: str
    at: float
    action: str  # created, updated, archived, restored, reconsolidated, erased, ...
    detail: dict[str, Any] = field(default_factory=dict)


__all__ = ["Edge", "HistoryEvent", "Kind", "Layer", "MemoryItem", "RecallHit", "Scope", "ScoreBreakdown"]
