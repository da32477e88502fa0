"""Export and import: a user's memories as JSON Lines, with everything recall reads.

An export is the answer to "give me my data": one header line, then one line per memory
(every column, its metadata and mechanism state, and its vector), per edge, per history
event and per partition record. Importing it into a store with the same embedder gives
back memories that recall ranks exactly as before; importing into a store that holds
other users changes nobody else's memories.

Format (``FORMAT``, ``VERSION``)::

    {"format": "zenbrain-export", "version": 1, "embedder": ..., "dim": ..., "user_id": ...,
     "agent_id": ..., "exported_at": ..., "counts": {...}}
    {"type": "memory", "memory": {MemoryItem fields}, "vector": "<base64 float32>"}
    {"type": "edge", "edge": {Edge fields}}
    {"type": "event", "event": {HistoryEvent fields}}
    {"type": "record", "key": ..., "value": ...}
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import Engine
from ..errors import ValidationError
from ..ids import new_id
from ..model import Edge, HistoryEvent, Kind, Layer, MemoryItem, Scope
from ..storage.base import Filter
from .access import partition_of

FORMAT = "zenbrain-export"
VERSION = 1
_MEMORY_FIELDS = {f.name for f in dataclasses.fields(MemoryItem)}


def _vector_text(v: np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def _vector_of(text: str, dim: int) -> np.ndarray:
    try:
        v = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4")
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"a memory's vector is not base64 float32: {exc}") from None
    if v.shape != (dim,) or not np.all(np.isfinite(v)):
        raise ValidationError(f"a memory's vector must hold {dim} finite numbers")
    return v.astype(np.float32)


def export_records(engine: Engine, scope: Scope) -> Iterator[dict[str, Any]]:
    """Every memory, edge, history event and record of the scope's user and agent (all
    sessions, contexts, layers, archived ones too), as export lines."""
    part = partition_of(scope)
    store = engine.store
    items = store.query(part, Filter(include_archived=True, all_sessions=True, contexts=None))
    edges = store.edges(part)
    records = store.kv_get(part)
    yield {"format": FORMAT, "version": VERSION, "embedder": engine.embedder.name, "dim": engine.embedder.dim,
           "user_id": scope.user_id, "agent_id": scope.agent_id, "exported_at": engine.clock.now(),
           "counts": {"memories": len(items), "edges": len(edges), "records": len(records)}}
    vectors = store.vectors(part, [i.id for i in items]) if items else np.zeros((0, engine.embedder.dim))
    for item, vec in zip(items, vectors):
        memory = dataclasses.asdict(item)
        memory["layer"], memory["kind"] = item.layer.value, item.kind.value
        yield {"type": "memory", "memory": memory, "vector": _vector_text(vec)}
    for e in edges:
        yield {"type": "edge", "edge": dataclasses.asdict(e)}
    for item in items:
        for ev in store.history(part, item.id):
            yield {"type": "event", "event": dataclasses.asdict(ev)}
    for key, value in records.items():
        yield {"type": "record", "key": key, "value": value}


def _renamed(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every string that is an exported memory id replaced by its new id
    (references in metadata, state, history details and records: schemas' evidence, the
    memory a revision revises, debates, the curiosity queue)."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_renamed(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, ids) for k, v in value.items()}
    return value


@dataclass
class ImportReceipt:
    """What an import wrote."""

    memories: int = 0
    edges: int = 0
    events: int = 0
    records: int = 0
    id_map: dict[str, str] = field(default_factory=dict)  # exported id -> stored id (when renamed)


def import_records(engine: Engine, scope: Scope, lines: Iterable[dict[str, Any]], *,
                   new_ids: bool = False) -> ImportReceipt:
    """Write an export into the scope's user and agent, in one transaction: nothing is
    written unless every line is valid. ``new_ids``: give every memory a fresh id (to
    import a copy beside the original, e.g. into another user of the same store); else the
    exported ids are kept, and one already taken refuses the import (in this scope: a
    ValidationError; by another user of the store: the store's error). With new ids, every
    reference to an exported memory (edges, history, metadata, state, records) follows it."""
    part = partition_of(scope)
    it = iter(lines)
    header = next(it, None)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValidationError(f"not a {FORMAT} file: the first line must be its header")
    if header.get("version") != VERSION:
        raise ValidationError(f"export version {header.get('version')!r} is not supported (this zenbrain reads {VERSION})")
    if header.get("embedder") != engine.embedder.name or header.get("dim") != engine.embedder.dim:
        raise ValidationError(f"the export holds vectors of {header.get('embedder')!r} (dim {header.get('dim')}); "
                              f"this store embeds with {engine.embedder.name!r} (dim {engine.embedder.dim})")
    items: list[MemoryItem] = []
    vectors: list[np.ndarray] = []
    edges: list[Edge] = []
    events: list[HistoryEvent] = []
    records: dict[str, Any] = {}
    ids: dict[str, str] = {}
    for n, line in enumerate(it, start=2):
        kind = line.get("type") if isinstance(line, dict) else None
        try:
            if kind == "memory":
                raw = dict(line["memory"])
                unknown = set(raw) - _MEMORY_FIELDS
                if unknown:
                    raise ValidationError(f"unknown memory field(s) {sorted(unknown)}")
                old = str(raw["id"])
                ids[old] = new_id() if new_ids else old
                raw.update(id=ids[old], user_id=scope.user_id, agent_id=scope.agent_id,
                           layer=Layer.parse(raw["layer"]), kind=Kind(raw["kind"]))
                items.append(MemoryItem(**raw))
                vectors.append(_vector_of(line["vector"], engine.embedder.dim))
            elif kind == "edge":
                edges.append(Edge(**line["edge"]))
            elif kind == "event":
                events.append(HistoryEvent(**line["event"]))
            elif kind == "record":
                records[str(line["key"])] = line["value"]
            else:
                raise ValidationError(f"unknown line type {kind!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"line {n}: {type(exc).__name__}: {exc}") from None
        except ValidationError as exc:
            raise ValidationError(f"line {n}: {exc}") from None
    if not new_ids and items:
        taken = engine.store.get(part, [i.id for i in items])
        if taken:
            raise ValidationError(f"memory {taken[0].id!r} is already stored here; import with new ids")
    edges = [dataclasses.replace(e, src=ids.get(e.src, e.src), dst=ids.get(e.dst, e.dst)) for e in edges
             if e.src in ids and e.dst in ids]
    events = [dataclasses.replace(ev, memory_id=ids[ev.memory_id]) for ev in events if ev.memory_id in ids]
    if new_ids and ids:
        items = [dataclasses.replace(i, metadata=_renamed(i.metadata, ids), state=_renamed(i.state, ids),
                                     superseded_by=_renamed(i.superseded_by, ids)) for i in items]
        events = [dataclasses.replace(ev, detail=_renamed(ev.detail, ids)) for ev in events]
        records = {k: _renamed(v, ids) for k, v in records.items()}
    with engine.store.transaction() as tx:
        if items:
            tx.put_embeddings(engine.embedder.name, [i.vector_key or i.content_hash for i in items], np.stack(vectors))
            tx.put_memories(items)
        if edges:
            tx.put_edges(part, edges)
        if events:
            tx.log(part, events)
        if records:
            tx.kv_put(part, records)
    return ImportReceipt(len(items), len(edges), len(events), len(records),
                         {k: v for k, v in ids.items() if k != v})
