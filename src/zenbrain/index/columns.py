"""Per-row filter columns of a partition, as numpy arrays, and the masks of filters.

A filter is any object with the attributes of the store's ``Filter`` (layers, contexts,
session_id, include_archived, all_sessions, kinds, event_after, event_before, ids):
each restriction is a comparison of integer codes, so a mask over a million rows costs
a few milliseconds and is cached until the rows change.
"""

from __future__ import annotations

from collections.abc import Hashable
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
    layers: Any
    contexts: Any
    session_id: str | None
    include_archived: bool
    all_sessions: bool
    kinds: Any
    event_after: float | None
    event_before: float | None
    ids: Any


def layer_code(layer: object) -> int:
    return LAYER_CODE[str(getattr(layer, "value", layer))]


class Columns:
    """Growable per-row arrays: layer, context, session, kind (as codes), archived, event
    time, whether the row is the live version of a memory (``alive``) and has a vector
    (``dense``), and a 63-bit key of its content hash (a changed key means a changed
    vector)."""

    _ARRAYS = (("layer", np.int8), ("context", np.int32), ("session", np.int32), ("kind", np.int32),
               ("archived", np.bool_), ("alive", np.bool_), ("dense", np.bool_), ("event", np.float64), ("chash", np.int64))

    def __init__(self, capacity: int = 1024) -> None:
        self.n = 0
        self.codes: dict[str | None, int] = {}
        self.version = 0
        self._masks: dict[Hashable, np.ndarray] = {}
        self._masks_version = -1
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
        self.version += 1
        return self.n - 1

    def set(self, row: int, *, layer: str, context: str, session_id: str | None, kind: str, archived: bool,
            event_time: float, chash: int, dense: bool) -> None:
        self.layer[row] = layer_code(layer)
        self.context[row] = self.code(context)
        self.session[row] = self.code(session_id)
        self.kind[row] = self.code(kind)
        self.archived[row] = archived
        self.event[row] = event_time
        self.chash[row] = chash
        self.dense[row] = dense
        self.alive[row] = True
        self.version += 1

    def kill(self, row: int) -> None:
        self.alive[row] = False
        self.version += 1

    def _table(self, values: Any) -> np.ndarray:
        table = np.zeros(len(self.codes) + 1, dtype=bool)
        table[[self.codes[v] for v in values if v in self.codes]] = True
        return table

    def mask(self, flt: FilterLike | None, pos: dict[str, int]) -> np.ndarray:
        """Rows ``flt`` lets through among the live ones (a new array). No filter means the
        store's default one: no archived memories, no working or short-term memory."""
        n = self.n
        m = self.alive[:n].copy()
        if flt is None:
            return m & ~self.archived[:n] & ~EPHEMERAL[self.layer[:n]]
        if not flt.include_archived:
            m &= ~self.archived[:n]
        if flt.layers is not None:
            table = np.zeros(len(LAYER_NAMES), dtype=bool)
            table[[layer_code(x) for x in flt.layers]] = True
            m &= table[self.layer[:n]]
        if flt.contexts is not None:
            m &= self._table(flt.contexts)[self.context[:n]]
        if not flt.all_sessions:
            ephemeral = EPHEMERAL[self.layer[:n]]
            if flt.session_id is None:
                m &= ~ephemeral
            else:
                m &= ~ephemeral | (self.session[:n] == self.codes.get(flt.session_id, -1))
        if flt.kinds is not None:
            m &= self._table(flt.kinds)[self.kind[:n]]
        if flt.event_after is not None:
            m &= self.event[:n] >= flt.event_after
        if flt.event_before is not None:
            m &= self.event[:n] <= flt.event_before
        if flt.ids is not None:
            sel = np.zeros(n, dtype=bool)
            rows = [pos[i] for i in flt.ids if i in pos]
            sel[rows] = True
            m &= sel
        return m

    def cached_mask(self, flt: FilterLike | None, pos: dict[str, int]) -> np.ndarray:
        """``mask(flt)``, read-only, kept until the rows change (filters are frozen
        dataclasses: equal filters share one mask)."""
        if self._masks_version != self.version:
            self._masks.clear()
            self._masks_version = self.version
        try:
            m = self._masks.get(flt)
        except TypeError:  # an unhashable filter: built each time
            return self.mask(flt, pos)
        if m is None:
            m = self.mask(flt, pos)
            m.flags.writeable = False
            if len(self._masks) >= _MASK_CACHE:
                self._masks.clear()
            self._masks[flt] = m
        return m

    def state(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name)[: self.n] for name, _ in self._ARRAYS}

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], codes: list[str | None]) -> Columns:
        n = len(arrays["alive"])
        cols = cls(capacity=max(1024, n))
        for name, dtype in cls._ARRAYS:
            getattr(cols, name)[:n] = np.asarray(arrays[name], dtype=dtype)
        cols.n = n
        cols.codes = {c: i for i, c in enumerate(codes)}
        return cols
