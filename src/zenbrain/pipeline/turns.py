"""Conversation turns: who spoke, the turn's place in its session, and what it is found by.

A memory stored in a session (``Scope.session_id``) is a turn of that conversation. It gets
the next *position* of its session, and its *index text* is its own words (without a
leading "Name:") joined with those of the ``index_window`` turns before it in the session
(``retrieval.turn_context``): a short reply is then found by the words of the question it
answers. Lexical search indexes the index text; the memory's vector is the unit mean of the
embeddings of its own words and of its index text. The content stays verbatim.

A change to a turn (a revision, an erasure) changes what its successors were indexed by:
``successor_updates`` recomputes them, so no index keeps the words of an erased turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine import Engine
from ..model import MemoryItem
from ..retrieval.dates import resolve
from ..retrieval.fusion import FusionRecipe, get_recipe
from ..retrieval.turn_context import index_text, mean_vectors, split_speaker
from ..state import KV_SPEAKERS, MENTIONED, META_SPEAKER
from ..storage.base import Filter, Partition
from ..text import content_hash


def recipe(engine: Engine) -> FusionRecipe:
    return get_recipe(engine.config.recall.recipe)


def own_words(item: MemoryItem, keep_speaker: bool = False) -> str:
    """What a memory says itself: its content without the leading "Name:" of its speaker
    (unless the recipe indexes speakers in the text)."""
    if keep_speaker:
        return item.content
    speaker, text = split_speaker(item.content)
    return text if speaker is not None and (item.speaker is None or speaker == item.speaker) else item.content


def index_window(engine: Engine) -> int:
    return recipe(engine).index_window


MAX_MENTIONS = 8  # time expressions kept per memory


def speaker_of(given: str | None, metadata: Mapping[str, Any], content: str) -> str | None:
    """Who said a memory: the speaker its record gives, else its metadata's, else a leading
    "Name: " of its content (None: nobody, it is not a turn of a conversation)."""
    if given is not None:
        return given
    named = metadata.get(META_SPEAKER)
    return named if isinstance(named, str) and named.strip() else split_speaker(content)[0]


def assign(engine: Engine, part: Partition, items: Sequence[MemoryItem]) -> None:
    """Set the times every new memory's text speaks of (resolved against when it
    happened), and for one stored in a session its position and index text (predecessors
    read from the store and from earlier items of the batch)."""
    window = index_window(engine)
    keep = recipe(engine).speaker_in_text
    for item in items:
        when = item.event_time if item.event_time is not None else item.created_at
        windows = [m.window for m in resolve(own_words(item), when)]
        mentioned = [[w.start, w.end] for w in windows if w.start is not None and w.end is not None][:MAX_MENTIONS]
        if mentioned:
            item.state[MENTIONED] = mentioned
    previous: dict[str, list[str]] = {}  # session -> own words of its latest turns, oldest first
    next_position: dict[str, int] = {}
    for item in items:
        s = item.session_id
        if s is None:
            own = own_words(item, keep)
            item.index_text = own if own != item.content else None
            continue
        if s not in next_position:
            last = engine.store.query(part, Filter(sessions=frozenset({s}), all_sessions=True, include_archived=True,
                                                   contexts=frozenset({item.context})),
                                      order_by="position", descending=True, limit=max(1, window))
            last = [m for m in last if m.position is not None]
            next_position[s] = (last[0].position + 1) if last else 0  # type: ignore[operator]
            previous[s] = [own_words(m, keep) for m in reversed(last)]
        item.position = next_position[s]
        next_position[s] += 1
        before = previous[s][-window:] if window else []
        own = own_words(item, keep)
        text = index_text(own, before)
        item.index_text = text if text != item.content else None
        previous[s].append(own)


def _texts(item: MemoryItem, r: FusionRecipe) -> tuple[str, str | None]:
    """What a memory's vector embeds: its own words, and the index text to combine them
    with (None: the own words alone)."""
    own = own_words(item, r.speaker_in_text)
    ctx = item.index_text if item.index_text is not None and item.index_text != own else None
    if ctx is not None and r.dense_view == "context":
        return ctx, None
    if r.dense_view == "own":
        return own, None
    return own, ctx


MAX_SPEAKERS = 1000  # names kept per partition for questions that name a person


def speakers(engine: Engine, part: Partition) -> list[str]:
    """Everyone who spoke in the partition's memories."""
    return list(engine.store.kv_get(part, KV_SPEAKERS) or [])


