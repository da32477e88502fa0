"""Shared pieces of the offline lifecycle (decay, consolidate, sleep): the partition
snapshot the stages share, and small helpers for report entries."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...engine import Engine
from ...model import Edge, Layer, MemoryItem
from ...storage.base import Filter, Partition

SKIPPED = "switched off"


def skipped(reason: str = SKIPPED) -> dict[str, Any]:
    return {"skipped": reason}


# ---------------------------------------------------------------------------- loading
def load(
    engine: Engine,
    part: Partition,
    *,
    layers: Iterable[Layer] | None = None,
    include_archived: bool = False,
    order_by: str = "created_at",
    descending: bool = False,
    limit: int | None = None,
    share: Callable[[MemoryItem], MemoryItem] | None = None,
) -> list[MemoryItem]:
    """Long-term memories of the whole partition (every context; never working/short-term);
    each through ``share`` as it is read (``Store.query``)."""
    flt = Filter(
        layers=None if layers is None else frozenset(layers),
        contexts=None,
        session_id=None,
        include_archived=include_archived,
    )
    return engine.store.query(part, flt, order_by=order_by, descending=descending, limit=limit, share=share)


class _Shared:
    """Makes each memory read hold one string object for each distinct user, agent,
    context, session and speaker (each row read brings its own copies; a partition has one
    user and agent, few contexts, and many turns of each session and speaker) and share its
    floats (``_Floats``), as its row is read."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.floats = _Floats()

    def __call__(self, i: MemoryItem) -> MemoryItem:
        seen = self.strings
        i.user_id = seen.setdefault(i.user_id, i.user_id)
        i.agent_id = seen.setdefault(i.agent_id, i.agent_id)
        i.context = seen.setdefault(i.context, i.context)
        if i.session_id is not None:
            i.session_id = seen.setdefault(i.session_id, i.session_id)
        if i.speaker is not None:
            i.speaker = seen.setdefault(i.speaker, i.speaker)
        self.floats.item(i)
        return i


# Float values the snapshot shares across memories, at most this many (a few MB); past it,
# values are shared within each memory only.
SHARED_FLOATS = 1 << 16


class _Floats:
    """One float object per value: a memory's times are often equal (created, updated,
    last accessed, its TripleCopy anchors, its FSRS due time and ``due_at``) and its levels
    (importance, valence, stability, confidences, ...) take few values across a partition,
    yet each row read brings a new object for each (32 bytes; some twenty per memory).

    Floats are immutable, so sharing changes no value: equal floats are the same number
    except 0.0 and -0.0 (kept apart) and NaN (never equal, left alone)."""

    def __init__(self) -> None:
        self.common: dict[float, float] = {}
        self.own: dict[float, float] = {}  # the current memory's values, once ``common`` is full

    def __call__(self, x: Any) -> Any:
        if type(x) is not float or math.isnan(x):
            return x
        if x == 0.0:
            return _ZERO if math.copysign(1.0, x) > 0.0 else _NEGATIVE_ZERO
        y = self.common.get(x)
        if y is None:
            y = self.own.setdefault(x, x)
            if len(self.common) < SHARED_FLOATS:
                self.common[x] = y
        return y

    def item(self, i: MemoryItem) -> None:
        """Share ``i``'s float fields and the floats of its state (top level and one dict down)."""
        self.own.clear()
        i.created_at, i.updated_at, i.last_access = self(i.created_at), self(i.updated_at), self(i.last_access)
        i.event_time, i.valid_until = self(i.event_time), self(i.valid_until)
        i.importance, i.valence, i.arousal = self(i.importance), self(i.valence), self(i.arousal)
        i.stability, i.strength = self(i.stability), self(i.strength)
        i.conf_alpha, i.conf_beta = self(i.conf_alpha), self(i.conf_beta)
        state: Any = i.state
        for k, v in state.items():
            if type(v) is dict:
                for k2, v2 in v.items():
                    v[k2] = self(v2)  # the same keys: the dict does not change size
            else:
                state[k] = self(v)


_ZERO, _NEGATIVE_ZERO = 0.0, -0.0


