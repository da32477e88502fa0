"""Where the MetacognitiveMonitor's event log lives: append-only segments in the kv store.

The log grows by one event per recall. Kept as one value it would be decoded and
re-encoded whole on every recall (up to ``max_events`` entries, about a megabyte at the
default 10,000), so each kind of event is split into segments of ``SEGMENT`` events
under their own keys, used as a ring: an append reads and rewrites only the newest
segment and a small head record; readers that need the whole window (sleep's
HyperAgent step) read the ring in order, newest first, a batch of keys per read.

A segment holds 8 events: a retrieval event carries the ids it returned (about 500
bytes), so the 64-event segments of earlier versions had a recall decode, re-encode and
write back up to 32 kB (a sixth of a recall's time at 10k memories). Logs written in that
layout (keys ``metacognition:<kind>:<i>``, head entries without ``layout``) are read as
the oldest part of the log, and values written under the single key ``metacognition``
by older versions still before them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..pma import metacognition as mc
from ..state import KV_METACOG
from ..storage.base import Partition, Store

SEGMENT = 8
LAYOUT = f"s{SEGMENT}"  # marks the head entries (and names the keys) of this layout
OLD_SEGMENT = 64  # the layout before, read only
READ_BATCH = 64  # segments read per call
KINDS = ("retrievals", "evidence", "surprises", "feedback")
_EVENT: dict[str, Callable[..., MonitorEvent]] = {
    "evidence": mc.EvidenceDecision, "surprises": mc.SurpriseEvent, "feedback": mc.FeedbackEvent}
HEAD_KEY = f"{KV_METACOG}:head"
_BEFORE = "before"  # head entry: where each kind's log in the older layout ended


MonitorEvent = mc.RetrievalOutcome | mc.EvidenceDecision | mc.SurpriseEvent | mc.FeedbackEvent


def _event(kind: str, row: Mapping[str, Any]) -> MonitorEvent:
    if kind == "retrievals":
        return mc.retrieval_from_row(row)
    return _EVENT[kind](**row)


def ring_size(params: mc.MetacognitionParams, segment: int = SEGMENT) -> int:
    """Segments kept per kind: enough for ``max_events`` whatever the fill of the newest."""
    return math.ceil(int(params.max_events) / segment) + 1


def segment_key(kind: str, seg: int, ring: int) -> str:
    """The key of segment ``seg`` of a kind (a ring of ``ring`` keys)."""
    return f"{KV_METACOG}:{kind}:{LAYOUT}:{seg % ring}"


def _old_segment_key(kind: str, seg: int, ring: int) -> str:
    return f"{KV_METACOG}:{kind}:{seg % ring}"


def _positions(head: Mapping[str, Any], kind: str) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """A kind's newest position in this layout and where its log in the older one ended."""
    h = head.get(kind)
    before = (head.get(_BEFORE) or {}).get(kind)
    if h and h.get("layout") != LAYOUT:  # nothing appended in this layout yet
        return None, h
    return h or None, before or None


def _read_ring(storage: Store, part: Partition, keys: list[str], since: float | None,
               segments: list[list[Mapping[str, Any]]]) -> bool:
    """Append the segments under ``keys`` (newest first) to ``segments``; True when one
    began before ``since`` (nothing older is needed)."""
    for i in range(0, len(keys), READ_BATCH):
        batch = keys[i:i + READ_BATCH]
        values = storage.kv_get_many(part, batch)
        for key in batch:
            rows = values.get(key) or []
            segments.append(rows)
            if since is not None and rows and float(rows[0]["at"]) < since:
                return True
    return False


