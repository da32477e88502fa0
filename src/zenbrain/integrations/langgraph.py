"""zenbrain as a LangGraph store (``BaseStore``), for LangGraph agents and LangMem.

    from langgraph.graph import StateGraph
    from zenbrain import open_memory
    from zenbrain.integrations.langgraph import ZenbrainStore

    store = ZenbrainStore(open_memory("memory.db"))
    graph = builder.compile(store=store)          # nodes get it as `store` / get_store()
    store.put(("alice", "memories"), "tea", {"content": "Alice prefers green tea"})
    store.search(("alice", "memories"), query="what does Alice drink?")

Install with ``pip install "zenbrain[langgraph]"``.

Namespaces and scopes
---------------------
One label of each namespace names the zenbrain *user* (``user_label``, default 0: the
first), so users stay as isolated as everywhere in zenbrain: every item lives in the
partition ``(user, agent_id)`` (``agent_id`` default ``"langgraph"``). The other labels,
in order, form the zenbrain *context* ``lg.<label>.<label>...`` (``lg`` alone for a
namespace that is only the user), so a search in one namespace is a recall filtered to
one context inside the database. Characters outside letters, digits and ``_:@-`` are
written as ``+XX`` (their UTF-8 bytes), so any label maps one-to-one (a scope part
holds at most 128 characters; a longer mapped namespace is refused). Examples with
``user_label=0``::

    ("alice",)                 -> Scope("alice", "langgraph", context="lg")
    ("alice", "memories")      -> Scope("alice", "langgraph", context="lg.memories")
    ("bob", "prefs", "ui v2")  -> Scope("bob",   "langgraph", context="lg.prefs.ui+20v2")

LangMem's usual ``("memories", "{user_id}")`` needs ``user_label=1``.

Items
-----
An item is one zenbrain memory. Its text (what is embedded and ranked) comes from the
value's fields named by the ``index`` configuration or the put's ``index`` argument
(LangGraph's path syntax), by default ``content`` or ``text`` when the value has one,
else the whole value as JSON. The key, the value and whether it is indexed are kept in
the memory's metadata. A put on an existing key updates the memory (its history keeps
the earlier version); a put of ``None`` erases it. ``index=False`` items are stored and
listed but never ranked by a query.

Search
------
With a query: zenbrain's recall (dense + BM25 fusion, layer weights, retrievability,
...) in each context under the prefix, merged by score; ``reinforce=True`` (default)
lets a search count as recall (access counts, spacing, Hebbian links), ``False`` makes
it read-only. Without a query: the items by last update, newest first. ``filter`` is
matched on the values (equality, nested dicts, and ``$eq $ne $gt $gte $lt $lte``), after
ranking, over up to ``filter_overfetch`` times the requested number of hits. A prefix
must include the user label: a search never spans users. TTLs are not supported.
Decay may archive an item that is never read: it stays readable by key and by listing,
and drops out of query rankings until it is read again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError('zenbrain.integrations.langgraph needs LangGraph: pip install "zenbrain[langgraph]"') from exc

from ..aio import AsyncMemory
from ..api import MemoryCoordinator
from ..errors import ValidationError
from ..model import MemoryItem, Scope

__all__ = ["NamespaceMap", "ZenbrainStore"]

_PLAIN = re.compile(r"[A-Za-z0-9_:@\-]")
_ESCAPE = re.compile(r"\+([0-9A-F]{2})")
_CONTEXT_ROOT = "lg"
_DEFAULT_FIELDS = ("content", "text")


def encode_label(label: str) -> str:
    """A namespace label as scope-safe text (one-to-one)."""
    return "".join(ch if _PLAIN.fullmatch(ch) else "".join(f"+{b:02X}" for b in ch.encode("utf-8")) for ch in label)


def decode_label(text: str) -> str:
    raw = bytearray()
    i = 0
    while i < len(text):
        m = _ESCAPE.match(text, i)
        if m:
            raw.append(int(m.group(1), 16))
            i = m.end()
        else:
            raw.extend(text[i].encode("utf-8"))
            i += 1
    return raw.decode("utf-8")


class NamespaceMap:
    """Namespace <-> (scope of one user, context); see the module docstring."""

    def __init__(self, *, user_label: int = 0, agent_id: str = "langgraph") -> None:
        if isinstance(user_label, bool) or not isinstance(user_label, int) or user_label < 0:
            raise ValidationError(f"user_label must be an index >= 0, got {user_label!r}")
        Scope("check", agent_id)  # validates agent_id
        self.user_label = user_label
        self.agent_id = agent_id

    def user_of(self, namespace: tuple[str, ...]) -> str:
        if len(namespace) <= self.user_label:
            raise ValidationError(
                f"namespace {namespace!r} does not name a user: label {self.user_label} is the user "
                "(a namespace or search prefix must include it)"
            )
        return namespace[self.user_label]

    def scope(self, namespace: tuple[str, ...]) -> Scope:
        user = self.user_of(namespace)
        rest = namespace[: self.user_label] + namespace[self.user_label + 1 :]
        context = ".".join([_CONTEXT_ROOT, *(encode_label(x) for x in rest)])
        return Scope(encode_label(user), self.agent_id, context=context)

    def namespace(self, user_id: str, context: str) -> tuple[str, ...] | None:
        """The namespace of a (user, context) this map made, or None for other contexts."""
        parts = context.split(".")
        if parts[0] != _CONTEXT_ROOT or len(parts) - 1 < self.user_label:
            return None
        rest = [decode_label(p) for p in parts[1:]]
        return (*rest[: self.user_label], decode_label(user_id), *rest[self.user_label :])


def _matches(value: Any, condition: Any) -> bool:
    """LangGraph's filter semantics: equality, nested dicts, and comparison operators."""
    if isinstance(condition, Mapping):
        if any(str(k).startswith("$") for k in condition):
            return all(_compare(value, op, arg) for op, arg in condition.items())
        return isinstance(value, Mapping) and all(_matches(value.get(k), v) for k, v in condition.items())
    return bool(value == condition)


