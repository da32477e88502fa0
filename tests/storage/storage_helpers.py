"""Builders and an independent oracle for the storage contract tests. Child processes
import this module too, so it imports nothing heavier than the storage layer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from zenbrain.model import Kind, Layer, MemoryItem
from zenbrain.storage.base import Filter

MODEL = "contract-model:16"
DIM = 16
T0 = 1_700_000_000.0
EPHEMERAL = (Layer.WORKING, Layer.SHORT_TERM)
P1 = ("alice", "agent")
P2 = ("bob", "agent")


def chash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_item(partition=P1, content: str = "some content", **kw: Any) -> MemoryItem:
    user, agent = partition
    fields: dict[str, Any] = dict(
        id=kw.pop("id", None) or chash(f"{user}/{agent}/{content}/{kw.get('created_at', T0)}")[:32],
        user_id=user,
        agent_id=agent,
        session_id=None,
        context="default",
        layer=Layer.SEMANTIC,
        kind=Kind.FACT,
        content=content,
        content_hash=chash(content),
        metadata={},
        created_at=T0,
        updated_at=T0,
        event_time=None,
        last_access=T0,
    )
    fields.update(kw)
    if "content_hash" not in kw:
        fields["content_hash"] = chash(fields["content"])
    return MemoryItem(**fields)


def unit_rows(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    """Random unit vectors, rounded to float16: the SQLite store keeps vectors at float16
    precision, so values float16 can hold make exact comparisons hold on every backend."""
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float16).astype(np.float32)


def put(store, items: Sequence[MemoryItem], vectors: np.ndarray | None = None) -> None:
    """Write items and (when given) their vectors in one transaction."""
    with store.transaction() as tx:
        if vectors is not None:
            tx.put_embeddings(store.embedder_name, [i.content_hash for i in items], np.asarray(vectors, np.float32))
        for item in items:
            tx.put_memories([item])


def random_world(rng: np.random.Generator, n: int = 240, partitions=(P1, P2)):
    """Items spread over partitions, layers, contexts, sessions, kinds, archived flags and
    times, with random unit vectors. Returns (items, {id: vector})."""
    layers = list(Layer)
    kinds = [k.value for k in Kind]
    items, vecs = [], {}
    v = unit_rows(rng, n)
    for i in range(n):
        part = partitions[i % len(partitions)]
        layer = layers[int(rng.integers(len(layers)))]
        session = [None, "s1", "s2"][int(rng.integers(3))]
        if layer in EPHEMERAL and session is None:
            session = "s1"
        has_event = bool(rng.integers(2))
        item = make_item(
            part,
            f"memory {i} about {['apples', 'boats', 'clouds', 'dunes'][i % 4]} number {i}",
            id=f"m{i:04d}",
            layer=layer,
            kind=Kind(kinds[int(rng.integers(len(kinds)))]),
            context=["work", "home", "default"][int(rng.integers(3))],
            session_id=session,
            archived=bool(rng.random() < 0.2),
            created_at=T0 + i * 10.0,
            updated_at=T0 + i * 10.0,
            last_access=T0 + float(rng.integers(0, 10_000)) + i * 1e-3,
            event_time=(T0 + float(rng.integers(-5000, 5000)) + i * 1e-3) if has_event else None,
            state={"due_at": T0 + float(rng.integers(-3000, 3000)) + i * 1e-3} if rng.random() < 0.5 else {},
            # Turns of their session; every fifth memory was superseded at some time around T0.
            position=i % 7 if session is not None else None,
            valid_until=T0 + (i % 7) * 500.0 - 1000.0 if i % 5 == 0 else None,
            superseded_by=f"m{i + 1:04d}" if i % 5 == 0 else None,
        )
        items.append(item)
        vecs[item.id] = v[i]
    return items, vecs


def matches(item: MemoryItem, flt: Filter) -> bool:
    """The Filter semantics, written out independently of any backend."""
    if not flt.include_archived and item.archived:
        return False
    if flt.layers is not None and item.layer not in flt.layers:
        return False
    if flt.contexts is not None and item.context not in flt.contexts:
        return False
    if flt.kinds is not None and item.kind.value not in flt.kinds:
        return False
    if (not flt.all_sessions and item.layer in EPHEMERAL
            and (flt.session_id is None or item.session_id != flt.session_id)):
        return False
    t = item.event_time if item.event_time is not None else item.created_at
    if flt.event_after is not None and t < flt.event_after:
        return False
    if flt.event_before is not None and t > flt.event_before:
        return False
    due = item.state.get("due_at")
    if flt.due_before is not None and (due is None or due > flt.due_before):
        return False
    if flt.sessions is not None and item.session_id not in flt.sessions:
        return False
    if flt.turns is not None and (item.session_id, item.position) not in flt.turns:
        return False
    if flt.current_at is not None and item.valid_until is not None and item.valid_until <= flt.current_at:
        return False
    if flt.content_hashes is not None and item.content_hash not in flt.content_hashes:
        return False
    return not (flt.ids is not None and item.id not in flt.ids)


def random_filter(rng: np.random.Generator, ids: Sequence[str]) -> Filter:
    def maybe(values, k=2):
        if rng.random() < 0.5:
            return None
        pick = rng.choice(len(values), size=int(rng.integers(0, min(k, len(values)) + 1)), replace=False)
        return frozenset(values[int(j)] for j in pick)

    after = T0 + float(rng.integers(-3000, 1000)) if rng.random() < 0.3 else None
    before = T0 + float(rng.integers(500, 3000)) if rng.random() < 0.3 else None
    return Filter(
        layers=maybe(list(Layer), 4),
        contexts=maybe(["work", "home", "default", "elsewhere"]),
        session_id=[None, "s1", "s2"][int(rng.integers(3))],
        include_archived=bool(rng.integers(2)),
        kinds=maybe([k.value for k in Kind], 4),
        event_after=after,
        event_before=before,
        ids=maybe(list(ids), 60) if rng.random() < 0.2 else None,
        all_sessions=bool(rng.random() < 0.2),
        due_before=T0 + float(rng.integers(-3000, 3000)) if rng.random() < 0.15 else None,
        sessions=maybe(["s1", "s2", "s3"]) if rng.random() < 0.3 else None,
        turns=frozenset((s, int(p)) for s, p in zip(rng.choice(["s1", "s2"], 6), rng.integers(0, 8, 6)))
        if rng.random() < 0.2 else None,
        current_at=T0 + float(rng.integers(-1500, 3000)) if rng.random() < 0.3 else None,
    )


def brute_top(items, vecs, query, k, flt):
    """Exact top-k (id, cosine) by numpy over the items the filter admits."""
    eligible = [i for i in items if matches(i, flt)]
    if not eligible:
        return []
    sims = np.array([float(vecs[i.id] @ query) for i in eligible])
    order = np.argsort(-sims, kind="stable")[:k]
    return [(eligible[j].id, float(sims[j])) for j in order]


def dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
