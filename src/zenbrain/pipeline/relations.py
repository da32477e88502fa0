"""Typed relations between memories: the knowledge graph's edges an application declares.

``relate`` writes a directed edge ``src -> dst`` named by its relation. The relations that
Bayesian propagation couples (``supports``, ``contradicts``, ``causes``, ``requires``,
``part_of``, ``similar_to``; docs/mechanisms.md) move the confidences of the facts they join
at the next sleep; any other name (lowercase letters, digits and underscores) links the
memories for the Two-Factor recall boost, replay and spectral health without coupling
confidences. A declared edge is an association like those the library makes itself: it
starts with the Two-Factor parameters' initial variance, strengthens when the two memories
are used together and decays (and is pruned) when they are not.

The names the library's own mechanisms write (provenance, sleep's counterfactual and
bridge edges, co-recall, store-time links) are reserved, so a report never counts a
declared edge as one a mechanism made.
"""

from __future__ import annotations

import re

from ..engine import Engine
from ..errors import ValidationError
from ..mechanisms import two_factor
from ..model import Edge, HistoryEvent, Scope
from ..state import MECHANISM_RELATIONS
from ..validation import check_number
from .access import get_own, get_visible, partition_of, visible

__all__ = ["COUPLED", "RESERVED", "check_relation", "relate", "relations", "unrelate"]

COUPLED = ("supports", "contradicts", "causes", "requires", "part_of", "similar_to")
RESERVED = MECHANISM_RELATIONS
_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")


def check_relation(relation: object) -> str:
    if not isinstance(relation, str) or not _NAME.fullmatch(relation):
        raise ValidationError(
            f"a relation is 1-48 lowercase letters, digits or underscores starting with a letter, got {relation!r}"
        )
    if relation in RESERVED:
        raise ValidationError(f"relation {relation!r} is written by the library's own mechanisms; choose another name")
    return relation


def _check_weight(engine: Engine, weight: object) -> float:
    params = engine.config.params.two_factor_hebbian
    w = check_number("weight", weight, 0.0, params.max_weight)
    if w <= 0.0:
        raise ValidationError(f"weight must be a number in (0, {params.max_weight}], got {weight!r}")
    return w


def relate(engine: Engine, scope: Scope, src_id: str, dst_id: str, relation: str,
           weight: float = 1.0) -> Edge:
    """Declare ``src -> dst``; declaring an existing relation again sets its weight and keeps
    what use has taught it (variance, activations)."""
    relation = check_relation(relation)
    w = _check_weight(engine, weight)
    if src_id == dst_id:
        raise ValidationError("a memory cannot be related to itself")
    src = get_own(engine, scope, src_id)
    dst = get_own(engine, scope, dst_id)
    part = partition_of(scope)
    now = engine.clock.now()
    old = next((e for e in engine.store.edges(part, [src.id, dst.id], both_ends=True)
                if (e.src, e.dst, e.relation) == (src.id, dst.id, relation)), None)
    if old is None:
        _, variance, activations = two_factor.new_edge(params=engine.config.params.two_factor_hebbian)
    else:
        variance, activations = old.variance, old.activations
    edge = Edge(src.id, dst.id, relation, w, float(variance), int(activations), now)
    with engine.store.transaction() as tx:
        tx.put_edges(part, [edge])
        tx.log(part, [HistoryEvent(src.id, now, "related", {"dst": dst.id, "relation": relation, "weight": w,
                                                           "before": None if old is None else old.weight})])
    return edge


def unrelate(engine: Engine, scope: Scope, src_id: str, dst_id: str, relation: str) -> bool:
    """Remove a declared relation; False when there was none."""
    relation = check_relation(relation)
    src = get_own(engine, scope, src_id)
    dst = get_own(engine, scope, dst_id)
    part = partition_of(scope)
    key = (src.id, dst.id, relation)
    if not any((e.src, e.dst, e.relation) == key for e in engine.store.edges(part, [src.id, dst.id], both_ends=True)):
        return False
    now = engine.clock.now()
    with engine.store.transaction() as tx:
        tx.delete_edges(part, [key])
        tx.log(part, [HistoryEvent(src.id, now, "unrelated", {"dst": dst.id, "relation": relation})])
    return True


def relations(engine: Engine, scope: Scope, memory_id: str, relation: str | None = None) -> list[Edge]:
    """Every edge from or to a memory whose other end the scope may see (declared ones and
    those the mechanisms made), strongest first; ``relation`` keeps one name."""
    if relation is not None and (not isinstance(relation, str) or not relation):
        raise ValidationError(f"relation must be a non-empty string, got {relation!r}")
    item = get_visible(engine, scope, memory_id)
    part = partition_of(scope)
    edges = engine.store.edges(part, [item.id], relation=relation)
    others = {e.dst if e.src == item.id else e.src for e in edges}
    seen = {i.id for i in engine.store.get(part, sorted(others)) if visible(engine, scope, i, include_archived=True)}
    out = [e for e in edges if (e.dst if e.src == item.id else e.src) in seen]
    out.sort(key=lambda e: (-e.weight, e.src, e.dst, e.relation))
    return out
