"""The embedded default store: one SQLite file in WAL mode.

* Every operation's writes run in one ``BEGIN IMMEDIATE`` transaction.
* Lexical search is FTS5 BM25 (porter stemming); vectors live in a content-hash keyed
  embedding table that doubles as the embedding cache, so no text is embedded twice.
* Dense search uses an exact in-memory index per partition (``vector_index``) that is
  derived from committed rows and follows the ``changes`` log, so several processes can
  share one file and a crash can never leave the index disagreeing with the data.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
import os
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any

import numpy as np

from .._sqlite import enable_wal
from ..errors import ConfigError, StorageError, ValidationError
from ..model import Edge, HistoryEvent, Kind, Layer, MemoryItem
from . import json_text
from .base import Filter, Partition, StoreStats, iter_chunks
from .migrations import MIGRATIONS
from .vector_index import PartitionIndex, Row

_COLUMNS = (
    "id", "user_id", "agent_id", "session_id", "context", "layer", "kind", "content", "content_hash",
    "metadata", "created_at", "updated_at", "event_time", "last_access", "access_count", "importance",
    "valence", "arousal", "stability", "strength", "conf_alpha", "conf_beta", "archived", "version",
    "due_at", "state",
)
_INDEXED = frozenset({"layer", "context", "session_id", "archived", "kind", "event_time", "created_at"})
_UPDATABLE = frozenset(_COLUMNS) - {"id", "user_id", "agent_id", "content", "content_hash", "metadata", "state"}
_FTS_TOKEN = re.compile(r"[\w]+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her hers him his how i in is it its "
    "me my of on or our she so that the their them they this to was we were what when where which who "
    "whom why will with you your".split()
)


# Rounds of random rowids a large partition's sample may take before all its ids are read.
SAMPLE_ROUNDS = 4

# Planner statistics: gathered once the memories table has this many rows and again each
# time it has grown by this factor, from this many rows per index (PRAGMA analysis_limit).
ANALYZE_MIN_ROWS = 10_000
ANALYZE_GROWTH = 2
ANALYZE_LIMIT = 1000

# The lexical search's first step ranks this many FTS matches per result asked for.
LEXICAL_HEAD_FACTOR = 4
LEXICAL_HEAD_MIN = 100


def fts_query(text: str) -> str | None:
    """An FTS5 OR-query of the text's distinct words (stopwords dropped), each quoted."""
    words = []
    seen = set()
    for w in _FTS_TOKEN.findall(text.lower()):
        if w in _STOPWORDS or w in seen:
            continue
        seen.add(w)
        words.append('"' + w.replace('"', "") + '"')
    if not words:
        return None
    return " OR ".join(words)


# MemoryItem's fields are _COLUMNS in order without due_at (which only mirrors
# state["due_at"] for the due index); rows are read as plain tuples of _SELECT.
_SELECT = ",".join(_COLUMNS)
_DUE_AT = _COLUMNS.index("due_at")
if tuple(f.name for f in dataclasses.fields(MemoryItem)) != _COLUMNS[:_DUE_AT] + _COLUMNS[_DUE_AT + 1 :]:
    raise RuntimeError("MemoryItem's fields no longer match the memories table")
_FIELD = {name: i for i, name in enumerate(f.name for f in dataclasses.fields(MemoryItem))}
_EDGE = "src, dst, relation, weight, variance, activations, updated_at"  # Edge's fields in order
if tuple(f.name for f in dataclasses.fields(Edge)) != tuple(_EDGE.split(", ")):
    raise RuntimeError("Edge's fields no longer match the edges table")
# A vector index row of each memory the WHERE clause that follows selects. CROSS JOIN keeps
# memories the outer table: without planner statistics SQLite may otherwise scan the whole
# embeddings table and look memories up by content hash, for a handful of changed ids.
_INDEX_ROW = (
    "m.id, m.layer, m.context, m.session_id, m.archived, m.kind, COALESCE(m.event_time, m.created_at) AS t, "
    "e.vector FROM memories m CROSS JOIN embeddings e ON e.model=? AND e.hash=m.content_hash"
)
_DST_SRC_RELATION = operator.itemgetter(1, 0, 2)  # an edge row's (dst, src, relation)
_LAYERS = {layer.value: layer for layer in Layer}
_KINDS = {kind.value: kind for kind in Kind}
# JSON text of metadata and state, and of history details and kv values (which may hold
# numpy scalars): reads back as json.dumps(..., sort_keys=True[, default=float]) would.
_encode = json_text.encode
_encode_detail = json_text.encode_lenient
_json_decode = json_text.decode


def _loads(text: Any) -> Any:
    return {} if text == "{}" else _json_decode(text)


def _decode(row: Sequence[Any]) -> list[Any]:
    """MemoryItem field values (in field order) of a row of the ``_SELECT`` columns."""
    vals = list(row)
    del vals[_DUE_AT]
    layer, kind = vals[5], vals[6]
    vals[5] = _LAYERS.get(layer) or Layer(layer)
    vals[6] = _KINDS.get(kind) or Kind(kind)
    vals[9] = _loads(vals[9])
    vals[22] = bool(vals[22])
    vals[24] = _loads(vals[24])
    return vals


def _item_from_row(row: Sequence[Any]) -> MemoryItem:
    return MemoryItem(*_decode(row))


# -- the decoded-item cache ----------------------------------------------------------------
# Callers change the items they are given (attributes and, in place, metadata and state),
# so the cache keeps templates and hands out a new MemoryItem with copied dicts each time.
# A copy plan records where a decoded JSON value nests containers, so copying it is a few
# dict.copy() calls instead of a generic deep copy. None: a shallow copy is a deep one.
_SCALAR = False  # plan of a JSON scalar: used as it is
# Whether none of some values is a container (a C-level pass instead of a loop).
_no_nesting = frozenset((dict, list)).isdisjoint


def _plan(value: Any) -> Any:
    t = type(value)
    if t is dict:
        if _no_nesting(map(type, value.values())):
            return None
        it = value.items()
    elif t is list:
        if _no_nesting(map(type, value)):
            return None
        it = enumerate(value)
    else:
        return _SCALAR
    sub = []
    for k, v in it:
        t = type(v)
        # Most nested containers hold scalars only: planned here, not in a call.
        if t is dict:
            sub.append((k, None if _no_nesting(map(type, v.values())) else _plan(v)))
        elif t is list:
            sub.append((k, None if _no_nesting(map(type, v)) else _plan(v)))
    return sub


def _copy(value: Any, plan: Any) -> Any:
    if plan is _SCALAR:
        return value
    out = value.copy()
    if plan:
        for k, p in plan:
            # Most nested containers hold scalars only (plan None): copied here, not in a call.
            out[k] = out[k].copy() if p is None else _copy(out[k], p)
    return out


class _Cached:
    """One memory as the cache holds it: field values whose metadata and state are
    templates never handed out, or a state still to be decoded (``state_text``)."""

    __slots__ = ("meta_plan", "state_plan", "state_text", "vals")

    def __init__(self, vals: list[Any]) -> None:
        self.vals = vals
        self.meta_plan = _plan(vals[9])
        self.state_plan = _plan(vals[24])
        self.state_text: str | None = None

    def item(self, shared: bool = False) -> MemoryItem:
        """A new MemoryItem; ``shared``: its metadata and state are the templates themselves
        (for a caller that never changes them in place, see ``SQLiteStore.get_shared``)."""
        if self.state_text is not None:
            state = _loads(self.state_text)
            self.vals[24] = state
            self.state_plan = _plan(state)
            self.state_text = None
        v = self.vals.copy()
        if not shared:
            v[9] = _copy(v[9], self.meta_plan)
            v[24] = _copy(v[24], self.state_plan)
        return MemoryItem(*v)


# How a value written to a column reads back, for the columns update_columns may write:
# a patched cache entry must equal what decoding the row would give. Anything not
# certain to read back unchanged (NaN, -0.0, a float into an INTEGER column, a string
# into a REAL one, ...) raises _Unsure and the entry is dropped instead.
class _Unsure(Exception):
    pass


def _as_real(v: Any, nullable: bool = False) -> Any:
    t = type(v)
    if t is float:
        # SQLite stores NaN as NULL, and -0.0 (an integral value) reads back as 0.0.
        if v != v or (v == 0.0 and math.copysign(1.0, v) < 0):  # noqa: PLR0124 - v != v: the NaN test
            raise _Unsure
        return v
    if t is int and -(2**53) <= v <= 2**53:
        return float(v)
    if v is None and nullable:
        return None
    raise _Unsure