def load(storage: Store, part: Partition, params: mc.MetacognitionParams = mc.DEFAULT_PARAMS,
         kinds: Iterable[str] = KINDS, since: float | None = None) -> mc.MonitorState:
    """The monitor's log (the newest ``max_events`` of each kind, oldest first).

    ``since``: only events at or after this time are needed; older segments are not read
    (the result may still hold some older events of the segments it reads)."""
    kinds = tuple(kinds)
    head = storage.kv_get(part, HEAD_KEY) or {}
    legacy = storage.kv_get(part, KV_METACOG)
    ring, old_ring = ring_size(params), ring_size(params, OLD_SEGMENT)
    wanted = int(params.max_events)
    out: dict[str, tuple[Any, ...]] = {}
    for kind in KINDS:
        if kind not in kinds:
            out[kind] = ()
            continue
        segments: list[list[Mapping[str, Any]]] = []  # newest first
        h, before = _positions(head, kind)
        done = False
        if h:
            last = int(h["seg"])
            done = _read_ring(storage, part, [segment_key(kind, seg, ring)
                                              for seg in range(last, max(0, last - ring + 1) - 1, -1)], since, segments)
            done = done or sum(len(rows) for rows in segments) >= wanted
        if before and not done:
            last = int(before["seg"])
            done = _read_ring(storage, part, [_old_segment_key(kind, seg, old_ring)
                                              for seg in range(last, max(0, last - old_ring + 1) - 1, -1)],
                              since, segments)
        older = legacy.get(kind, ()) if isinstance(legacy, Mapping) and not done else ()
        rows_all = [*older, *(r for rows in reversed(segments) for r in rows)]
        out[kind] = tuple(_event(kind, r) for r in rows_all[-wanted:])
    return mc.MonitorState(out["retrievals"], out["evidence"], out["surprises"], out["feedback"])


def appended(storage: Store, part: Partition, params: mc.MetacognitionParams = mc.DEFAULT_PARAMS, *,
             retrievals: Iterable[mc.RetrievalOutcome] = (), evidence: Iterable[mc.EvidenceDecision] = (),
             surprises: Iterable[mc.SurpriseEvent] = (), feedback: Iterable[mc.FeedbackEvent] = (),
             head: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The kv writes that append these events: ``{key: value}``, for the caller to put in
    its own transaction (so the log changes together with what it describes).

    ``head``: the stored value of ``HEAD_KEY`` when the caller has read it already
    (None: read here)."""
    new: dict[str, list[MonitorEvent]] = {"retrievals": list(retrievals), "evidence": list(evidence),
                                          "surprises": list(surprises), "feedback": list(feedback)}
    if not any(new.values()):
        return {}
    if head is None:
        head = storage.kv_get(part, HEAD_KEY)
    head = dict(head or {})
    ring = ring_size(params)
    writes: dict[str, Any] = {}
    ends: dict[str, tuple[int, int]] = {}
    for kind, events in new.items():
        if not events:
            continue
        h, before = _positions(head, kind)
        if before is not None and h is None:  # the first append in this layout
            head[_BEFORE] = {**(head.get(_BEFORE) or {}), kind: {"seg": int(before["seg"]), "n": int(before["n"])}}
        ends[kind] = (int(h["seg"]), int(h["n"])) if h else (0, 0)
    # The newest segment of each kind is read (all of them in one call) only when events
    # are added to it; a full one stays as it is and the events start the next.
    stored = storage.kv_get_many(part, [segment_key(kind, seg, ring) for kind, (seg, n) in ends.items()
                                        if 0 < n < SEGMENT])
    for kind, (seg, n) in ends.items():
        if n >= SEGMENT:
            seg, n = seg + 1, 0
        current = list(stored.get(segment_key(kind, seg, ring)) or ()) if n else []
        for ev in new[kind]:
            if n >= SEGMENT:
                writes[segment_key(kind, seg, ring)] = current
                seg, n, current = seg + 1, 0, []
            current.append(mc.event_row(ev))
            n += 1
        writes[segment_key(kind, seg, ring)] = current
        head[kind] = {"seg": seg, "n": n, "layout": LAYOUT}
    writes[HEAD_KEY] = head
    return writes
