"""Who may see and change what: a scope's partition, the contexts it reads, and the
memories it may read or change.

Every operation names a Scope. Its partition (user, agent) is enforced by the store;
session-bound layers and contexts are enforced here.
"""

from __future__ import annotations

from typing import Any

from ..engine import Engine
from ..errors import NotFoundError, ValidationError
from ..model import Layer, MemoryItem, Scope
from ..storage.base import Filter, Partition
from ..validation import check_unicode


def partition_of(scope: Scope) -> Partition:
    if not isinstance(scope, Scope):
        raise ValidationError(f"scope must be a zenbrain.Scope, got {type(scope).__name__}")
    return (scope.user_id, scope.agent_id)


def readable_contexts(engine: Engine, scope: Scope) -> frozenset[str]:
    """The contexts a reader in ``scope`` may see; empty means every context."""
    links = engine.config.context_links
    if not links:
        return frozenset({scope.context})
    if any(reader in (scope.context, "*") and source == "*" for reader, source in links):
        return frozenset()
    seen = {scope.context}
    for reader, source in links:
        if reader in (scope.context, "*"):
            seen.add(source)
    return frozenset(seen)


def read_filter(engine: Engine, scope: Scope, **kw: Any) -> Filter:
    """The filter of what ``scope`` may read, narrowed by ``kw``."""
    partition_of(scope)  # a scope that is not a Scope is refused here, before any attribute is read
    contexts = readable_contexts(engine, scope)
    return Filter(contexts=contexts or None, session_id=scope.session_id, **kw)


def visible(engine: Engine, scope: Scope, item: MemoryItem, *, include_archived: bool = False) -> bool:
    """Whether a reader in ``scope`` may see ``item`` (the partition is checked by the store)."""
    if item.archived and not include_archived:
        return False
    if not engine.config.context_allowed(scope.context, item.context):
        return False
    return not (item.layer in (Layer.WORKING, Layer.SHORT_TERM) and item.session_id != scope.session_id)


def check_id(memory_id: object) -> str:
    if not isinstance(memory_id, str) or not memory_id:
        raise ValidationError(f"memory id must be a non-empty string, got {memory_id!r}")
    return check_unicode("memory id", memory_id)


def get_visible(engine: Engine, scope: Scope, memory_id: str) -> MemoryItem:
    """A memory the scope may read (archived ones included)."""
    items = engine.store.get(partition_of(scope), [check_id(memory_id)])
    if not items or not visible(engine, scope, items[0], include_archived=True):
        raise NotFoundError(f"no memory {memory_id!r} in this scope")
    return items[0]


def get_own(engine: Engine, scope: Scope, memory_id: str) -> MemoryItem:
    """A memory the scope may change: visible, and of the scope's own context (a context
    link lets a reader see another context, never change it)."""
    item = get_visible(engine, scope, memory_id)
    if item.context != scope.context:
        raise NotFoundError(f"no memory {memory_id!r} that this context may change")
    return item


def check_own(engine: Engine, scope: Scope, item: MemoryItem | None, memory_id: str) -> MemoryItem:
    """``get_own``'s checks on an item read already (None when the store had none)."""
    if item is None or not visible(engine, scope, item, include_archived=True):
        raise NotFoundError(f"no memory {memory_id!r} in this scope")
    if item.context != scope.context:
        raise NotFoundError(f"no memory {memory_id!r} that this context may change")
    return item
