"""How records are written to and read from the SQLite tables: column lists, rows, JSON."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from ...index import vector_keys
from ...model import Edge, HistoryEvent, Kind, Layer, MemoryItem

COLUMNS = (
    "id", "user_id", "agent_id", "session_id", "context", "layer", "kind", "content", "content_hash",
    "metadata", "created_at", "updated_at", "event_time", "last_access", "access_count", "importance",
    "valence", "arousal", "stability", "strength", "conf_alpha", "conf_beta", "archived", "version",
    "due_at", "state", "speaker", "position", "index_text", "vector_key",
    "valid_until", "superseded_by",
)
SELECT = ",".join(COLUMNS)
# Columns a bulk update may write; content, metadata and state go through whole-row writes
# or update_states, so the lexical index and the due index stay in step.
UPDATABLE = frozenset(COLUMNS) - {"id", "user_id", "agent_id", "content", "content_hash", "metadata", "state",
                                  "index_text", "vector_key"}
# Columns the in-memory vector index holds: a change to one must reach other processes' indexes.
INDEXED = frozenset({"layer", "context", "session_id", "archived", "kind", "event_time", "created_at", "position",
                     "valid_until"})
EDGE_COLUMNS = "src, dst, relation, weight, variance, activations, updated_at"  # Edge's fields in order
# The indexes memories_hash and memories_vector_key hold the first 16 hex digits of each
# key (64 bits pick a row as surely as 256 do, in a quarter of the bytes); a query reaches
# them through these expressions, written exactly so, beside its test of the whole key.
HASH_PREFIX = "substr(content_hash, 1, 16)"
VECTOR_KEY_PREFIX = "substr(vector_key, 1, 16)"
# vector_key is NULL when the vector is the content's own (most memories): the key in SQL,
# and the test "this memory uses the vector of key ?" (arguments: ``uses_vector_args``).
VECTOR_KEY = "COALESCE(vector_key, content_hash)"
USES_VECTOR = (f"(({VECTOR_KEY_PREFIX}=substr(?, 1, 16) AND vector_key=?) "
               f"OR (vector_key IS NULL AND {HASH_PREFIX}=substr(?, 1, 16) AND content_hash=?))")


def uses_vector_args(key: str) -> tuple[str, str, str, str]:
    """The arguments of ``USES_VECTOR`` for ``key``."""
    return key, key, key, key

_HEX32 = re.compile(r"[0-9a-f]{32}")
_DUE_AT = COLUMNS.index("due_at")
_LAYERS = {layer.value: layer for layer in Layer}
_KINDS = {kind.value: kind for kind in Kind}
# MemoryItem's fields are COLUMNS without due_at (which mirrors state["due_at"] for the index).
if tuple(f.name for f in dataclasses.fields(MemoryItem)) != COLUMNS[:_DUE_AT] + COLUMNS[_DUE_AT + 1:]:
    raise RuntimeError("MemoryItem's fields no longer match the memories table")
if (_DUE_AT, COLUMNS[-1]) != (24, "superseded_by"):
    raise RuntimeError("item_from_row reads the columns by position: update it with COLUMNS")
if tuple(f.name for f in dataclasses.fields(Edge)) != tuple(EDGE_COLUMNS.split(", ")):
    raise RuntimeError("Edge's fields no longer match the edges table")


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode(value: Any) -> str:
    """JSON text of a metadata, state, history detail or kv value (compact, keys sorted).

    orjson writes it about five times faster than the standard library (a recall writes the
    state of each hit, the monitor's newest log segment and the neuromodulator record);
    text is UTF-8 and floats in their shortest form (``1e-5`` for ``1e-05``), which decode
    to the same values. What orjson cannot write as the standard library does goes to the
    standard library: non-string keys and integers beyond 64 bits (it refuses them), and
    NaN or infinity (it writes them as null; any null sends the value there)."""
    try:
        text = orjson.dumps(value, default=_json_default, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError included
        return _encode_stdlib(value)
    if b"null" in text and _non_finite(value):
        return _encode_stdlib(value)
    return text.decode()


_LEAVES = (str, int, bool, type(None))


def _non_finite(value: Any) -> bool:
    """Whether a NaN or infinity is inside ``value`` (orjson writes them as null, as it
    does None). A loop over a stack, lists of strings skipped whole: twice as fast as the
    standard library's encoder on a monitor log segment, four times on a memory's state
    (a recall writes one and ten; both hold Nones)."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is float:
            if not math.isfinite(v):
                return True
        elif t is dict:
            push(v.values())
        elif t is list or t is tuple:
            if not (v and type(v[0]) is str and all(type(x) is str for x in v)):
                push(v)
        elif t in _LEAVES:
            continue
        elif isinstance(v, np.ndarray):
            if v.dtype.kind in "fc" and not bool(np.isfinite(v).all()):
                return True
        elif isinstance(v, (float, np.floating)) and not math.isfinite(float(v)):
            return True
    return False


def _encode_stdlib(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_json_default)


def decode(text: str) -> Any:
    """The value of JSON text. orjson parses the same values about five times faster than
    the standard library (a recall decodes the state of each of its ~90 candidates); text it
    refuses (NaN or infinity, which ``encode`` lets through, or integers beyond 64 bits) is
    parsed by the standard library."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def state_row(state: Mapping[str, Any]) -> tuple[Any, str]:
    """A state as the ``due_at`` column and the ``state`` JSON. A numeric ``due_at`` lives in
    its column only (indexed for review queries) and ``state_from_row`` puts it back; any
    other value stays in the JSON as it is."""
    due = state.get("due_at")
    if due is not None and type(due) in (float, int):
        return due, encode({k: v for k, v in state.items() if k != "due_at"})
    return due, encode(state)


def state_from_row(text: str, due: Any) -> Any:
    """The state ``state_row`` wrote (rows written before keep ``due_at`` in the JSON too)."""
    state = decode(text)
    if due is not None and "due_at" not in state:
        state["due_at"] = due
    return state


def item_row(item: MemoryItem) -> tuple[Any, ...]:
    """A memory as a row of COLUMNS."""
    due, state = state_row(item.state)
    return (
        item.id, item.user_id, item.agent_id, item.session_id, item.context, item.layer.value,
        item.kind.value, item.content, item.content_hash, encode(item.metadata),
        item.created_at, item.updated_at, item.event_time, item.last_access, item.access_count,
        item.importance, item.valence, item.arousal, item.stability, item.strength, item.conf_alpha,
        item.conf_beta, int(item.archived), item.version, due, state,
        item.speaker, item.position, item.index_text,
        item.vector_key if item.vector_key and item.vector_key != item.content_hash else None,
        item.valid_until, item.superseded_by,
    )


def item_from_row(row: Sequence[Any]) -> MemoryItem:
    """A memory from a row of COLUMNS."""
    r = row
    # Positions in COLUMNS (checked against MemoryItem's fields above); due_at (24) goes into the state.
    return MemoryItem(
        r[0], r[1], r[2], r[3], r[4], _LAYERS.get(r[5]) or Layer(r[5]), _KINDS.get(r[6]) or Kind(r[6]), r[7],
        r[8], decode(r[9]), r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20], r[21],
        bool(r[22]), r[23], state_from_row(r[25], r[24]), r[26], r[27], r[28],
        None if r[29] == r[8] else r[29],  # its content's vector: the default (stored as NULL since 0010)
        r[30], r[31])


def id_key(memory_id: str) -> bytes | str:
    """How the edges table keeps a memory id: the 16 bytes of a zenbrain id (32 lowercase
    hex digits, ``zenbrain.ids``), any other id as its text. Both ends of an edge and its
    ``dst`` index repeat the ids, so this halves the largest part of an edge's row."""
    if len(memory_id) == 32 and _HEX32.fullmatch(memory_id):
        return bytes.fromhex(memory_id)
    return memory_id


def id_text(key: bytes | str) -> str:
    """The memory id ``id_key`` kept as ``key``."""
    return key.hex() if isinstance(key, bytes) else key


def edge_row(number: int, e: Edge) -> tuple[Any, ...]:
    """An edge of the partition numbered ``number`` as the edges table's row."""
    return (number, id_key(e.src), id_key(e.dst), e.relation, float(e.weight), float(e.variance),
            int(e.activations), float(e.updated_at))


def edge_from_row(r: Sequence[Any], share: Callable[[Edge], Edge] | None = None) -> Edge:
    e = Edge(id_text(r[0]), id_text(r[1]), r[2], r[3], r[4], r[5], r[6])
    return e if share is None else share(e)


def register(conn: sqlite3.Connection) -> None:
    """The SQL functions of the store's statements: ``zb_id(text)`` is ``id_key`` and
    ``zb_id_text(key)`` its inverse (joins of edges with memories), and ``zb_vector_key``
    (``index.vector_keys``, joins of memories with their vectors)."""
    vector_keys.register(conn)
    conn.create_function("zb_id", 1, lambda v: None if v is None else id_key(str(v)), deterministic=True)
    conn.create_function("zb_id_text", 1, lambda v: None if v is None else id_text(v), deterministic=True)


def event_row(number: int, e: HistoryEvent) -> tuple[Any, ...]:
    """A history event of the partition numbered ``number`` as the history table's row."""
    return (number, id_key(e.memory_id), e.at, e.action, encode(e.detail))


def column_values(values: Sequence[Any], n: int, *, archived: bool = False) -> list[Any]:
    """The first ``n`` values of a column to write, numpy scalars as Python ones
    (``archived`` as 0 or 1)."""
    if len(values) < n:
        raise IndexError("a column has fewer values than there are ids")
    out = [v.item() if isinstance(v, np.generic) else v for v in list(values)[:n]]
    if archived:
        out = [int(bool(v)) for v in out]
    return out
