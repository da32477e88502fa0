"""``add_messages``: store a conversation as episodes and keep what lasts from it.

Given chat messages and a scope it

1. validates the messages (:func:`~zenbrain.ingest.messages.normalize_messages`);
2. finds the stored memories most related to what was said (a read-only recall in the
   durable layers: semantic, procedural, core, of each user turn, or of the texts the
   extractor's optional ``queries(turns)`` names), with their ids;
3. asks the extractor which durable memories the conversation holds and whether each is
   new (add), a new value of a stored one (update) or nothing new (ignore);
4. writes, in one transaction with one embedding batch, every turn of the chosen roles as
   an episode (``"speaker: text"``; metadata ``speaker``, ``role``, ``turn``, ``session``,
   ``source``; the turn's timestamp as ``event_time``) together with the added memories;
   then each update through ``memory.update`` (the old version stays in the memory's
   history, ``rollback`` restores it), then each plan with a time or a cue through
   ``memory.intend``.

Bad input raises a :class:`~zenbrain.errors.ValidationError` before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api import MemoryCoordinator
from ..errors import ValidationError
from ..model import Layer, MemoryItem, Scope
from ..providers.base import TokenUsage
from .base import ACTIONS, TYPES, Decision, Extraction, Extractor
from .messages import Turn, normalize_messages
from .rules import RuleExtractor

__all__ = ["IngestResult", "add_messages"]

DURABLE_LAYERS = (Layer.SEMANTIC, Layer.PROCEDURAL, Layer.CORE)
# Starting importance of a durable memory by type (an episode keeps the default 0.5).
_IMPORTANCE = {"identity": 0.8, "preference": 0.7, "plan": 0.7, "procedure": 0.6, "fact": 0.6}


@dataclass
class IngestResult:
    """What ``add_messages`` wrote, and what the extraction cost."""

    episodes: list[MemoryItem] = field(default_factory=list)
    added: list[MemoryItem] = field(default_factory=list)
    updated: list[MemoryItem] = field(default_factory=list)
    ignored: list[Decision] = field(default_factory=list)
    intentions: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    extractor: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str | None = None
    cost_usd: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "episodes": [m.id for m in self.episodes],
            "added": [{"id": m.id, "content": m.content, "layer": m.layer.value} for m in self.added],
            "updated": [{"id": m.id, "content": m.content, "version": m.version} for m in self.updated],
            "ignored": [{"text": d.text, "reason": d.reason} for d in self.ignored],
            "intentions": [{k: v for k, v in i.items() if k != "cue_embedding"} for i in self.intentions],
            "extractor": self.extractor,
            "model": self.model,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": self.cost_usd,
        }


def related_memories(memory: MemoryCoordinator, scope: Scope, queries: Sequence[str], *, k: int = 10) -> list[MemoryItem]:
    """The stored durable memories closest to ``queries`` (read-only recall), best first."""
    best: dict[str, tuple[float, MemoryItem]] = {}
    for query in dict.fromkeys(q[:2000] for q in queries if q and q.strip()):
        for hit in memory.recall(query, scope, k=k, layers=DURABLE_LAYERS, touch=False):
            if hit.id not in best or hit.score > best[hit.id][0]:
                best[hit.id] = (hit.score, hit.item)
    ranked = sorted(best.values(), key=lambda p: (-p[0], p[1].id))
    return [item for _, item in ranked[:k]]


def _queries(extractor: Extractor, turns: Sequence[Turn]) -> list[str]:
    """What to look up for the extractor: its own ``queries(turns)`` when it has one (the
    rules only need their candidate statements), else every user turn."""
    own = getattr(extractor, "queries", None)
    if callable(own):
        return list(own(turns))
    return [t.text for t in turns if t.role == "user"]


def _check_decisions(extraction: Any, turns: Sequence[Turn], related: Sequence[MemoryItem]) -> list[Decision]:
    if not isinstance(extraction, Extraction):
        raise ValidationError(f"an extractor must return an Extraction, got {type(extraction).__name__}")
    ids = {m.id for m in related}
    out = []
    for d in extraction.decisions:
        if d.action not in ACTIONS or d.type not in TYPES:
            raise ValidationError(f"extractor decision with action {d.action!r} and type {d.type!r}")
        if d.turn is not None and not 0 <= d.turn < len(turns):
            d = Decision(**{**d.__dict__, "turn": None})
        if d.action != "ignore" and not d.text.strip():
            d = Decision(**{**d.__dict__, "action": "ignore", "reason": "empty text"})
        if d.action == "update" and d.target_id not in ids:
            # Only memories the extractor was shown may be superseded: an unknown id is new.
            d = Decision(**{**d.__dict__, "action": "add", "target_id": None,
                            "reason": (d.reason + "; " if d.reason else "") + "update target unknown, added"})
        out.append(d)
    return out


def add_messages(
    memory: MemoryCoordinator,
    messages: Any,
    scope: Scope,
    *,
    extractor: Extractor | None = None,
    episode_roles: Sequence[str] = ("user", "assistant"),
    related_k: int = 10,
    source: str = "conversation",
) -> IngestResult:
    """Store ``messages`` as episodes and the durable memories found in them (see the
    module docstring). ``extractor`` defaults to the offline :class:`RuleExtractor`."""
    if not isinstance(memory, MemoryCoordinator):
        raise ValidationError(f"memory must be a MemoryCoordinator, got {type(memory).__name__}")
    if not isinstance(scope, Scope):
        raise ValidationError(f"scope must be a zenbrain.Scope, got {type(scope).__name__}")
    turns = normalize_messages(messages)
    extractor = extractor if extractor is not None else RuleExtractor()
    now = memory.clock.now()
    related = related_memories(memory, scope, _queries(extractor, turns), k=related_k)
    extraction = extractor.extract(turns, related, now=now)
    decisions = _check_decisions(extraction, turns, related)
    by_index = {t.index: t for t in turns}
    base = {"source": source, **({"session": scope.session_id} if scope.session_id else {})}

    records: list[dict[str, Any]] = []
    episode_turns = [t for t in turns if t.role in episode_roles and t.text]
    for t in episode_turns:
        records.append(dict(
            content=f"{t.speaker}: {t.text}", kind="episode", layer=Layer.EPISODIC,
            event_time=t.timestamp if t.timestamp is not None else now,
            metadata={**base, "speaker": t.speaker, "role": t.role, "turn": t.index},
        ))
    adds = [d for d in decisions if d.action == "add"]
    for d in adds:
        records.append(dict(content=d.text, kind=TYPES[d.type], importance=_IMPORTANCE[d.type],
                            event_time=_event_time(d, by_index, now), metadata=_metadata(d, base, by_index, extractor)))
    stored = memory.store_many(records, scope) if records else []
    result = IngestResult(episodes=stored[: len(episode_turns)], added=stored[len(episode_turns):],
                          decisions=decisions, extractor=extractor.name, usage=extraction.usage,
                          model=extraction.model, cost_usd=extraction.cost_usd)
    for d in decisions:
        if d.action == "update":
            assert d.target_id is not None
            old = memory.get(d.target_id, scope)
            meta = {**old.metadata, **_metadata(d, base, by_index, extractor), "supersedes": old.content}
            result.updated.append(memory.update(d.target_id, scope, content=d.text, metadata=meta))
        elif d.action == "ignore":
            result.ignored.append(d)
    for d in decisions:
        if d.type == "plan" and d.action != "ignore" and (d.due_at is not None or d.cue):
            result.intentions.append(memory.intend(d.text, scope, cue=d.cue or None, due_at=d.due_at))
    return result


def _event_time(d: Decision, turns: dict[int, Turn], now: float) -> float | None:
    if d.type == "plan" and d.due_at is not None:
        return d.due_at  # a plan is about the time it is for
    t = turns.get(d.turn) if d.turn is not None else None
    return t.timestamp if t is not None and t.timestamp is not None else now


def _metadata(d: Decision, base: dict[str, Any], turns: dict[int, Turn], extractor: Extractor) -> dict[str, Any]:
    meta: dict[str, Any] = {**base, "memory_type": d.type, "extractor": extractor.name}
    t = turns.get(d.turn) if d.turn is not None else None
    if t is not None:
        meta.update(turn=t.index, speaker=t.speaker)
    if d.slot:
        meta["slot"] = d.slot
    if d.due_at is not None:
        meta["due_at"] = d.due_at
    if d.cue:
        meta["cue"] = d.cue
    return meta
