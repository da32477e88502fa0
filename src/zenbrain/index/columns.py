"""Per-row filter columns of a partition, as numpy arrays, and the masks of filters.

A filter is any object with the attributes of the store's ``Filter`` (layers, contexts,
session_id, include_archived, all_sessions, kinds, event_after, event_before, ids, and,
when present, sessions, turns and current_at): each restriction is a comparison of
integer codes, so a mask over a million rows costs a few milliseconds; it is cached and
patched row by row as rows change. ``due_before`` is not a column here (a review's due
time changes on every recall): the store resolves it to ids first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..model import Layer

LAYER_NAMES: tuple[str, ...] = tuple(layer.value for layer in Layer)
LAYER_CODE: dict[str, int] = {name: i for i, name in enumerate(LAYER_NAMES)}
# Working and short-term memories belong to one session: other sessions never see them.
EPHEMERAL = np.zeros(len(LAYER_NAMES), dtype=bool)
EPHEMERAL[[LAYER_CODE[Layer.WORKING.value], LAYER_CODE[Layer.SHORT_TERM.value]]] = True
_MASK_CACHE = 32


class FilterLike(Protocol):
    """What a filter provides (read-only: the store's ``Filter`` is a frozen dataclass)."""

    @property
    def layers(self) -> Any: ...
    @property
    def contexts(self) -> Any: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def include_archived(self) -> bool: ...
    @property
    def all_sessions(self) -> bool: ...
    @property
    def kinds(self) -> Any: ...
    @property
    def event_after(self) -> float | None: ...
    @property
    def event_before(self) -> float | None: ...
    @property
    def ids(self) -> Any: ...
    # sessions, turns and current_at are read with getattr: a filter may lack them.


def layer_code(layer: object) -> int:
    return LAYER_CODE[str(getattr(layer, "value", layer))]


@dataclass
class _Cached:
    mask: np.ndarray  # may be longer than the rows: the first n count
    count: int
    version: int


class Columns:
    """Growable per-row arrays: layer, context, session, kind (as codes), archived, event
    time, turn position (-1: none), the time the row stopped being current (inf: never),
    whether the row is the live version of a memory (``alive``) and has a vector
    (``dense``), and a 63-bit key of its content hash (a changed key means a changed
    vector)."""

    _ARRAYS = (("layer", np.int8), ("context", np.int32), ("session", np.int32), ("kind", np.int32),
               ("archived", np.bool_), ("alive", np.bool_), ("dense", np.bool_), ("event", np.float64), ("chash", np.int64),
               ("position", np.int64), ("until", np.float64))

    def __init__(self, capacity: int = 1024) -> None:
        self.n = 0
        self.codes: dict[str | None, int] = {}
        self.layers_present: set[int] = set()  # layer codes ever set (a superset of those live)
        self.version = 0  # changes so far
        self._changed: list[int] = []  # the rows of the last changes, oldest first
        self._since = 0  # the version at which _changed starts
        self._masks: dict[Hashable, _Cached] = {}
        self.superseded: set[int] = set()  # live rows with a finite ``until`` (few, as a rule)
        for name, dtype in self._ARRAYS:
            setattr(self, name, np.zeros(capacity, dtype=dtype))

    layer: np.ndarray
    context: np.ndarray
    session: np.ndarray
    kind: np.ndarray
    archived: np.ndarray
    alive: np.ndarray
    dense: np.ndarray
    event: np.ndarray
    chash: np.ndarray
    position: np.ndarray
    until: np.ndarray

    def code(self, value: str | None) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def append(self) -> int:
        """A new row (dead until set); its index."""
        if self.n == len(self.alive):
            new = max(1024, 2 * self.n)
            for name, dtype in self._ARRAYS:
                grown = np.zeros(new, dtype=dtype)
                grown[: self.n] = getattr(self, name)[: self.n]
                setattr(self, name, grown)
        self.n += 1
        self._touch(self.n - 1)
        return self.n - 1

    def set(self, row: int, *, layer: str, context: str, session_id: str | None, kind: str, archived: bool,
            event_time: float, chash: int, dense: bool, position: int | None = None,
            valid_until: float | None = None) -> None:
        self.layer[row] = layer_code(layer)
        self.context[row] = self.code(context)
        self.session[row] = self.code(session_id)
        self.kind[row] = self.code(kind)
        self.archived[row] = archived
        self.event[row] = event_time
        self.chash[row] = chash
        self.dense[row] = dense
        self.position[row] = -1 if position is None else position
        self.until[row] = np.inf if valid_until is None else valid_until
        if valid_until is None:
            self.superseded.discard(row)
        else:
            self.superseded.add(row)
        self.alive[row] = True
        self.layers_present.add(int(self.layer[row]))
        self._touch(row)

    def kill(self, row: int) -> None:
        self.alive[row] = False
        self.superseded.discard(row)
        self._touch(row)

    def forget(self, row: int) -> None:
        """Clear what a dead row says of its memory (content key, times, session, context,
        turn position): nothing reads a dead row, and its saved columns must not keep them."""
        none = self.code(None)
        self.chash[row] = 0
        self.event[row] = 0.0
        self.until[row] = np.inf
        self.position[row] = -1
        self.session[row] = none
        self.context[row] = none
        self._touch(row)

    def _touch(self, row: int) -> None:
        self._changed.append(row)
        self.version += 1
        if len(self._changed) > max(65536, self.n):  # forget old changes: older masks are rebuilt
            self._changed.clear()
            self._masks.clear()
            self._since = self.version

    def _table(self, values: Any) -> np.ndarray:
        table = np.zeros(len(self.codes) + 1, dtype=bool)
        table[[self.codes[v] for v in values if v in self.codes]] = True
        return table

    def mask(self, flt: FilterLike | None, ids: Sequence[str], pos: dict[str, int], *, layer: int | None = None,
             dense: bool = False, rows: np.ndarray | None = None) -> np.ndarray:
        """Whether each row (all rows, or ``rows``) is live and passes ``flt`` (and is of
        layer code ``layer``, and has a vector if ``dense``). No filter means the store's
        default one: no archived memories, no working or short-term memory."""
        at: slice | np.ndarray = slice(0, self.n) if rows is None else rows
        m = self.alive[at].copy()
        if dense:
            m &= self.dense[at]
        codes = self.layer[at]
        if layer is not None:
            m &= codes == layer
        if flt is None:
            return m & ~self.archived[at] & ~EPHEMERAL[codes]
        if not flt.include_archived:
            m &= ~self.archived[at]
        if flt.layers is not None:
            table = np.zeros(len(LAYER_NAMES), dtype=bool)
            table[[layer_code(x) for x in flt.layers]] = True
            m &= table[codes]
        if flt.contexts is not None:
            m &= self._table(flt.contexts)[self.context[at]]
        if not flt.all_sessions:
            ephemeral = EPHEMERAL[codes]
            if flt.session_id is None:
                m &= ~ephemeral
            else:
                m &= ~ephemeral | (self.session[at] == self.codes.get(flt.session_id, -1))
        if flt.kinds is not None:
            m &= self._table(flt.kinds)[self.kind[at]]
        if flt.event_after is not None:
            m &= self.event[at] >= flt.event_after
        if flt.event_before is not None:
            m &= self.event[at] <= flt.event_before
        sessions = getattr(flt, "sessions", None)
        if sessions is not None:
            m &= self._table(s for s in sessions if s is not None)[self.session[at]]  # SQL: NULL is in no list
        turns = getattr(flt, "turns", None)
        if turns is not None:
            m &= self._turn_mask(turns, at)
        current_at = getattr(flt, "current_at", None)
        if current_at is not None:
            m &= self.until[at] > current_at
        if flt.ids is not None:
            if rows is None:
                sel = np.zeros(self.n, dtype=bool)
                sel[[pos[i] for i in flt.ids if i in pos]] = True
            else:
                sel = np.fromiter((ids[r] in flt.ids for r in rows.tolist()), bool, len(rows))
            m &= sel
        return m

    def _turn_mask(self, turns: Any, at: slice | np.ndarray) -> np.ndarray:
        """Rows at one of the (session, position) pairs (a turn has a session and a position)."""
        keys = np.array([(self.codes[s] << 32) | (int(p) & 0xFFFFFFFF) for s, p in turns
                         if s is not None and s in self.codes and p is not None and 0 <= int(p) < 1 << 32], dtype=np.int64)
        pos = self.position[at]
        key = (self.session[at].astype(np.int64) << 32) | (pos & 0xFFFFFFFF)
        return (pos >= 0) & np.isin(key, keys)

    def cached_mask(self, flt: FilterLike | None, ids: Sequence[str], pos: dict[str, int], *,
                    layer: int | None = None, dense: bool = False) -> tuple[np.ndarray, int]:
        """``mask(...)`` (read-only) and how many rows it lets through. Kept per filter
        (filters are frozen dataclasses: equal filters share one) and brought up to date by
        re-evaluating only the rows changed since, so a write between two searches costs
        the rows it touched, not a pass over the partition."""
        at = getattr(flt, "current_at", None)
        if at is not None and dataclasses.is_dataclass(flt) and not isinstance(flt, type):
            # "Current at t" changes with every query's time: cache the rest of the filter
            # and drop the few superseded rows here, instead of a new mask per query.
            m, count = self.cached_mask(dataclasses.replace(flt, current_at=None), ids, pos, layer=layer, dense=dense)
            gone = [r for r in self.superseded if self.until[r] <= at and r < len(m) and m[r]]
            if gone:
                m = m.copy()
                m[gone] = False
                count -= len(gone)
            return m, count
        key = (flt, layer, dense)
        try:
            entry = self._masks.get(key)
        except TypeError:  # an unhashable filter: built each time
            m = self.mask(flt, ids, pos, layer=layer, dense=dense)
            return m, int(np.count_nonzero(m))
        n = self.n
        if entry is not None and entry.version != self.version:
            behind = self.version - entry.version
            if entry.version < self._since or behind > n // 32:
                entry = None
            else:
                rows = np.unique(np.asarray(self._changed[len(self._changed) - behind :], dtype=np.int64))
                if len(entry.mask) < n:
                    grown = np.zeros(max(n, 2 * len(entry.mask)), dtype=bool)
                    grown[: len(entry.mask)] = entry.mask
                    entry.mask = grown
                new = self.mask(flt, ids, pos, layer=layer, dense=dense, rows=rows)
                entry.count += int(np.count_nonzero(new)) - int(np.count_nonzero(entry.mask[rows]))
                entry.mask[rows] = new
                entry.version = self.version
        if entry is None:
            m = self.mask(flt, ids, pos, layer=layer, dense=dense)
            entry = _Cached(m, int(np.count_nonzero(m)), self.version)
            if len(self._masks) >= _MASK_CACHE:
                self._masks.clear()
            self._masks[key] = entry
        view = entry.mask[:n]
        view.flags.writeable = False
        return view, entry.count

    def state(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name)[: self.n] for name, _ in self._ARRAYS}

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], codes: list[str | None]) -> Columns:
        n = len(arrays["alive"])
        cols = cls(capacity=max(1024, n))
        cols.until[:] = np.inf
        cols.position[:] = -1
        for name, dtype in cls._ARRAYS:
            if name in arrays:
                getattr(cols, name)[:n] = np.asarray(arrays[name], dtype=dtype)
        cols.n = n
        cols.codes = {c: i for i, c in enumerate(codes)}
        cols.layers_present = set(np.unique(cols.layer[:n][cols.alive[:n]]).tolist())
        cols.superseded = set(np.flatnonzero(np.isfinite(cols.until[:n]) & cols.alive[:n]).tolist())
        return cols