def _as_int(v: Any) -> Any:
    if type(v) is int:
        return v
    raise _Unsure


def _as_text(v: Any, nullable: bool = False) -> Any:
    if type(v) is str or (v is None and nullable):
        return v
    raise _Unsure


def _as_layer(v: Any) -> Layer:
    if type(v) is str and v in _LAYERS:
        return _LAYERS[v]
    raise _Unsure


def _as_kind(v: Any) -> Kind:
    if type(v) is str and v in _KINDS:
        return _KINDS[v]
    raise _Unsure


_READ_BACK: dict[str, Any] = {
    **{c: _as_real for c in ("created_at", "updated_at", "last_access", "importance", "valence", "arousal",
                             "stability", "strength", "conf_alpha", "conf_beta")},
    "event_time": lambda v: _as_real(v, nullable=True),
    "access_count": _as_int,
    "version": _as_int,
    "archived": lambda v: bool(_as_int(v)),  # update_columns has made it 0 or 1
    "context": _as_text,
    "session_id": lambda v: _as_text(v, nullable=True),
    "layer": _as_layer,
    "kind": _as_kind,
}


def _reads_back(values: list[Any], read_back: Any) -> bool:
    """Whether every value of a column reads back as itself through ``read_back`` (one
    of the ``_as_*`` checks): a column of plain floats is checked by two C-level passes."""
    if read_back is _as_real and set(map(type, values)) <= {float}:
        total = sum(values)
        # A finite sum: no NaN, no infinity; no zero: no -0.0. Otherwise value by value.
        if total - total == 0.0 and 0.0 not in values:
            return True
    elif ((read_back is _as_text and set(map(type, values)) <= {str})
          or (read_back is _as_int and set(map(type, values)) <= {int})):
        return True
    try:
        return all(read_back(v) is v for v in values)
    except _Unsure:
        return False


# The checks of an edge row's columns after (user_id, agent_id).
_EDGE_READ_BACK = (_as_text, _as_text, _as_text, _as_real, _as_real, _as_int, _as_real)


def _item_values(item: MemoryItem) -> tuple[Any, ...]:
    due = item.state.get("due_at")
    return (
        item.id, item.user_id, item.agent_id, item.session_id, item.context, item.layer.value,
        item.kind.value, item.content, item.content_hash, _encode(item.metadata),
        item.created_at, item.updated_at, item.event_time, item.last_access, item.access_count,
        item.importance, item.valence, item.arousal, item.stability, item.strength, item.conf_alpha,
        item.conf_beta, int(item.archived), item.version, due, _encode(item.state),
    )


_EDGE_WRITE = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE)\b[^;]*?\bedges\b(?!_)", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _writes_edges(sql: str) -> bool:
    """Whether a statement may write rows of the edges table (false positives only cost speed)."""
    return _EDGE_WRITE.match(sql) is not None


_KV_WRITE = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE)\b[^;]*?\bkv\b", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _writes_kv(sql: str) -> bool:
    """Whether a statement may write rows of the kv table (false positives only cost speed)."""
    return _KV_WRITE.match(sql) is not None


_MEMORY_WRITE = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE)\b[^;]*?\bmemories\b(?!_)", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _writes_memories(sql: str) -> bool:
    """Whether a statement may write rows of the memories table (false positives only cost speed)."""
    return _MEMORY_WRITE.match(sql) is not None


@functools.lru_cache(maxsize=256)
def _filter_sql(flt: Filter, alias: str, use_indexes: bool) -> tuple[str, tuple[Any, ...]]:
    """A filter's WHERE clause after the partition's two placeholders, and its arguments
    after the partition's (the same for every partition, so built once per filter)."""
    p = f"{alias}." if alias else ""
    if not use_indexes:
        p = "+" + p
    clauses = [f"{p}user_id=?", f"{p}agent_id=?"]
    args: list[Any] = []
    if not flt.include_archived:
        clauses.append(f"{p}archived=0")
    if flt.layers is not None:
        clauses.append(f"{p}layer IN ({','.join('?' * len(flt.layers))})")
        args.extend(sorted(layer.value for layer in flt.layers))
    if flt.contexts is not None:
        clauses.append(f"{p}context IN ({','.join('?' * len(flt.contexts))})")
        args.extend(sorted(flt.contexts))
    if flt.kinds is not None:
        clauses.append(f"{p}kind IN ({','.join('?' * len(flt.kinds))})")
        args.extend(sorted(flt.kinds))
    eph = f"{p}layer IN ('working','short_term')"
    if flt.all_sessions:
        pass
    elif flt.session_id is None:
        clauses.append(f"NOT {eph}")
    else:
        clauses.append(f"(NOT {eph} OR {p}session_id=?)")
        args.append(flt.session_id)
    if flt.event_after is not None:
        clauses.append(f"COALESCE({p}event_time, {p}created_at) >= ?")
        args.append(flt.event_after)
    if flt.event_before is not None:
        clauses.append(f"COALESCE({p}event_time, {p}created_at) <= ?")
        args.append(flt.event_before)
    if flt.ids is not None:
        clauses.append(f"{p}id IN ({','.join('?' * len(flt.ids))})")
        args.extend(sorted(flt.ids))
    return " AND ".join(clauses), tuple(args)


_NUMPY_SCALARS = (np.floating, np.integer, np.bool_)


def _column_values(values: Sequence[Any], n: int, *, archived: bool = False) -> list[Any]:
    """The first ``n`` values of a column to write, numpy scalars as Python ones
    (``archived`` as 0 or 1)."""
    if len(values) < n:
        raise IndexError("a column has fewer values than there are ids")
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biuf":
        out = values[:n].tolist()  # the same Python values as .item() of each
    else:
        out = [v.item() if isinstance(v, _NUMPY_SCALARS) else v for v in itertools.islice(values, n)]
    if archived:
        out = [int(bool(v)) for v in out]
    return out


def _updatable(columns: Mapping[str, Any]) -> list[str]:
    """The names of ``columns`` in order, once they are known to be updatable in bulk."""
    bad = set(columns) - _UPDATABLE
    if bad:
        raise StorageError(f"columns not updatable in bulk: {sorted(bad)}")
    return list(columns)


def _patch_columns(taken: dict[str, _Cached | None], names: list[str], cols: list[list[Any]],
                   rows: list[tuple[Any, ...]]) -> None:
    """Cached entries of rows just updated: column ``k`` of ``names`` now reads as
    ``row[k]``, in the order written (the id is ``row[-3]``). A REAL column whose every
    value reads back as itself is copied without a check per row; an entry with a value
    not certain to read back unchanged is dropped (set to None)."""
    fields = [(k, _FIELD[c], _READ_BACK[c]) for k, c in enumerate(names) if c != "due_at"]
    plain = [(k, f) for k, f, read_back in fields if read_back is _as_real and _reads_back(cols[k], _as_real)]
    checked = [(k, f, read_back) for k, f, read_back in fields if (k, f) not in plain]
    for row in rows:
        e = taken.get(row[-3])
        if e is None:
            continue
        vals = e.vals
        try:
            for k, f, read_back in checked:
                vals[f] = read_back(row[k])
        except _Unsure:
            taken[row[-3]] = None
            continue
        for k, f in plain:
            vals[f] = row[k]


