"""What an extractor decides, and the protocol every extractor follows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..model import Kind, MemoryItem
from ..providers.base import TokenUsage
from .messages import Turn

ACTIONS = ("add", "update", "ignore")
# Durable memory types and the kind each is stored as (plans are facts about the future,
# with an intention beside them when they have a time or a cue).
TYPES: dict[str, Kind] = {
    "fact": Kind.FACT,
    "preference": Kind.PREFERENCE,
    "identity": Kind.IDENTITY,
    "plan": Kind.FACT,
    "procedure": Kind.SKILL,
}

__all__ = ["ACTIONS", "TYPES", "Decision", "Extraction", "Extractor"]


@dataclass(frozen=True)
class Decision:
    """One durable memory an extractor found in a conversation, and what to do with it.

    ``add`` stores ``text`` as a new memory; ``update`` replaces the stored memory
    ``target_id`` with ``text`` (an explicit edit: the old version stays in its history);
    ``ignore`` changes nothing (already known, or not worth keeping; ``reason`` says which).
    A plan with ``due_at`` (seconds since the epoch) or ``cue`` also becomes an intention.
    ``slot`` names what a statement is about when only one value can hold at a time
    (``residence``, ``name``, ``favorite:color``): a newer value supersedes an older one.
    """

    action: str
    type: str
    text: str
    turn: int | None = None
    target_id: str | None = None
    due_at: float | None = None
    cue: str | None = None
    slot: str | None = None
    reason: str = ""


@dataclass
class Extraction:
    """An extractor's decisions, and what the call cost when a model made them."""

    decisions: list[Decision]
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str | None = None
    cost_usd: float | None = None


@runtime_checkable
class Extractor(Protocol):
    """Finds durable memories in a conversation.

    ``turns`` is the whole conversation; ``related`` holds the stored memories most
    related to it (with their ids), so an extractor can decide add, update or ignore;
    ``now`` is the clock's time, for relative dates when turns carry no timestamp.
    An extractor may also define ``queries(turns) -> list[str]``: the texts whose related
    memories it needs (default: every user turn).
    """

    name: str

    def extract(self, turns: Sequence[Turn], related: Sequence[MemoryItem], *, now: float) -> Extraction: ...