class _SharedEdges:
    """Makes each edge read hold the snapshot's own id strings for its ends, one string per
    relation and shared floats (``_Floats``): a memory's id is then held once however many
    edges name it (each row read brings new strings)."""

    def __init__(self, items: Mapping[str, MemoryItem]) -> None:
        self.items = items
        self.relations: dict[str, str] = {}
        self.floats = _Floats()

    def __call__(self, e: Edge) -> Edge:
        src, dst = self.items.get(e.src), self.items.get(e.dst)
        if src is not None:
            e.src = src.id
        if dst is not None:
            e.dst = dst.id
        e.relation = self.relations.setdefault(e.relation, e.relation)
        f = self.floats
        f.own.clear()
        e.weight, e.variance, e.updated_at = f(e.weight), f(e.variance), f(e.updated_at)
        return e


# Up to this many memories, ``Snapshot.edges_touching`` reads their edges from the store
# (two index lookups a few hundred ids at a time) instead of loading the whole graph.
TOUCHING_READ_MAX = 20_000


class Snapshot:
    """The partition's long-term memories and edges, read once per operation.

    Stages read from it and, when they write, change the snapshot's objects the same way
    (strengths, states, archived flags, layers, confidences; edges put or deleted), so a
    whole sleep reads the store twice instead of once per stage. Writes by another
    process during the operation are not seen (as with any read-then-write pass).

    Edge writes can be deferred (``defer_edges``): the snapshot changes at once and the
    store at the next edge write through the snapshot (``write_edges``, ``put_edges``,
    ``delete_edges``) or ``flush``, in that write's transaction. ``write_edges`` merges
    them with its own: an edge put twice is written once, with its last value; an edge
    put and then deleted is only deleted. The store ends as after the writes one by one.
    A deferred put is kept as its key only and written with the snapshot's edge of that
    key at the time (a whole-graph decay defers every edge: a second map of them all
    would hold as much as the snapshot's own).
    """

    def __init__(self, engine: Engine, part: Partition) -> None:
        self.engine = engine
        self.part = part
        self.items: dict[str, MemoryItem] = {i.id: i for i in load(engine, part, include_archived=True, share=_Shared())}
        self._edges: dict[tuple[str, str, str], Edge] | None = None
        # Deferred writes: deletions (they came first), then puts by key, then key-value pairs.
        self._deferred_deletes: list[tuple[str, str, str]] = []
        self._deferred_puts: list[tuple[str, str, str]] = []  # keys of the snapshot's edges
        self._deferred_kv: dict[str, Any] = {}

    def select(
        self, *, layers: Iterable[Layer] | None = None, archived: bool | None = False, kind: Any = None
    ) -> list[MemoryItem]:
        """Memories (oldest first) of the given layers; ``archived=None`` means either state."""
        lay = None if layers is None else frozenset(layers)
        if kind is None and archived is not None:  # the common filters, tested with less work
            if lay is None:
                return [i for i in self.items.values() if i.archived == archived]
            return [i for i in self.items.values() if i.layer in lay and i.archived == archived]
        return [
            i for i in self.items.values()
            if (lay is None or i.layer in lay)
            and (archived is None or i.archived == archived)
            and (kind is None or i.kind is kind)
        ]

    def add(self, items: Iterable[MemoryItem]) -> None:
        for i in items:
            self.items[i.id] = i

    @property
    def edges(self) -> dict[tuple[str, str, str], Edge]:
        if self._edges is None:
            self._edges = {edge_key(e): e for e in self._read_edges()}
        return self._edges

    def _read_edges(self, ids: Sequence[str] | None = None) -> list[Edge]:
        """The store's edges (touching ``ids``, or all), shared as each row is read
        (``_SharedEdges``)."""
        return self.engine.store.edges(self.part, ids, share=_SharedEdges(self.items))

    def edges_touching(self, ids: Iterable[str]) -> list[Edge]:
        want = set(ids)
        if self._edges is None and len(want) <= TOUCHING_READ_MAX:
            # Not every edge read for a few memories' (a million-memory graph: ~25 s);
            # nothing is deferred before the edges are loaded, so the store holds them all.
            return self._read_edges(sorted(want))
        return [e for e in self.edges.values() if e.src in want or e.dst in want]

    def reload_edges_of(self, ids: Sequence[str]) -> None:
        """Re-read the edges touching ``ids`` (after a write this snapshot did not make,
        e.g. ``store_many`` linking new memories)."""
        if self._edges is None or not ids:
            return
        self.flush()  # the store must hold what the snapshot holds before it is read again
        for e in self._read_edges(list(ids)):
            self._edges[edge_key(e)] = e

    def put_edges(self, tx: Any, edges: Sequence[Edge]) -> None:
        self.write_edges(tx, puts=edges)

    def delete_edges(self, tx: Any, keys: Sequence[tuple[str, str, str]]) -> None:
        self.write_edges(tx, deletes=keys)

    def write_edges(
        self,
        tx: Any,
        *,
        puts: Sequence[Edge] | Mapping[tuple[str, str, str], Edge] = (),
        deletes: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """Put ``puts``, then delete ``deletes`` (with the deferred writes before them), in ``tx``.

        ``puts`` may be given keyed already (``{(src, dst, relation): edge}``)."""
        first = self._deferred_deletes
        deferred = self._deferred_puts
        kv = self._deferred_kv
        self._deferred_deletes, self._deferred_puts, self._deferred_kv = [], [], {}
        if isinstance(puts, Mapping):
            keyed: Any = puts.items()
            puts = list(puts.values())
        else:
            keyed = [((e.src, e.dst, e.relation), e) for e in puts]
        if self._edges is not None:
            self._edges.update(keyed)
            for k in deletes:
                self._edges.pop(k, None)
        if first:
            tx.delete_edges(self.part, first)
        out = list(puts)
        if deferred:
            out = self._deferred_edges(deferred, {k for k, _ in keyed}) + out
        if out:
            tx.put_edges(self.part, out)
        if deletes:
            tx.delete_edges(self.part, list(deletes))
        for key, value in kv.items():
            tx.kv_put(self.part, {key: value})

    def _deferred_edges(self, keys: list[tuple[str, str, str]], putting: set[tuple[str, str, str]]) -> list[Edge]:
        """The snapshot's edges of the deferred ``keys`` that this write neither puts
        (it writes their last value itself) nor has deleted."""
        edges = self._edges
        assert edges is not None  # loaded by defer_edges
        return [e for k in keys if k not in putting for e in (edges.get(k),) if e is not None]

    def defer_edges(
        self,
        *,
        puts: Sequence[Edge] | Mapping[tuple[str, str, str], Edge] = (),
        changed: Sequence[tuple[str, str, str]] = (),
        deletes: Sequence[tuple[str, str, str]] = (),
        kv: dict[str, Any] | None = None,
    ) -> None:
        """Change the snapshot now and the store with the next edge write (see the class).

        Only for writes made before any other deferred write: deletions of edges that no
        deferred put names, then puts (a sequence, or keyed as in ``write_edges``) and the
        keys of the snapshot's edges ``changed`` in place (distinct, none of them put).
        ``kv`` pairs are written with the edges.
        """
        if self.deferred:
            raise RuntimeError("edge writes are already deferred; flush them first")
        current = self.edges  # loaded now: a later load would not see the deferred writes
        self._deferred_deletes = list(deletes)
        keyed: Any = puts.items() if isinstance(puts, Mapping) else [((e.src, e.dst, e.relation), e) for e in puts]
        current.update(keyed)
        self._deferred_puts = list(dict.fromkeys(k for k, _ in keyed)) + list(changed)
        self._deferred_kv = dict(kv or {})
        for k in deletes:
            current.pop(k, None)

    @property
    def deferred(self) -> bool:
        return bool(self._deferred_puts or self._deferred_deletes or self._deferred_kv)

    def flush(self) -> None:
        """Write the deferred edge writes, if any, in a transaction of their own."""
        if self.deferred:
            with self.engine.store.transaction() as tx:
                self.write_edges(tx)


def vectors(engine: Engine, part: Partition, ids: Sequence[str]) -> np.ndarray:
    if not ids:
        return np.zeros((0, engine.store.dim), dtype=np.float32)
    return np.asarray(engine.store.vectors(part, list(ids)), dtype=np.float32)


def edge_key(e: Edge) -> tuple[str, str, str]:
    return (e.src, e.dst, e.relation)


def edge_entry(e: Edge, old: float | None = None, new: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"src": e.src, "dst": e.dst, "relation": e.relation}
    if old is not None or new is not None:
        out["weight"] = [num(old if old is not None else e.weight), num(new if new is not None else e.weight)]
    else:
        out["weight"] = num(e.weight)
    return out


def num(x: Any) -> float:
    return float(x)


def col(items: Sequence[MemoryItem], name: str, dtype: Any = float) -> np.ndarray:
    return np.fromiter((getattr(i, name) for i in items), dtype=dtype, count=len(items))