def _compare(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError(f"unknown filter operator {op!r}")
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _match_namespace(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)


def _when(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


class ZenbrainStore(BaseStore):
    """A LangGraph ``BaseStore`` on a zenbrain memory (see the module docstring).

    ``memory`` is a coordinator or an :class:`~zenbrain.aio.AsyncMemory`; the sync and
    async entry points share one lock, so both may be used on the same store.
    """

    supports_ttl = False

    def __init__(
        self,
        memory: MemoryCoordinator | AsyncMemory,
        *,
        user_label: int = 0,
        agent_id: str = "langgraph",
        index: IndexConfig | None = None,
        reinforce: bool = True,
        filter_overfetch: int = 4,
    ) -> None:
        self.memory = memory if isinstance(memory, AsyncMemory) else AsyncMemory(memory)
        self.map = NamespaceMap(user_label=user_label, agent_id=agent_id)
        fields = (index or {}).get("fields")
        self.fields: tuple[str, ...] | None = tuple(fields) if fields else None
        self.reinforce = bool(reinforce)
        self.filter_overfetch = max(1, int(filter_overfetch))

    # ------------------------------------------------------------------ entry points
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return self.memory.locked(lambda m: self._run(m, ops), write=self._writes(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await self.memory.run(lambda m: self._run(m, ops), write=self._writes(ops))

    def _writes(self, ops: Sequence[Op]) -> bool:
        return any(isinstance(op, PutOp) or (isinstance(op, SearchOp) and op.query and self.reinforce) for op in ops)

    # ------------------------------------------------------------------ one batch
    def _run(self, m: MemoryCoordinator, ops: Sequence[Op]) -> list[Result]:
        for op in ops:
            validate_op_namespace(op)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = self._find(m, op.namespace, op.key)
                results.append(None if found is None else self._item(found, op.namespace))
            elif isinstance(op, PutOp):
                self._put(m, op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(m, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(m, op))
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        return results

    def _find(self, m: MemoryCoordinator, namespace: tuple[str, ...], key: str) -> MemoryItem | None:
        for item in m.list_memories(self.map.scope(namespace), include_archived=True):
            if item.metadata.get("lg_key") == key:
                return item
        return None

    @staticmethod
    def _item(item: MemoryItem, namespace: tuple[str, ...]) -> Item:
        return Item(namespace=namespace, key=item.metadata["lg_key"], value=item.metadata.get("lg_value", {}),
                    created_at=_when(item.created_at), updated_at=_when(item.updated_at))

    def _text(self, value: Mapping[str, Any], index: Sequence[str] | None) -> str:
        fields = list(index) if index else list(self.fields or [])
        if not fields:
            fields = [f for f in _DEFAULT_FIELDS if isinstance(value.get(f), str) and value[f].strip()][:1]
        texts: list[str] = []
        for path in fields:
            texts.extend(get_text_at_path(dict(value), path if path == "$" else tokenize_path(path)))
        text = "\n".join(t for t in texts if t and t.strip())
        return text or json.dumps(dict(value), sort_keys=True, ensure_ascii=False)

    def _put(self, m: MemoryCoordinator, op: PutOp) -> None:
        scope = self.map.scope(op.namespace)
        old = self._find(m, op.namespace, op.key)
        if op.value is None:
            if old is not None:
                m.forget(old.id, scope)
            return
        if not isinstance(op.value, Mapping):
            raise ValidationError(f"a store value must be a dict, got {type(op.value).__name__}")
        index = op.index if isinstance(op.index, list) else None
        content = self._text(op.value, index)
        meta = {"lg_key": op.key, "lg_value": dict(op.value), "lg_index": op.index is not False}
        if old is None:
            m.store(content, scope, metadata=meta)
        else:
            m.update(old.id, scope, content=content, metadata={**old.metadata, **meta})

    def _contexts(self, m: MemoryCoordinator, user: str) -> list[str]:
        return m.contexts(Scope(encode_label(user), self.map.agent_id))

    def _search(self, m: MemoryCoordinator, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        user = self.map.user_of(prefix)
        spaces = []
        for ctx in self._contexts(m, user):
            ns = self.map.namespace(encode_label(user), ctx)
            if ns is not None and ns[: len(prefix)] == prefix:
                spaces.append(ns)
        want = op.offset + op.limit
        found: list[tuple[float | None, MemoryItem, tuple[str, ...]]] = []
        for ns in spaces:
            scope = self.map.scope(ns)
            if op.query:
                k = min(1000, want * (self.filter_overfetch if op.filter else 1))
                for hit in m.recall(op.query, scope, k=k, touch=self.reinforce):
                    if "lg_key" in hit.item.metadata and hit.item.metadata.get("lg_index", True):
                        found.append((hit.score, hit.item, ns))
            else:
                found.extend((None, item, ns) for item in m.list_memories(scope, include_archived=True)
                             if "lg_key" in item.metadata)
        if op.filter:
            found = [f for f in found if all(_matches(f[1].metadata.get("lg_value", {}).get(k), v)
                                             for k, v in op.filter.items())]
        if op.query:
            found.sort(key=lambda f: (-(f[0] or 0.0), f[1].id))
        else:
            found.sort(key=lambda f: (-f[1].updated_at, f[1].id))
        page = found[op.offset : op.offset + op.limit]
        return [SearchItem(ns, item.metadata["lg_key"], item.metadata.get("lg_value", {}), _when(item.created_at),
                           _when(item.updated_at), score=score) for score, item, ns in page]

    def _list_namespaces(self, m: MemoryCoordinator, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces: set[tuple[str, ...]] = set()
        for user_id, agent_id in m.storage.partitions():
            if agent_id != self.map.agent_id:
                continue
            for ctx in m.contexts(Scope(user_id, agent_id)):
                ns = self.map.namespace(user_id, ctx)
                if ns is not None:
                    spaces.add(ns)
        out = [ns for ns in spaces if all(_match_namespace(ns, c) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            out = list({ns[: op.max_depth] for ns in out})
        return sorted(out)[op.offset : op.offset + op.limit]