class SQLiteTransaction:
    """Every write goes through ``_write``. A statement that writes memory rows either
    keeps the store's item cache exact itself (``cached=True``: it drops the rows it
    touches before running and puts back what it knows they now read as) or, by default,
    empties the cache."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self._db = store._db
        self.touched: set[tuple[str, str, str]] = set()
        self.inserted = 0  # memory rows put

    def _write(self, sql: str, args: Any = (), *, many: bool = False, cached: bool = False,
               edges_cached: bool = False, kv_cached: bool = False) -> sqlite3.Cursor:
        store = self._store
        if not cached and _writes_memories(sql):
            store._clear_items()
        if not edges_cached and _writes_edges(sql):
            store._edge_adj.clear()
        if not kv_cached and _writes_kv(sql):
            store._kv.clear()
        store._own_writes_only()
        cur = self._db.executemany(sql, args) if many else self._db.execute(sql, args)
        store._settle()
        return cur

    def _changed(self, partition: Partition, memory_id: str) -> None:
        self.touched.add((partition[0], partition[1], memory_id))

    def put_memory(self, item: MemoryItem) -> None:
        placeholders = ",".join("?" * len(_COLUMNS))
        self._store._items.pop(item.id, None)
        self._write(f"INSERT INTO memories ({_SELECT}) VALUES ({placeholders})", _item_values(item), cached=True)
        self._write(
            "INSERT INTO memories_fts (content, memory_id, user_id, agent_id) VALUES (?,?,?,?)",
            (self._store.lexical_text(item), item.id, item.user_id, item.agent_id),
        )
        self._changed((item.user_id, item.agent_id), item.id)
        self.inserted += 1

    def put_memories(self, items: Sequence[MemoryItem]) -> None:
        """``put_memory`` of each item, in order, as two statements. Should one fail, the
        rows before it are written as ``put_memory`` would have left them."""
        items = list(items)
        if not items:
            return
        cache = self._store._items
        for item in items:
            cache.pop(item.id, None)
        done = 0  # items whose memory row is in

        def rows() -> Iterator[tuple[Any, ...]]:
            nonlocal done
            for item in items:
                yield _item_values(item)
                done += 1  # asked for the next row: the previous one is written

        placeholders = ",".join("?" * len(_COLUMNS))
        try:
            self._write(f"INSERT INTO memories ({_SELECT}) VALUES ({placeholders})", rows(), many=True, cached=True)
            done = len(items)
        finally:
            written = items[:done]
            if written:
                lexical = self._store.lexical_text
                self._write(
                    "INSERT INTO memories_fts (content, memory_id, user_id, agent_id) VALUES (?,?,?,?)",
                    [(lexical(item), item.id, item.user_id, item.agent_id) for item in written],
                    many=True,
                )
                for item in written:
                    self._changed((item.user_id, item.agent_id), item.id)
                self.inserted += len(written)

    def update_memory(self, item: MemoryItem) -> None:
        old = self._db.execute(
            "SELECT content, metadata, content_hash FROM memories WHERE id=? AND user_id=? AND agent_id=?",
            (item.id, item.user_id, item.agent_id),
        ).fetchone()
        if old is None:
            raise StorageError(f"memory {item.id} vanished during update")
        sets = ",".join(f"{c}=?" for c in _COLUMNS[3:])
        self._store._items.pop(item.id, None)
        self._write(
            f"UPDATE memories SET {sets} WHERE id=? AND user_id=? AND agent_id=?",
            (*_item_values(item)[3:], item.id, item.user_id, item.agent_id),
            cached=True,
        )
        if old["content_hash"] != item.content_hash:
            self._drop_orphan_embedding(old["content_hash"])
        new_lex = self._store.lexical_text(item)
        self._write("DELETE FROM memories_fts WHERE memory_id=? AND user_id=?", (item.id, item.user_id))
        self._write(
            "INSERT INTO memories_fts (content, memory_id, user_id, agent_id) VALUES (?,?,?,?)",
            (new_lex, item.id, item.user_id, item.agent_id),
        )
        self._changed((item.user_id, item.agent_id), item.id)

    def update_columns(self, partition: Partition, ids: Sequence[str], **columns: Sequence[Any]) -> None:
        if not ids:
            return
        names = _updatable(columns)
        sets = ",".join(f"{c}=?" for c in names)
        n = len(ids)
        user, agent = partition
        cols = [_column_values(columns[c], n, archived=c == "archived") for c in names]
        rows = list(zip(*cols, ids, itertools.repeat(user, n), itertools.repeat(agent, n)))
        taken = self._store._take(partition, ids)
        self._write(f"UPDATE memories SET {sets} WHERE id=? AND user_id=? AND agent_id=?", rows, many=True, cached=True)
        if taken:
            _patch_columns(taken, names, cols, rows)
            self._store._put_back(taken)
        # Only columns the vector index holds need to reach other processes' indexes.
        if _INDEXED.intersection(names):
            for mid in ids:
                self._changed(partition, mid)

    def update_state(self, partition: Partition, memory_id: str, state: dict[str, Any]) -> None:
        self.update_states(partition, {memory_id: state})

    def update_states(self, partition: Partition, states: Mapping[str, dict[str, Any]], **columns: Sequence[Any]) -> None:
        """``update_state`` of each memory of ``states`` (id -> state), as one statement.
        ``columns`` (name -> values in the order of ``states``): the same statement first
        writes what ``update_columns(partition, list(states), **columns)`` would."""
        if not states:
            return
        names = _updatable(columns)
        ids = list(states)
        n = len(ids)
        user, agent = partition
        cols = [_column_values(columns[c], n, archived=c == "archived") for c in names]
        texts = [_encode(state) for state in states.values()]
        rows = list(zip(*cols, texts, [state.get("due_at") for state in states.values()], ids,
                        itertools.repeat(user, n), itertools.repeat(agent, n)))
        # A due_at among the columns is overwritten by the state's (the last assignment wins).
        sets = "".join(f"{c}=?," for c in names)
        taken = self._store._take(partition, ids)
        self._write(
            f"UPDATE memories SET {sets}state=?, due_at=? WHERE id=? AND user_id=? AND agent_id=?", rows, many=True,
            cached=True,
        )
        if taken:
            if names:
                _patch_columns(taken, names, cols, rows)
            for mid, text in zip(ids, texts):
                e = taken.get(mid)
                if e is not None:
                    # Decoded when next read (the same decoding a fresh read would run).
                    e.vals[24] = None
                    e.state_plan = None
                    e.state_text = text
            self._store._put_back(taken)
        if _INDEXED.intersection(names):
            for mid in ids:
                self._changed(partition, mid)

    def delete_memory(self, partition: Partition, memory_id: str) -> None:
        user, agent = partition
        row = self._db.execute(
            "SELECT content_hash FROM memories WHERE id=? AND user_id=? AND agent_id=?", (memory_id, user, agent)
        ).fetchone()
        self._store._items.pop(memory_id, None)
        self._write("DELETE FROM memories WHERE id=? AND user_id=? AND agent_id=?", (memory_id, user, agent), cached=True)
        self._write("DELETE FROM memories_fts WHERE memory_id=? AND user_id=? AND agent_id=?", (memory_id, user, agent))
        self._write(
            "DELETE FROM edges WHERE user_id=? AND agent_id=? AND (src=? OR dst=?)", (user, agent, memory_id, memory_id)
        )
        self._write("DELETE FROM history WHERE user_id=? AND agent_id=? AND memory_id=?", (user, agent, memory_id))
        # Events of other memories that name this one (a debate it took part in) may quote it.
        self._write(
            "DELETE FROM history WHERE user_id=? AND agent_id=? AND instr(detail, ?) > 0", (user, agent, memory_id)
        )
        if row is not None:
            self._drop_orphan_embedding(row["content_hash"])
        self._changed(partition, memory_id)
        self._store._erased = True

    def _drop_orphan_embedding(self, content_hash: str) -> None:
        """A vector no memory refers to any more is erased with its text's last memory."""
        if self._db.execute("SELECT 1 FROM memories WHERE content_hash=? LIMIT 1", (content_hash,)).fetchone() is None:
            self._write("DELETE FROM embeddings WHERE hash=?", (content_hash,))
            self._store._erased = True

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        self._write(
            "INSERT OR IGNORE INTO embeddings (model, hash, vector) VALUES (?,?,?)",
            [(model, h, vectors[i].tobytes()) for i, h in enumerate(hashes)],
            many=True,
        )

    def put_edges(self, partition: Partition, edges: Sequence[Edge]) -> None:
        # Column by column: the cache's rows are zipped from the same lists, and each
        # column is checked at once (see _read_back_column).
        cols = (
            [e.src for e in edges], [e.dst for e in edges], [e.relation for e in edges],
            [float(e.weight) for e in edges], [float(e.variance) for e in edges],
            [int(e.activations) for e in edges], [float(e.updated_at) for e in edges],
        )
        n = len(cols[0])
        rows = list(zip(itertools.repeat(partition[0], n), itertools.repeat(partition[1], n), *cols))
        adj = self._store._take_edges(partition)
        self._write(
            "INSERT INTO edges (user_id, agent_id, src, dst, relation, weight, variance, activations, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(user_id, agent_id, src, dst, relation) DO UPDATE SET "
            "weight=excluded.weight, variance=excluded.variance, activations=excluded.activations, "
            "updated_at=excluded.updated_at",
            rows,
            many=True,
            edges_cached=True,
        )
        if adj is None:
            return
        # The cached rows now read as the written values (an insert or a replacement of one key).
        if not all(map(_reads_back, cols, _EDGE_READ_BACK)):
            return  # not certain how it reads back: read the partition again when next needed
        for row in zip(*cols):
            out = adj.get(row[0])
            if out is None:
                out = adj[row[0]] = {}
            out[(row[1], row[2])] = row
        self._store._put_back_edges(partition, adj)

    def delete_edges(self, partition: Partition, keys: Sequence[tuple[str, str, str]]) -> None:
        args = [(*partition, s, d, r) for s, d, r in keys]
        adj = self._store._take_edges(partition)
        self._write(
            "DELETE FROM edges WHERE user_id=? AND agent_id=? AND src=? AND dst=? AND relation=?",
            args,
            many=True,
            edges_cached=True,
        )
        if adj is None:
            return
        for _, _, s, d, r in args:
            out = adj.get(s)
            if out is not None:
                out.pop((d, r), None)
        self._store._put_back_edges(partition, adj)

    def log(self, partition: Partition, event: HistoryEvent) -> None:
        self._write(
            "INSERT INTO history (user_id, agent_id, memory_id, at, action, detail) VALUES (?,?,?,?,?,?)",
            (*partition, event.memory_id, event.at, event.action, _encode_detail(event.detail)),
        )

    def log_many(self, partition: Partition, events: Sequence[HistoryEvent]) -> None:
        """``log`` of each event, in order, as one statement."""
        if not events:
            return
        self._write(
            "INSERT INTO history (user_id, agent_id, memory_id, at, action, detail) VALUES (?,?,?,?,?,?)",
            [(*partition, e.memory_id, e.at, e.action, _encode_detail(e.detail)) for e in events],
            many=True,
        )

    def kv_clear(self, partition: Partition) -> None:
        self._store._take_kv(partition)
        self._write("DELETE FROM kv WHERE user_id=? AND agent_id=?", partition, kv_cached=True)
        self._store._erased = True

    def increment_access(self, partition: Partition, ids: Sequence[str], now: float) -> None:
        """access_count + 1 in SQL, so concurrent recalls from other processes are not lost."""
        taken = self._store._take(partition, ids)
        self._write(
            "UPDATE memories SET access_count = access_count + 1, last_access = MAX(last_access, ?) "
            "WHERE id=? AND user_id=? AND agent_id=?",
            [(now, mid, *partition) for mid in ids],
            many=True,
            cached=True,
        )
        if taken:
            try:
                t = _as_real(now)
            except _Unsure:
                return
            for mid in ids:
                e = taken.get(mid)
                if e is None:
                    continue
                count, last = e.vals[14], e.vals[13]
                if type(count) is int and count < 2**63 - 1 and type(last) is float:
                    e.vals[14] = count + 1
                    e.vals[13] = t if t >= last else last
                else:
                    taken[mid] = None
            self._store._put_back(taken)

    def touch_recalled(self, partition: Partition, ids: Sequence[str], now: float, stability: Sequence[Any],
                       states: Sequence[dict[str, Any]]) -> None:
        """What a recall writes of the memories it returned, as one statement: the same as
        ``increment_access(ids, now)``, then ``update_columns(ids, stability=stability)``,
        then ``update_state`` of each id with its state, in order."""
        n = len(ids)
        if not n:
            return
        if len(states) < n:
            raise IndexError("fewer states than there are ids")
        user, agent = partition
        stab = _column_values(stability, n)
        rows = [(now, s, _encode(st), st.get("due_at"), mid, user, agent)
                for mid, s, st in zip(ids, stab, itertools.islice(states, n))]
        taken = self._store._take(partition, ids)
        self._write(
            "UPDATE memories SET access_count = access_count + 1, last_access = MAX(last_access, ?), stability=?, "
            "state=?, due_at=? WHERE id=? AND user_id=? AND agent_id=?",
            rows,
            many=True,
            cached=True,
        )
        if not taken:
            return
        try:
            t = _as_real(now)
        except _Unsure:
            return  # as increment_access: the entries are dropped
        for _, s, text, _, mid, _, _ in rows:
            e = taken.get(mid)
            if e is None:
                continue
            count, last = e.vals[14], e.vals[13]
            try:
                if not (type(count) is int and count < 2**63 - 1 and type(last) is float):
                    raise _Unsure
                stab_read = _as_real(s)
            except _Unsure:
                taken[mid] = None
                continue
            e.vals[14] = count + 1
            e.vals[13] = t if t >= last else last
            e.vals[_FIELD["stability"]] = stab_read
            # Decoded when next read (the same decoding a fresh read would run).
            e.vals[24] = None
            e.state_plan = None
            e.state_text = text
        self._store._put_back(taken)

    def kv_put(self, partition: Partition, key: str, value: Any) -> None:
        self._kv_write(partition, [(*partition, key, _encode_detail(value))])

    def kv_put_many(self, partition: Partition, values: Mapping[str, Any]) -> None:
        """``kv_put`` of each key of ``values`` (key -> value), as one statement."""
        if values:
            self._kv_write(partition, [(*partition, key, _encode_detail(value)) for key, value in values.items()])

    def _kv_write(self, partition: Partition, rows: list[tuple[str, str, Any, str]]) -> None:
        """Upsert (user, agent, key, text) rows, keeping the partition's cached texts exact."""
        cached = self._store._take_kv(partition)
        sql = ("INSERT INTO kv (user_id, agent_id, key, value) VALUES (?,?,?,?) "
               "ON CONFLICT(user_id, agent_id, key) DO UPDATE SET value=excluded.value")
        if len(rows) == 1:
            self._write(sql, rows[0], kv_cached=True)
        else:
            self._write(sql, rows, many=True, kv_cached=True)
        # Each key now reads as the text written for it (keys of other types than str are
        # bound as SQLite sees fit: the partition is read again when next needed).
        if cached is not None and all(type(row[2]) is str for row in rows):
            limit = self._store.KV_CACHE_MAX_CHARS
            for _, _, key, text in rows:
                if len(text) <= limit:
                    cached[key] = text
                else:
                    cached.pop(key, None)
            self._store._put_back_kv(partition, cached)