def speakers_record(engine: Engine, part: Partition, items: Sequence[MemoryItem]) -> dict[str, list[str]]:
    """The partition's speakers record with the new items' speakers added (empty when
    there is nothing new to write)."""
    names = {i.speaker for i in items if i.speaker}
    if not names:
        return {}
    known = speakers(engine, part)
    new = sorted(names.difference(known))
    return {KV_SPEAKERS: (known + new)[-MAX_SPEAKERS:]} if new else {}


def reindex(engine: Engine, part: Partition, item: MemoryItem) -> None:
    """Recompute a memory's index text (after its content changed) from the turns before it
    that its session holds now."""
    window = index_window(engine)
    keep = recipe(engine).speaker_in_text
    own = own_words(item, keep)
    before: list[str] = []
    if item.session_id is not None and item.position is not None and window:
        turns = frozenset((item.session_id, item.position - d) for d in range(1, window + 1))
        before = [own_words(m, keep) for m in engine.store.query(
            part, Filter(turns=turns, all_sessions=True, include_archived=True, contexts=None), order_by="position")]
    text = index_text(own, before)
    item.index_text = text if text != item.content else None


def vector_key(item: MemoryItem, r: FusionRecipe) -> str:
    """The cache key of a memory's vector: its content's hash when it embeds its content
    alone, else the hash of what was embedded."""
    own, ctx = _texts(item, r)
    if ctx is not None:
        return content_hash(f"mean\0{own}\0{ctx}")
    return item.content_hash if own == item.content else content_hash(f"text\0{own}")


@dataclass
class TurnVectors:
    vectors: np.ndarray  # one row per item
    fresh: dict[str, np.ndarray]  # vector key -> vector, to write to the store's cache


def embed(engine: Engine, items: Sequence[MemoryItem]) -> TurnVectors:
    """Every item's vector (setting ``item.vector_key``): from the cache where it is there,
    else embedded, texts shared by several items embedded once."""
    r = recipe(engine)
    keys = [vector_key(i, r) for i in items]
    for item, key in zip(items, keys):
        item.vector_key = None if key == item.content_hash else key
    cached = engine.store.cached_embeddings(engine.embedder.name, list(dict.fromkeys(keys)))
    need: dict[str, tuple[str, str | None]] = {}  # key -> (own words, index text or None)
    for item, key in zip(items, keys):
        if key not in cached and key not in need:
            need[key] = _texts(item, r)
    fresh: dict[str, np.ndarray] = {}
    if need:
        texts = list(dict.fromkeys(t for own, ctx in need.values() for t in (own, ctx) if t is not None))
        emb = dict(zip(texts, engine.embedder.embed(texts)))
        for key, (own, ctx) in need.items():
            fresh[key] = emb[own] if ctx is None else mean_vectors(emb[own], emb[ctx])
    dim = engine.embedder.dim
    out = np.stack([cached[k] if k in cached else fresh[k] for k in keys]) if keys else np.zeros((0, dim))
    return TurnVectors(np.asarray(out, dtype=np.float32), fresh)


def successor_updates(engine: Engine, part: Partition, changed: Iterable[MemoryItem],
                      erased: Iterable[str] = ()) -> list[MemoryItem]:
    """The turns after ``changed`` (and after erased turns) whose index text must be
    recomputed: read, re-indexed against the predecessors that remain, with new vector keys
    set (their vectors still to be computed by ``embed``)."""
    window = index_window(engine)
    if window == 0:
        return []
    keep = recipe(engine).speaker_in_text
    gone = set(erased)
    by_id = {m.id: m for m in changed}
    touched: dict[str, MemoryItem] = {}
    for m in list(by_id.values()):
        if m.session_id is None or m.position is None:
            continue
        near = engine.store.query(part, Filter(turns=frozenset((m.session_id, m.position + d)
                                                                for d in range(-window, window + 1)),
                                               all_sessions=True, include_archived=True, contexts=None),
                                  order_by="position")
        near = [by_id.get(x.id, x) for x in near if x.id not in gone]
        for j, succ in enumerate(near):
            if succ.position is None or succ.position <= m.position or succ.id in by_id:
                continue
            before = [own_words(p, keep) for p in near[:j]
                      if p.position is not None and p.position >= succ.position - window]
            text = index_text(own_words(succ, keep), before)
            new = text if text != succ.content else None
            if new != succ.index_text:
                succ.index_text = new
                touched[succ.id] = succ
    return list(touched.values())
