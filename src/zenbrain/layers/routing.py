"""Routing: what kind of memory a text is, and which layer it goes to.

Order of precedence: an explicit ``layer=`` argument; ``metadata["kind"]``; the
content classifier below. The layer follows from the kind and from whether the
memory is bound to a session.
"""

from __future__ import annotations

import re

from ..model import Kind, Layer

_IDENTITY = re.compile(
    r"\b(my name is|i am (?:a|an) |i'm (?:a|an) |i was born|my birthday|i live in|i work (?:as|at)|"
    r"my (?:wife|husband|partner|son|daughter|mother|father)(?:'s name)? is)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(i (?:really )?(?:prefer|like|love|hate|dislike|enjoy|can't stand)|my favou?rite|i always|i never|"
    r"please always|please never)\b",
    re.IGNORECASE,
)
_SKILL = re.compile(
    r"(\bhow to\b|\bsteps?:|\bstep \d|^\s*\d+\.\s|\bfirst,? .* then\b|\bto (?:install|deploy|run|fix|build|configure)\b)",
    re.IGNORECASE | re.MULTILINE,
)
_EPISODE = re.compile(
    r"\b(yesterday|today|last (?:night|week|month|year|weekend)|this morning|ago|just now|went|met|visited|"
    r"attended|happened|did|was|were|had|saw|got|bought|started|finished)\b",
    re.IGNORECASE,
)


def classify_kind(content: str, *, spoken: bool = False) -> Kind:
    """The kind of a text. ``spoken``: someone said it in a conversation (the record has a
    speaker); such a turn is the episode of its saying unless it states who someone is,
    what they like, or how to do something. Facts reach the semantic layer from the notes
    an application stores as such and from what consolidation abstracts from episodes."""
    if _IDENTITY.search(content):
        return Kind.IDENTITY
    if _PREFERENCE.search(content):
        return Kind.PREFERENCE
    if _SKILL.search(content):
        return Kind.SKILL
    if spoken or _EPISODE.search(content):
        return Kind.EPISODE
    return Kind.FACT


def route(kind: Kind, *, session_bound: bool) -> Layer:
    """The primary layer of a new memory of this kind."""
    if kind in (Kind.IDENTITY, Kind.PREFERENCE):
        return Layer.CORE
    if kind is Kind.SKILL:
        return Layer.PROCEDURAL
    if kind is Kind.NOTE:
        return Layer.WORKING if session_bound else Layer.EPISODIC
    if kind is Kind.EPISODE:
        return Layer.EPISODIC
    return Layer.SEMANTIC


# Where content goes when its layer is switched off (the paper's routing ablation:
# "disabled layers reroute content to the next layer").
FALLBACK: dict[Layer, Layer] = {
    Layer.WORKING: Layer.SHORT_TERM,
    Layer.SHORT_TERM: Layer.EPISODIC,
    Layer.EPISODIC: Layer.SEMANTIC,
    Layer.SEMANTIC: Layer.EPISODIC,
    Layer.PROCEDURAL: Layer.SEMANTIC,
    Layer.CORE: Layer.SEMANTIC,
    Layer.CROSS_CONTEXT: Layer.SEMANTIC,
}


def reroute(layer: Layer, disabled: frozenset[Layer]) -> Layer:
    seen = set()
    while layer in disabled and layer not in seen:
        seen.add(layer)
        layer = FALLBACK[layer]
    return layer


def session_end_target(kind: Kind) -> Layer:
    """Where a short-term item goes when its session ends."""
    if kind in (Kind.FACT, Kind.PREFERENCE, Kind.IDENTITY, Kind.SCHEMA):
        return Layer.SEMANTIC
    if kind is Kind.SKILL:
        return Layer.PROCEDURAL
    return Layer.EPISODIC