class SQLiteStore:
    """One SQLite file. Safe to open from several processes at once.

    Decoded memories are cached by id (least recently used first out, at most
    ``item_cache_size`` of them; 0 turns the cache off). The cache is exact: every write of
    this store drops or rewrites the entries of the rows it touches, a rolled-back
    transaction empties it, and so does any other change to the file - a commit through
    another connection or process (``PRAGMA data_version``) or a write through
    ``raw_connection()`` (the connection's change counter moved without this store
    knowing why). Every read hands out new objects, so callers may change them freely.
    """

    # About 4 KB per decoded memory with its state: 20,000 entries stay under ~80 MB and
    # hold every candidate of recent recalls and a whole small partition for sleep.
    DEFAULT_ITEM_CACHE_SIZE = 20_000
    # Edges kept in memory for edges_among: partitions of at most this many edges, the
    # most recently used few of them.
    EDGE_CACHE_MAX_EDGES = 100_000
    EDGE_CACHE_PARTITIONS = 8
    # kv values kept as their stored text: the most recently used few partitions, values
    # of at most this many characters (longer ones are read from the file each time).
    KV_CACHE_PARTITIONS = 8
    KV_CACHE_MAX_CHARS = 1 << 20

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder_name: str,
        dim: int,
        timeout: float = 30.0,
        item_cache_size: int = DEFAULT_ITEM_CACHE_SIZE,
    ) -> None:
        self.path = str(path)
        self.embedder_name = embedder_name
        self.dim = int(dim)
        self._lock = threading.RLock()
        self._items: OrderedDict[str, _Cached] = OrderedDict()
        # The edges of recently used partitions, src -> (dst, relation) -> row, exact like the
        # item cache (the same writes keep or drop them); partitions too large are not kept.
        self._edge_adj: OrderedDict[Partition, dict[str, dict[tuple[str, str], tuple[Any, ...]]]] = OrderedDict()
        self._edge_big: set[Partition] = set()
        # The kv texts of recently used partitions, key -> stored text (None: not set), exact
        # like the item cache. Values are decoded from them at each read, so never shared.
        self._kv: OrderedDict[Partition, dict[str, str | None]] = OrderedDict()
        self._item_cache_size = max(0, int(item_cache_size))
        self._seen_version: int | None = None  # PRAGMA data_version the cache agrees with
        # A private in-memory database has no other connection: nothing else can change it.
        self._shared = self.path != ":memory:"
        self._seen_changes = -1  # the connection's total_changes after this store's last write
        self._indexes: dict[Partition, PartitionIndex] = {}
        self._seen_seq = 0
        # In-memory only: whether the change log may have rows the indexes have not seen
        # (this store logged a transaction's changes, or the connection wrote unaccounted).
        self._log_moved = True
        self._erased = False
        self._tx: SQLiteTransaction | None = None
        self._stats_rows = -1  # memory rows at the last ANALYZE; read when first needed
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        try:
            self._db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            mode = enable_wal(self._db, timeout)
            if self.path != ":memory:" and mode.lower() != "wal":
                raise StorageError(f"{self.path}: could not enable WAL (journal_mode={mode})")
            # FULL: a committed memory survives a power cut too, not only a process crash.
            self._db.execute("PRAGMA synchronous=FULL")
            # Overwrite deleted content with zeros so erasure also leaves the file.
            self._db.execute("PRAGMA secure_delete=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StorageError(f"{self.path} is not a usable zenbrain store: {exc}") from exc
        self._check_meta()
        # Triggers could change memory rows behind the statements that keep the cache exact.
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE type='trigger' LIMIT 1").fetchone() is not None:
            self._item_cache_size = 0
        # Indexes are built and synced through a second connection, which only ever sees
        # committed rows, so they cannot pick up a write that is later rolled back.
        if self.path == ":memory:":
            self._reader = self._db
        else:
            self._reader = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            self._reader.row_factory = sqlite3.Row
            self._reader.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")

    # -- lifecycle ---------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)"
                )
                done = {r[0] for r in self._db.execute("SELECT name FROM schema_migrations")}
                known = {name for name, _ in MIGRATIONS}
                unknown = done - known
                if unknown:
                    raise StorageError(
                        f"{self.path} was written by a newer zenbrain (migrations {sorted(unknown)}); upgrade zenbrain"
                    )
                for version, (name, sql) in enumerate(MIGRATIONS, start=1):
                    if name in done:
                        continue
                    for stmt in _split_sql(sql):
                        self._db.execute(stmt)
                    self._db.execute("INSERT INTO schema_migrations (version, name) VALUES (?,?)", (version, name))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _check_meta(self) -> None:
        with self._lock:
            rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if not rows:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('embedder', ?), ('dim', ?)",
                    (self.embedder_name, str(self.dim)),
                )
                self._db.execute("COMMIT")
                rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if rows.get("embedder") != self.embedder_name or int(rows.get("dim", -1)) != self.dim:
                raise ConfigError(
                    f"{self.path} holds vectors of embedder {rows.get('embedder')!r} (dim {rows.get('dim')}); "
                    f"it cannot be opened with {self.embedder_name!r} (dim {self.dim}). Open it with the same "
                    "embedder, or create a new store."
                )

    def close(self) -> None:
        with self._lock:
            if self._shared and self._tx is None:
                try:
                    # Keeps the planner's statistics current (cheap when nothing changed much).
                    self._db.execute(f"PRAGMA analysis_limit={ANALYZE_LIMIT}")
                    self._db.execute("PRAGMA optimize")
                except sqlite3.Error:
                    pass
            for conn in {id(self._db): self._db, id(self._reader): self._reader}.values():
                try:
                    conn.close()
                except sqlite3.Error:
                    pass

    # -- writes ------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[SQLiteTransaction]:
        """One atomic write. A transaction opened inside another (same thread) joins it:
        everything commits together at the outermost exit, or nothing does.

        ``durable=False`` skips the fsync at commit (WAL, synchronous=NORMAL): the write is
        still atomic and survives a process crash, but a power cut may undo it. Recall uses
        it for access bookkeeping; memories themselves are always written durably."""
        with self._lock:
            if self._tx is not None:
                yield self._tx
                return
            # An in-memory database is never synced: its synchronous setting changes nothing.
            durable = durable or not self._shared
            if not durable:
                self._db.execute("PRAGMA synchronous=NORMAL")
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if not durable:
                    self._db.execute("PRAGMA synchronous=FULL")
                raise StorageError(f"cannot start a write on {self.path}: {exc}") from exc
            tx = SQLiteTransaction(self)
            self._tx = tx
            try:
                yield tx
                if tx.touched:
                    self._log_moved = True
                    tx._write(
                        "INSERT INTO changes (user_id, agent_id, memory_id) VALUES (?,?,?)", sorted(tx.touched), many=True
                    )
                self._db.execute("COMMIT")
            except BaseException:
                try:
                    self._db.execute("ROLLBACK")
                finally:
                    # Cached items may hold values of the rows the transaction wrote.
                    self._clear_items()
                    self._erased = False
                    self._tx = None
                    if not durable:
                        self._db.execute("PRAGMA synchronous=FULL")
                raise
            self._tx = None
            if not durable:
                self._db.execute("PRAGMA synchronous=FULL")
            if self._erased:
                self._erased = False
                self._scrub()
            if tx.inserted:
                self._keep_statistics()

    def _analyzed_rows(self) -> int:
        """Memory rows when the planner's statistics were last gathered (0: never)."""
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE name='sqlite_stat1'").fetchone() is None:
            return 0
        row = self._db.execute("SELECT stat FROM sqlite_stat1 WHERE tbl='memories' LIMIT 1").fetchone()
        try:
            return int(str(row[0]).split()[0]) if row is not None else 0
        except (ValueError, IndexError):
            return 0

    def _keep_statistics(self) -> None:
        """ANALYZE (sampled) whenever the memories table has doubled since it last ran, so the
        planner never works from statistics of a much smaller table, or from none at all."""
        rows = self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchone()[0]
        if rows < ANALYZE_MIN_ROWS or rows < ANALYZE_GROWTH * self._stats_rows:
            return
        self._stats_rows = self._analyzed_rows()
        if rows < ANALYZE_GROWTH * self._stats_rows:
            return  # another connection has analyzed meanwhile
        self._own_writes_only()
        try:
            self._db.execute(f"PRAGMA analysis_limit={ANALYZE_LIMIT}")
            self._db.execute("ANALYZE")
        except sqlite3.Error:
            return  # statistics only guide the planner: the write itself has committed
        finally:
            self._settle()  # statistics rows only: no cached memory changed
        self._stats_rows = rows

    def _scrub(self) -> None:
        """After an erasure: rewrite the FTS index without the deleted rows and truncate the WAL."""
        self._own_writes_only()
        self._db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
        self._settle()
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- the item cache ----------------------------------------------------------------------
    def _clear_items(self) -> None:
        self._items.clear()
        self._edge_adj.clear()
        self._kv.clear()

    def _settle(self) -> None:
        """After a write of this store: its effect on cached items has been accounted for."""
        self._seen_changes = self._db.total_changes

    def _own_writes_only(self) -> None:
        """Empty the cache if this connection wrote anything this store did not account for."""
        if self._db.total_changes != self._seen_changes:
            self._log_moved = True
            self._items.clear()
            self._edge_adj.clear()
            self._kv.clear()
            self._seen_changes = self._db.total_changes

    def _fresh(self) -> None:
        """Before a read that uses the cache: empty it if the file changed in any way the
        cache does not already reflect (another connection's commit, an unaccounted write)."""
        if self._shared:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._seen_version:
                self._items.clear()
                self._edge_adj.clear()
                self._kv.clear()
                self._seen_version = version
        self._own_writes_only()

    def _take(self, partition: Partition, ids: Iterable[str]) -> dict[str, _Cached | None]:
        """Remove and return the cached entries of ``ids`` in ``partition`` (before a write to them)."""
        self._own_writes_only()
        items = self._items
        if not items:
            return {}
        user, agent = partition
        taken: dict[str, _Cached | None] = {}
        for mid in ids:
            e = items.get(mid)
            if e is not None and e.vals[1] == user and e.vals[2] == agent:
                taken[mid] = items.pop(mid)
        return taken

    def _put_back(self, entries: dict[str, _Cached | None]) -> None:
        # Appended in order, then the oldest beyond the size dropped: what remembering them
        # one by one leaves (a queue trimmed at the front once or at every step).
        items = self._items
        for mid, e in entries.items():
            if e is not None:
                items[mid] = e
        for _ in range(len(items) - self._item_cache_size):
            items.popitem(last=False)

    def _remember(self, mid: str, e: _Cached) -> None:
        items = self._items
        items[mid] = e
        if len(items) > self._item_cache_size:
            items.popitem(last=False)

    def _take_edges(self, partition: Partition) -> dict[str, dict[tuple[str, str], tuple[Any, ...]]] | None:
        """Remove and return the cached edges of a partition (before a write to them)."""
        self._own_writes_only()
        return self._edge_adj.pop(partition, None)

    def _put_back_edges(self, partition: Partition, adj: dict[str, dict[tuple[str, str], tuple[Any, ...]]]) -> None:
        self._edge_adj[partition] = adj
        if len(self._edge_adj) > self.EDGE_CACHE_PARTITIONS:
            self._edge_adj.popitem(last=False)

    def _take_kv(self, partition: Partition) -> dict[str, str | None] | None:
        """Remove and return the cached kv entries of a partition (before a write to them)."""
        self._own_writes_only()
        return self._kv.pop(partition, None)

    def _put_back_kv(self, partition: Partition, entries: dict[str, str | None]) -> None:
        kv = self._kv
        kv[partition] = entries
        if len(kv) > self.KV_CACHE_PARTITIONS:
            kv.popitem(last=False)

    def _edge_adjacency(self, partition: Partition) -> dict[str, dict[tuple[str, str], tuple[Any, ...]]] | None:
        """The partition's edges by src from the cache or the file; None when not cached
        (the cache is off, or the partition has too many edges)."""
        if not self._item_cache_size or partition in self._edge_big:
            return None
        self._fresh()
        adj = self._edge_adj.get(partition)
        if adj is not None:
            self._edge_adj.move_to_end(partition)
            return adj
        limit = self.EDGE_CACHE_MAX_EDGES
        rows = self._tuples().execute(
            f"SELECT {_EDGE} FROM edges WHERE user_id=? AND agent_id=? LIMIT ?", (*partition, limit + 1)
        ).fetchall()
        if len(rows) > limit:
            self._edge_big.add(partition)
            return None
        adj = {}
        for r in rows:
            adj.setdefault(r[0], {})[(r[1], r[2])] = r
        self._put_back_edges(partition, adj)
        return adj

    def _tuples(self) -> sqlite3.Cursor:
        cur = self._db.cursor()
        cur.row_factory = None
        return cur

    def _begin_read(self) -> bool:
        """One snapshot for a read made of several statements (the cache check included)."""
        if not self._shared or self._db.in_transaction:
            return False
        self._db.execute("BEGIN")
        return True

    def _end_read(self, own: bool) -> None:
        if own and self._db.in_transaction:
            self._db.execute("COMMIT")

    def _fetch(self, partition: Partition, ids: Sequence[str]) -> dict[str, _Cached]:
        """Read and cache the rows of ``ids`` in ``partition`` (missing ones are left out)."""
        out: dict[str, _Cached] = {}
        cur = self._tuples()
        for chunk in iter_chunks(list(dict.fromkeys(ids)), 500):
            q = ",".join("?" * len(chunk))
            # "+column" stops the planner from scanning the partition index instead of the primary key.
            for row in cur.execute(
                f"SELECT {_SELECT} FROM memories WHERE +user_id=? AND +agent_id=? AND id IN ({q})", (*partition, *chunk)
            ):
                e = _Cached(_decode(row))
                out[row[0]] = e
                self._remember(row[0], e)
        return out

    def _items_in_order(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        """The memories of ``ids`` (a query's result, in its order) from the cache or the file."""
        items = self._items
        user, agent = partition
        found: list[_Cached | None] = []
        missing = []
        for mid in ids:
            e = items.get(mid)
            if e is not None and e.vals[1] == user and e.vals[2] == agent:
                items.move_to_end(mid)
            else:
                e = None
                missing.append(mid)
            found.append(e)
        if missing:
            fetched = self._fetch(partition, missing)
            found = [e if e is not None else fetched.get(mid) for mid, e in zip(ids, found)]
        return [e.item() for e in found if e is not None]

    def _select_items(self, partition: Partition, tail: str, args: Sequence[Any]) -> list[MemoryItem]:
        """The memories ``SELECT ... {tail}`` (FROM memories WHERE ... ORDER BY ...) selects, in order."""
        if not self._item_cache_size:
            return [_item_from_row(r) for r in self._tuples().execute(f"SELECT {_SELECT} {tail}", args)]
        own = self._begin_read()
        try:
            self._fresh()
            ids = [r[0] for r in self._tuples().execute(f"SELECT id {tail}", args)]
            return self._items_in_order(partition, ids)
        finally:
            self._end_read(own)

    def lexical_text(self, item: MemoryItem) -> str:
        extra = item.metadata.get("lexical_extra")
        return item.content if not extra else f"{item.content}\n{extra}"

    # -- reads -------------------------------------------------------------------------------
    def get(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        return self._get(partition, ids, shared=False)

    def get_shared(self, partition: Partition, ids: Sequence[str]) -> list[MemoryItem]:
        """``get`` for a caller that only reads the items' metadata and state: those dicts
        may be the item cache's own, so they must never be changed in place (replacing them
        is fine). ``detach`` gives such items dicts of their own before they go further."""
        return self._get(partition, ids, shared=True)

    def detach(self, items: Iterable[MemoryItem]) -> None:
        """Give items from ``get_shared`` metadata and state dicts of their own (deep copies)."""
        with self._lock:
            cache = self._items
            for item in items:
                e = cache.get(item.id)
                meta, state = item.metadata, item.state
                # A template's plan describes it exactly (templates never change); any other
                # value is planned here.
                same = e is not None and e.vals[1] == item.user_id and e.vals[2] == item.agent_id
                item.metadata = _copy(meta, e.meta_plan if same and e.vals[9] is meta else _plan(meta))
                item.state = _copy(state, e.state_plan if same and e.vals[24] is state else _plan(state))

    def _get(self, partition: Partition, ids: Sequence[str], *, shared: bool) -> list[MemoryItem]:
        ids = list(ids)
        if not ids:
            return []
        out: dict[str, MemoryItem] = {}
        with self._lock:
            if not self._item_cache_size:
                cur = self._tuples()
                for chunk in iter_chunks(ids, 500):
                    q = ",".join("?" * len(chunk))
                    for row in cur.execute(
                        f"SELECT {_SELECT} FROM memories WHERE +user_id=? AND +agent_id=? AND id IN ({q})",
                        (*partition, *chunk),
                    ):
                        out[row[0]] = _item_from_row(row)
                return [out[i] for i in ids if i in out]
            own = self._begin_read()
            try:
                self._fresh()
                items = self._items
                user, agent = partition
                missing = []
                for mid in ids:
                    if mid in out:
                        continue
                    e = items.get(mid)
                    if e is not None and e.vals[1] == user and e.vals[2] == agent:
                        items.move_to_end(mid)
                        out[mid] = e.item(shared)
                    else:
                        missing.append(mid)
                if missing:
                    for mid, e in self._fetch(partition, missing).items():
                        out[mid] = e.item(shared)
            finally:
                self._end_read(own)
        return [out[i] for i in ids if i in out]

    def _where(self, partition: Partition, flt: Filter, alias: str = "", *, use_indexes: bool = True) -> tuple[str, list[Any]]:
        """The filter as SQL. ``use_indexes=False`` writes ``+column``, so the planner looks
        rows up by another condition (an id list) instead of scanning an index of these."""
        try:
            sql, args = _filter_sql(flt, alias, use_indexes)
        except TypeError:  # a filter holding unhashable values (a set for a frozenset)
            sql, args = _filter_sql.__wrapped__(flt, alias, use_indexes)
        return sql, [*partition, *args]

    def query(
        self,
        partition: Partition,
        flt: Filter = Filter(),
        *,
        order_by: str = "created_at",
        descending: bool = False,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        if order_by not in {"created_at", "event_time", "last_access", "due_at", "strength", "updated_at"}:
            raise StorageError(f"cannot order by {order_by}")
        where, args = self._where(partition, flt)
        order = "COALESCE(event_time, created_at)" if order_by == "event_time" else order_by
        tail = f"FROM memories WHERE {where} ORDER BY {order} {'DESC' if descending else 'ASC'}, id"
        if limit is not None:
            tail += " LIMIT ?"
            args.append(int(limit))
        with self._lock:
            return self._select_items(partition, tail, args)

    def due(self, partition: Partition, now: float, limit: int, flt: Filter = Filter()) -> list[MemoryItem]:
        where, args = self._where(partition, flt)
        tail = f"FROM memories WHERE {where} AND due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?"
        with self._lock:
            return self._select_items(partition, tail, (*args, now, limit))

    def lexical_search(self, partition: Partition, text: str, k: int, flt: Filter = Filter()) -> list[tuple[str, float]]:
        q = fts_query(text)
        if q is None or k <= 0:
            return []
        where, args = self._where(partition, flt, alias="m")
        joined = (
            "SELECT f.memory_id AS id, -bm25(memories_fts) AS score FROM memories_fts f "
            "JOIN memories m ON m.id = f.memory_id "
            f"WHERE memories_fts MATCH ? AND f.user_id=? AND f.agent_id=? AND {where} "
            "ORDER BY bm25(memories_fts) LIMIT ?"
        )
        # First FTS5 alone ranks its best matches (about half the cost of ranking through
        # the join), then the memories table keeps those the filter allows. Every memory
        # the filter allows outside that head ranks below all of it, so when k survive
        # they are exactly the joined query's top k; otherwise the joined query runs.
        head = max(LEXICAL_HEAD_FACTOR * int(k), LEXICAL_HEAD_MIN)
        ranked_sql = (
            "SELECT memory_id, -rank FROM memories_fts "
            "WHERE memories_fts MATCH ? AND user_id=? AND agent_id=? ORDER BY rank LIMIT ?"
        )
        with self._lock:
            own = self._begin_read()
            try:
                cur = self._tuples()
                # No document of any partition holds a word of the query: nothing to rank
                # (a plain lookup of the words' index entries; ranking sets up a sorter).
                if cur.execute("SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT 1", (q,)).fetchone() is None:
                    return []
                ranked = cur.execute(ranked_sql, (q, *partition, head)).fetchall()
                complete = len(ranked) < head  # every match is in the head: no fallback needed
                by_id, by_id_args = self._where(partition, flt, alias="m", use_indexes=False)
                allowed: set[str] = set()
                for chunk in iter_chunks([r[0] for r in ranked], 500):
                    marks = ",".join("?" * len(chunk))
                    allowed.update(r[0] for r in self._tuples().execute(
                        f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND {by_id}", (*chunk, *by_id_args)))
                kept = [(mid, float(score)) for mid, score in ranked if mid in allowed]
                if complete or len(kept) >= k:
                    return kept[: int(k)]
                rows = self._tuples().execute(joined, (q, *partition, *args, int(k))).fetchall()
            except sqlite3.OperationalError as exc:
                raise StorageError(f"lexical search failed: {exc}") from exc
            finally:
                self._end_read(own)
        return [(mid, float(score)) for mid, score in rows]

    # -- vectors -----------------------------------------------------------------------------
    def _index(self, partition: Partition) -> PartitionIndex:
        with self._lock:
            self._sync()
            idx = self._indexes.get(partition)
            if idx is None:
                idx = PartitionIndex(self.dim)
                # An in-memory store has one connection: inside a write it reads as it is.
                own_tx = not self._reader.in_transaction
                if own_tx:
                    self._reader.execute("BEGIN")
                try:
                    rows = self._reader.execute(
                        f"SELECT {_INDEX_ROW} WHERE m.user_id=? AND m.agent_id=?",
                        (self.embedder_name, *partition),
                    ).fetchall()
                finally:
                    if own_tx:
                        self._reader.execute("COMMIT")
                for r in rows:
                    idx.upsert(self._row(r))
                # Changes committed after the sync above are already in these rows; the
                # next sync re-applies them, which is harmless (upserts are idempotent).
                self._indexes[partition] = idx
            return idx

    def _row(self, r: sqlite3.Row) -> Row:
        return Row(
            id=r["id"],
            vector=np.frombuffer(r["vector"], dtype=np.float32),
            layer=Layer(r["layer"]),
            context=r["context"],
            session_id=r["session_id"],
            archived=bool(r["archived"]),
            kind=r["kind"],
            event_time=r["t"],
        )

    def _sync(self) -> None:
        """Bring loaded indexes up to the database's committed state (this or any process)."""
        if not self._shared:
            # A private in-memory database changes only through this connection: unless this
            # store logged changes or the connection wrote what the store did not account
            # for, the change log has not moved since the last look.
            if not self._log_moved and self._db.total_changes == self._seen_changes:
                return
            self._log_moved = False
        latest = self._reader.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0]
        if latest <= self._seen_seq:
            return
        changed = self._reader.execute(
            "SELECT DISTINCT user_id, agent_id, memory_id FROM changes WHERE seq > ? AND seq <= ?",
            (self._seen_seq, latest),
        ).fetchall()
        by_part: dict[Partition, list[str]] = {}
        for r in changed:
            part = (r["user_id"], r["agent_id"])
            if part in self._indexes:
                by_part.setdefault(part, []).append(r["memory_id"])
        for part, ids in by_part.items():
            idx = self._indexes[part]
            found = set()
            for chunk in iter_chunks(ids, 500):
                q = ",".join("?" * len(chunk))
                for r in self._reader.execute(
                    f"SELECT {_INDEX_ROW} WHERE +m.user_id=? AND +m.agent_id=? AND m.id IN ({q})",
                    (self.embedder_name, *part, *chunk),
                ):
                    idx.upsert(self._row(r))
                    found.add(r["id"])
            for mid in ids:
                if mid not in found:
                    idx.remove(mid)
        self._seen_seq = latest

    def _index_and_mask(self, partition: Partition, flt: Filter) -> tuple[PartitionIndex, np.ndarray]:
        """The partition's vector index and the rows of it that ``flt`` lets through."""
        idx = self._index(partition)
        mask = idx.cached_mask(
            flt,
            layers=flt.layers,
            contexts=flt.contexts,
            session_id=flt.session_id,
            all_sessions=flt.all_sessions,
            include_archived=flt.include_archived,
            kinds=flt.kinds,
            event_after=flt.event_after,
            event_before=flt.event_before,
            ids=flt.ids,
        )
        return idx, mask

    def vector_search(
        self, partition: Partition, query: np.ndarray, k: int, flt: Filter = Filter(), *, per_layer: bool = False
    ) -> list[tuple[str, float]]:
        idx, mask = self._index_and_mask(partition, flt)
        return idx.search(query, k, mask, per_layer=per_layer)

    def vector_search_many(
        self, partition: Partition, queries: np.ndarray, k: int, flt: Filter = Filter()
    ) -> list[list[tuple[str, float]]]:
        """``vector_search`` for each row of ``queries`` (one matrix product for all of them);
        the same results as searching one query at a time."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2:
            raise ValidationError("queries must be a 2-D array, one query per row")
        if len(queries) == 0:
            return []
        idx, mask = self._index_and_mask(partition, flt)
        return idx.search_many(queries, k, mask)

    def vectors(self, partition: Partition, ids: Sequence[str]) -> np.ndarray:
        idx = self._index(partition)
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for i, mid in enumerate(ids):
            v = idx.vector(mid)
            if v is not None:
                out[i] = v
        return out

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for chunk in iter_chunks(list(dict.fromkeys(hashes)), 500):
                q = ",".join("?" * len(chunk))
                for r in self._db.execute(
                    f"SELECT hash, vector FROM embeddings WHERE model=? AND hash IN ({q})", (model, *chunk)
                ):
                    out[r["hash"]] = np.frombuffer(r["vector"], dtype=np.float32)
        return out

    # -- graph, history, kv ------------------------------------------------------------------
    def edges(self, partition: Partition, ids: Iterable[str] | None = None) -> list[Edge]:
        with self._lock:
            cur = self._tuples()
            if ids is None:
                adj = self._edge_adjacency(partition)
                if adj is not None:
                    # The primary key's order, as the query below reads them (str order is
                    # the code point order, which is SQLite's byte order of UTF-8 text).
                    return [Edge(*out[key]) for src in sorted(adj) for out in (adj[src],) for key in sorted(out)]
                rows = cur.execute(
                    f"SELECT {_EDGE} FROM edges WHERE user_id=? AND agent_id=? ORDER BY src, dst, relation", partition
                ).fetchall()
                return [Edge(*r) for r in rows]  # one row per key
            idl = list(dict.fromkeys(ids))
            out: list[Edge] = []
            before: set[str] = set()  # the ids of the chunks already read
            for chunk in iter_chunks(idl, 400):
                q = ",".join("?" * len(chunk))
                # Two indexed lookups; an OR across both columns would scan the table.
                from_chunk = cur.execute(
                    f"SELECT {_EDGE} FROM edges WHERE user_id=? AND agent_id=? AND src IN ({q})", (*partition, *chunk)
                ).fetchall()
                into_chunk = cur.execute(
                    f"SELECT {_EDGE} FROM edges WHERE user_id=? AND agent_id=? AND dst IN ({q})", (*partition, *chunk)
                ).fetchall()
                # Each edge once, where it is first met: an edge from this chunk was already
                # met if it goes into an earlier chunk; one into this chunk if it comes from
                # an earlier chunk or this one.
                out.extend(Edge(*r) for r in from_chunk if r[1] not in before)
                before.update(chunk)
                out.extend(Edge(*r) for r in into_chunk if r[0] not in before)
        return out

    def edges_among(self, partition: Partition, ids: Iterable[str]) -> list[Edge]:
        """Edges whose two ends are both in ``ids``."""
        idl = list(dict.fromkeys(ids))
        if not idl or len(idl) > 900:
            wanted = set(idl)
            return [e for e in self.edges(partition, idl) if e.src in wanted and e.dst in wanted]
        q = ",".join("?" * len(idl))
        with self._lock:
            adj = self._edge_adjacency(partition)
            if adj is not None:
                wanted = set(idl)
                rows = [r for src in idl for r in adj.get(src, {}).values() if r[1] in wanted]
                rows.sort(key=_DST_SRC_RELATION)
                return [Edge(*r) for r in rows]
            # One primary-key range per src, its dst tested against the list ("+": not one
            # index lookup per pair of ids), then in (dst, src, relation) order.
            rows = self._tuples().execute(
                f"SELECT {_EDGE} FROM edges WHERE user_id=? AND agent_id=? AND src IN ({q}) AND +dst IN ({q})",
                (*partition, *idl, *idl),
            ).fetchall()
        rows.sort(key=_DST_SRC_RELATION)
        return [Edge(*r) for r in rows]

    def history(self, partition: Partition, memory_id: str) -> list[HistoryEvent]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM history WHERE user_id=? AND agent_id=? AND memory_id=? ORDER BY seq",
                (*partition, memory_id),
            ).fetchall()
        return [HistoryEvent(r["memory_id"], r["at"], r["action"], _json_decode(r["detail"])) for r in rows]

    def kv_get(self, partition: Partition, key: str, default: Any = None) -> Any:
        if self._item_cache_size and type(key) is str:
            text = self._kv_texts(partition, (key,))[key]
            return default if text is None else _json_decode(text)
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM kv WHERE user_id=? AND agent_id=? AND key=?", (*partition, key)
            ).fetchone()
        return default if row is None else _json_decode(row[0])

    def kv_get_many(self, partition: Partition, keys: Iterable[str]) -> dict[str, Any]:
        """``kv_get`` of several keys in one read: key -> value of the keys that are set."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        if not keys:
            return out
        if self._item_cache_size and all(type(key) is str for key in keys):
            texts = self._kv_texts(partition, keys)
            # In the order the statements below read them: by key within each chunk.
            for chunk in iter_chunks(keys, 500):
                for key in sorted(chunk):
                    text = texts[key]
                    if text is not None:
                        out[key] = _json_decode(text)
            return out
        with self._lock:
            rows = self._kv_rows(partition, keys)
        for key, value in rows:
            out[key] = _json_decode(value)
        return out

    def _kv_rows(self, partition: Partition, keys: list[str]) -> list[Any]:
        """(key, text) of the keys that are set."""
        rows: list[Any] = []
        own = self._begin_read() if len(keys) > 500 else False  # one snapshot for several statements
        try:
            for chunk in iter_chunks(keys, 500):
                q = ",".join("?" * len(chunk))
                rows += self._db.execute(
                    f"SELECT key, value FROM kv WHERE user_id=? AND agent_id=? AND key IN ({q})", (*partition, *chunk)
                ).fetchall()
        finally:
            self._end_read(own)
        return rows

    def _kv_texts(self, partition: Partition, keys: Sequence[str]) -> dict[str, str | None]:
        """The stored text of each key (None: not set), from the cache or the file."""
        with self._lock:
            self._fresh()
            cached = self._kv.get(partition)
            if cached is None:
                cached = {}
                self._put_back_kv(partition, cached)
            else:
                self._kv.move_to_end(partition)
            missing = [k for k in keys if k not in cached]
            if not missing:
                return {k: cached[k] for k in keys}
            found = dict(self._kv_rows(partition, missing))
            limit = self.KV_CACHE_MAX_CHARS
            for key in missing:
                text = found.get(key)
                if text is None or len(text) <= limit:
                    cached[key] = text
            return {k: cached[k] if k in cached else found[k] for k in keys}

    def all_ids(self, partition: Partition) -> list[str]:
        """Every memory id of the partition, whatever its layer, session, context or state."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT id FROM memories WHERE user_id=? AND agent_id=?", partition)]

    def sample_ids(
        self, partition: Partition, k: int, rng: np.random.Generator, exclude: AbstractSet[str] = frozenset()
    ) -> list[str]:
        """Up to ``k`` distinct ids of the partition outside ``exclude``, drawn uniformly with
        ``rng``; all of them (and ``rng`` untouched) when there are no more than ``k``.

        A large partition is sampled by random rowids, a few primary-key lookups instead of
        reading every id."""
        k = int(k)
        if k <= 0:
            return []
        limit = k + len(exclude) + 1
        with self._lock:
            head = [r[0] for r in self._db.execute(
                "SELECT id FROM memories WHERE user_id=? AND agent_id=? LIMIT ?", (*partition, limit))]
            if len(head) == limit:
                picked = self._sample_by_rowid(partition, k, rng, exclude)
                if picked is not None:
                    return picked
                head = self.all_ids(partition)
        return _choose(head, k, rng, exclude)

    def _sample_by_rowid(
        self, partition: Partition, k: int, rng: np.random.Generator, exclude: AbstractSet[str]
    ) -> list[str] | None:
        """``k`` ids drawn by uniform random rowids (each row of the partition is equally
        likely at every draw); None when too few draws land in the partition."""
        top = self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchone()[0]
        found: dict[int, str] = {}
        cur = self._tuples()
        for _ in range(SAMPLE_ROUNDS):
            need = k - len(found)
            draws = np.unique(rng.integers(1, top + 1, size=2 * need + 16)).tolist()
            for chunk in iter_chunks([r for r in draws if r not in found], 500):
                q = ",".join("?" * len(chunk))
                for rowid, mid in cur.execute(
                    f"SELECT rowid, id FROM memories WHERE rowid IN ({q}) AND +user_id=? AND +agent_id=?",
                    (*chunk, *partition),
                ):
                    if mid not in exclude:
                        found[rowid] = mid
            if len(found) >= k:
                # Which rows are kept must not depend on how the draws happened to be ordered.
                keep = sorted(found)
                pick = sorted(rng.choice(len(keep), size=k, replace=False).tolist())
                return [found[keep[i]] for i in pick]
        return None

    def partitions(self) -> list[Partition]:
        with self._lock:
            return [tuple(r) for r in self._db.execute("SELECT DISTINCT user_id, agent_id FROM memories ORDER BY 1, 2")]

    def stats(self, partition: Partition | None = None, flt: Filter | None = None) -> StoreStats:
        """Counts for the whole file, a partition, or what a filter lets a reader see."""
        if partition is not None and flt is not None:
            where, args = self._where(partition, Filter(**{**flt.__dict__, "include_archived": True}))
        else:
            where, args = ("user_id=? AND agent_id=?", list(partition)) if partition else ("1=1", [])
        s = StoreStats()
        with self._lock:
            for r in self._db.execute(
                f"SELECT layer, archived, COUNT(*) AS n FROM memories WHERE {where} GROUP BY layer, archived", args
            ):
                s.memories += r["n"]
                if r["archived"]:
                    s.archived += r["n"]
                s.by_layer[r["layer"]] = s.by_layer.get(r["layer"], 0) + r["n"]
            for r in self._db.execute(f"SELECT context, COUNT(*) AS n FROM memories WHERE {where} GROUP BY context", args):
                s.by_context[r["context"]] = r["n"]
            if partition is None:
                s.edges = self._db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
            else:
                s.edges = self._db.execute(
                    f"SELECT COUNT(*) FROM edges WHERE user_id=? AND agent_id=? "
                    f"AND src IN (SELECT id FROM memories WHERE {where})",
                    [*partition, *args],
                ).fetchone()[0]
            s.cached_embeddings = self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        if self.path != ":memory:":
            s.file_bytes = sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))
        return s

    def raw_connection(self) -> sqlite3.Connection:
        """For tests and maintenance tools only."""
        return self._db


def _choose(ids: list[str], k: int, rng: np.random.Generator, exclude: AbstractSet[str]) -> list[str]:
    """``k`` of ``ids`` outside ``exclude`` at random, in their order (all when no more than ``k``)."""
    ids = [i for i in ids if i not in exclude]
    if len(ids) > k:
        pick = rng.choice(len(ids), size=k, replace=False)
        ids = [ids[i] for i in sorted(pick)]
    return ids


def _split_sql(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip() and not all(line.strip().startswith("--") for line in s.strip().splitlines())]
